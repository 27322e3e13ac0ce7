"""One HTTP client per event loop, closed while that loop still runs.

An HTTP client's connection pool belongs to the event loop that opened its connections: a
socket registered with one asyncio loop (or one ``trio.run``) cannot be used or closed from
another. AgentScope's users build a model once, call it from ``asyncio.run(main())`` and never
close it; if the model kept one client for its whole life, its open keep-alive connections
would outlive the loop and be finalised by the garbage collector after the loop is gone —
measured here: ``ResourceWarning: unclosed transport`` on asyncio, ``unclosed <socket.socket>``
and unfinished httpx generators on trio, and a finaliser that reaches for the closed loop
raises ``RuntimeError: Event loop is closed``. Three simpler designs fail:

* *A new client per call* closes everything, but costs ~20-30 ms of CPU per call here (each
  ``httpx.AsyncClient`` or SDK client loads the CA bundle into a fresh SSL context) plus a new
  TCP and TLS handshake with the provider on every call.
* *One client for the model's life* is fast but leaks as above, and breaks when the same model
  is used from a second event loop (``asyncio.run`` twice, or asyncio then trio).
* *Closing in ``__del__``* runs at an arbitrary time, often after the loop has closed, which is
  exactly the failure above.

So :class:`LoopClients` keeps one client per running event loop, made on first use in that loop
and reused by every later call there. With it, it starts a *keeper*: an async generator, iterated
once up to its ``yield``, whose ``finally`` closes the client. Both asyncio and trio track the
async generators first iterated inside them and close the ones still suspended when the loop
ends (``asyncio.run`` through ``loop.shutdown_asyncgens()``, ``trio.run`` in its own
finalisation, where the close is shielded because trio runs it in a cancelled scope), while the
loop can still close sockets. :meth:`LoopClients.aclose` closes the client at once.

A keeper must never be garbage-collected while its loop runs: trio would finalise it but warn
(``ResourceWarning``) that it was not closed. So when a :class:`LoopClients` (that is, its model)
is garbage-collected, its keepers move to a module-level list of orphans, still alive; the next
call of any model in that loop closes them (:func:`close_orphans`, one dictionary test when
there are none), and the end of the loop closes whatever is left. A loop that is closed without
finalising its async generators (``loop.close()`` without ``shutdown_asyncgens()``) leaks its
clients, as any client would.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Generic, TypeVar

import anyio
import anyio.lowlevel

from ._retry import CLOSE_TIMEOUT

__all__ = ["LoopClients", "close_orphans"]

C = TypeVar("C")

_orphans: dict[object, list[tuple[Any, AsyncGenerator[None, None]]]] = {}
"""``(client, keeper)`` pairs whose :class:`LoopClients` was garbage-collected, by loop token."""


class LoopClients(Generic[C]):
    """One client per running event loop: made by *factory*, closed by *close* when the loop
    ends, at :meth:`aclose`, or — once this object is garbage-collected — at the next
    :func:`close_orphans` in that loop.

    :param factory: makes a new client (called once per event loop, inside it).
    :param close: closes a client; it runs shielded and bounded by
        :data:`~._retry.CLOSE_TIMEOUT` seconds.
    """

    __slots__ = ("__weakref__", "_close", "_entries", "_factory")

    def __init__(self, factory: Callable[[], C], close: Callable[[C], Awaitable[Any]]) -> None:
        self._factory = factory
        self._close = close
        # loop token -> (client, keeper)
        self._entries: dict[object, tuple[C, AsyncGenerator[None, None]]] = {}
        weakref.finalize(self, _adopt_orphans, self._entries)

    def get(self) -> C:
        """The running event loop's client, made on first use.

        :raises RuntimeError: outside an event loop.
        """
        token = anyio.lowlevel.current_token()
        entry = self._entries.get(token)
        if entry is not None:
            return entry[0]
        client = self._factory()
        keeper = _close_at_loop_end(weakref.ref(self), token, client, self._close)
        _start(keeper)
        self._entries[token] = (client, keeper)
        return client

    def __len__(self) -> int:
        """How many event loops have an open client."""
        return len(self._entries)

    async def aclose(self) -> None:
        """Close the running event loop's client now (the next :meth:`get` makes a new one).

        Clients of other event loops are closed when those loops end.
        """
        entry = self._entries.pop(anyio.lowlevel.current_token(), None)
        if entry is not None:
            await entry[1].aclose()


async def close_orphans() -> None:
    """Close the clients of garbage-collected :class:`LoopClients` made in the running loop.

    Models call this at the start of each call; with no orphans it costs one dict test.
    """
    if not _orphans:
        return
    orphans = _orphans.pop(anyio.lowlevel.current_token(), None)
    for _client, keeper in orphans or ():
        await keeper.aclose()


def _adopt_orphans(entries: dict[object, tuple[Any, AsyncGenerator[None, None]]]) -> None:
    # Runs when a LoopClients is garbage-collected (in whatever thread the collector runs).
    for token, entry in list(entries.items()):
        native = getattr(token, "native_token", None)
        is_closed = getattr(native, "is_closed", None)
        if callable(is_closed) and is_closed():
            continue  # an asyncio loop closed without finalising it: nothing can close it now
        _orphans.setdefault(token, []).append(entry)
    entries.clear()


def _start(keeper: AsyncGenerator[None, None]) -> None:
    """Run *keeper* up to its ``yield`` without awaiting: the first iteration is what
    registers it with the running loop, and it suspends nowhere before the ``yield``."""
    step = keeper.asend(None)
    try:
        step.send(None)
    except StopIteration:
        return
    raise RuntimeError("a client keeper suspended before its yield")  # pragma: no cover


async def _close_at_loop_end(
    owner: weakref.ref[LoopClients[Any]],
    token: object,
    client: Any,
    close: Callable[[Any], Awaitable[Any]],
) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        clients = owner()
        if clients is not None:
            entry = clients._entries.get(token)
            if entry is not None and entry[0] is client:
                del clients._entries[token]
        else:
            orphans = _orphans.get(token, [])
            orphans[:] = [pair for pair in orphans if pair[0] is not client]
            if not orphans:
                _orphans.pop(token, None)
        # trio finalises leftover async generators inside a cancelled scope: shield the close.
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT):
            await close(client)
