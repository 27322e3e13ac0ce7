"""The lock of every object that may outlive an event loop.

An agent, a memory, a session, a model or a plan notebook is often made once and used under
several event loops in one process: ``asyncio.run`` and later ``trio.run``, a test suite running
both backends, an application calling ``anyio.run`` per request. ``anyio.Lock`` (like
``asyncio.Lock``) belongs to the first event loop that contends for it, and fails or hangs
under the next one. :class:`FairLock` is the one lock such objects hold.

What it guarantees:

- **Mutual exclusion, in arrival order.** One holder at a time; a task that finds it held waits
  in line and is handed the lock directly by the release before it, so no later arrival can
  take it first (first in, first out).
- **Any event loop, one after another.** Between uses it holds no loop object: a waiter's event
  is made while it waits, on the loop it waits on. A lock used under asyncio is usable under
  trio afterwards, provided every task of the finished loop ran its cleanup (``asyncio.run``
  and ``trio.run`` cancel and unwind the tasks they leave; state left by a loop abandoned
  without that is not repaired).
- **Cancellation-safe.** Waiting is cancellable and leaves the line; a waiter cancelled just as
  it is handed the lock passes it on to the next one, so the lock is never lost.

What it costs: taking a free lock is a flag test and never awaits (so it is no checkpoint, and
no cancellation is raised there); a release with nobody waiting clears the flag. Only a wait
costs an ``anyio.Event``. In exchange it is not reentrant (a holder taking it again waits for
itself forever) and does not record its holder (any task may release it; releasing a free
lock raises ``RuntimeError``).

It is not thread-safe: every user runs on the event loop's thread, as anyio's primitives do.
"""

from __future__ import annotations

from collections import deque
from types import TracebackType

import anyio

__all__ = ["FairLock"]


class FairLock:
    """A first-in-first-out lock that works under any event loop (see the module's docs).

    Use ``async with lock:``; a hot path that must not await for a free lock calls
    :meth:`try_acquire` and only awaits :meth:`acquire` when that fails.

    :ivar held: whether the lock is held (read it, never set it: a handed-over lock stays held).
    :ivar waiters: the events of the tasks waiting in line, first first (``None`` until a
        task first waits: an empty deque is ~600 bytes, and most locks of idle agents never
        see a second task).
    """

    __slots__ = ("held", "waiters")

    def __init__(self) -> None:
        self.held = False
        self.waiters: deque[anyio.Event] | None = None

    def locked(self) -> bool:
        """Whether the lock is held."""
        return self.held

    def try_acquire(self) -> bool:
        """Take the lock if it is free (no await, no checkpoint); ``False`` if it is held.

        A held lock is also held while others wait, so this never jumps the line.
        """
        if self.held:
            return False
        self.held = True
        return True

    async def acquire(self) -> None:
        """Take the lock: at once if it is free (no checkpoint), else wait in line.

        :raises anyio.get_cancelled_exc_class(): when cancelled while waiting; the lock is
            then not held by this task (if it had been handed over, it is passed on).
        """
        if not self.held:
            self.held = True
            return
        event = anyio.Event()
        waiters = self.waiters
        if waiters is None:
            waiters = self.waiters = deque()
        waiters.append(event)
        try:
            await event.wait()
        except BaseException:
            if event.is_set():
                self.release()  # handed over while being cancelled: pass it on
            else:
                waiters.remove(event)
            raise

    def release(self) -> None:
        """Release the lock, handing it to the first waiter if there is one.

        :raises RuntimeError: if the lock is not held.
        """
        waiters = self.waiters
        if waiters:
            waiters.popleft().set()  # handed over: stays held
        elif self.held:
            self.held = False
        else:
            raise RuntimeError("FairLock.release() called on a lock that is not held")

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
