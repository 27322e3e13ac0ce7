"""Closing the ``openai`` / ``anthropic`` SDK streams completely.

An SDK ``AsyncStream`` reads its events through a chain of async generators (its event
iterator, the SSE decoder, the HTTP client's byte iterators). ``async for`` never closes the
generator it iterates, so when the stream stops early — or when the SDK itself stops at
``[DONE]`` — the inner generators stay suspended until the garbage collector finalises them,
which trio reports as a ResourceWarning. So the whole chain is closed explicitly, outermost
first (the outermost one's ``finally`` closes the HTTP response), then the response itself, all
inside a shield so a cancelled consumer still releases the connection.
"""

from __future__ import annotations

import functools
import gc
import inspect
import types
from typing import Any, Self

import anyio

from ._model_base import ChatModelBase
from ._retry import CLOSE_TIMEOUT

__all__ = ["SdkClientModel", "SdkEvents", "close_sdk_client", "route_extra_fields"]


def _suspended_generator_chain(agen: Any) -> list[types.AsyncGeneratorType[Any, Any]]:
    """*agen* and the async generators its frame is iterating, transitively, outermost first.

    A suspended generator's frame (locals and evaluation stack, where ``async for`` keeps
    its iterator) is what the garbage collector traverses, so ``gc.get_referents`` finds the
    inner generators even when no variable names them.
    """
    chain: list[types.AsyncGeneratorType[Any, Any]] = []
    seen: set[int] = set()
    pending = [agen]
    while pending:
        current = pending.pop(0)
        if not isinstance(current, types.AsyncGeneratorType) or id(current) in seen:
            continue
        seen.add(id(current))
        if current.ag_frame is None or current.ag_running:
            continue  # finished, or busy in another await: nothing to close here
        chain.append(current)
        pending.extend(
            ref for ref in gc.get_referents(current) if isinstance(ref, types.AsyncGeneratorType)
        )
    return chain


def _generators_in_traceback(tb: types.TracebackType | None) -> list[Any]:
    """The suspended generator chains referenced by the local variables of *tb*'s frames."""
    found: list[Any] = []
    while tb is not None:
        for value in tb.tb_frame.f_locals.values():
            if isinstance(value, types.AsyncGeneratorType):
                found.extend(_suspended_generator_chain(value))
        tb = tb.tb_next
    return found


class SdkEvents:
    """The events of an SDK ``AsyncStream``, with a complete :meth:`aclose`.

    Iterate it with ``async for`` (it is a plain iterator, not a generator, so iterating
    creates nothing that could be left suspended) and always ``await events.aclose()`` in a
    ``finally``. The generator chain is recorded when the first event arrives, while every
    link is still suspended inside the one before it; the SDK may later finish the outer
    generator (e.g. at ``[DONE]``) and so drop its own reference to the inner ones.
    """

    __slots__ = ("_chain", "_stream")

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._chain: list[types.AsyncGeneratorType[Any, Any]] = []

    def __aiter__(self) -> SdkEvents:
        return self

    async def __anext__(self) -> Any:
        try:
            event = await self._stream.__anext__()
        except Exception as exc:
            if not self._chain:
                # The SDK raised (e.g. an error event) before yielding anything: its outer
                # generator is finished, but the frames of the traceback still hold the
                # inner generators it was iterating.
                self._chain = _generators_in_traceback(exc.__traceback__)
            raise
        if not self._chain:
            # The SDKs keep the generator in ``_iterator`` (a plain attribute in openai, a
            # cached property in anthropic); ``__dict__`` avoids creating one that never ran.
            self._chain = _suspended_generator_chain(vars(self._stream).get("_iterator"))
        return event

    async def aclose(self) -> None:
        """Close the generator chain, outermost first, then the HTTP response; shielded and
        bounded by :data:`CLOSE_TIMEOUT`, so a cancelled consumer still releases the
        connection. Closing twice is harmless."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT):
            chain = self._chain or _suspended_generator_chain(vars(self._stream).get("_iterator"))
            for generator in chain:
                await generator.aclose()
            await self._stream.close()


async def close_sdk_client(client: Any) -> None:
    """Close an SDK client's connection pool, shielded; closing twice is harmless."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT):
        await client.close()


@functools.cache
def _accepted_parameters(method: Any) -> frozenset[str]:
    # Computed once per SDK method: the overloads share one implementation signature.
    return frozenset(inspect.signature(method).parameters)


def route_extra_fields(method: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Move request fields the SDK method does not declare into ``extra_body``.

    SDK releases differ in which request fields they name (e.g. ``temperature``); the server
    accepts them all, so unknown ones travel in the JSON body instead of failing with a
    ``TypeError`` inside the SDK.
    """
    accepted = _accepted_parameters(method)
    unknown = [key for key in kwargs if key not in accepted]
    if not unknown:
        return kwargs
    routed = {key: value for key, value in kwargs.items() if key in accepted}
    extra_body = dict(kwargs.get("extra_body") or {})
    for key in unknown:
        extra_body.setdefault(key, kwargs[key])
    routed["extra_body"] = extra_body
    return routed


class SdkClientModel(ChatModelBase):
    """A chat model that owns an SDK client (``self.client``): closable, and an async context
    manager that closes it on exit."""

    client: Any

    async def aclose(self) -> None:
        """Close the SDK client and its connection pool (safe to call twice)."""
        await close_sdk_client(self.client)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
