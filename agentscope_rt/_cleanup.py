"""Cleanup that runs even when the task doing it has been cancelled, and never hangs.

``async with resource:`` cancelled in its body (an agent's ``interrupt()``, a timeout, a
failing sibling task) runs ``__aexit__`` inside the cancelled scope. There, the first
checkpoint raises the cancellation again — and ``anyio.to_thread.run_sync``, which closing a
synchronous database client needs, starts with one — so the resource would never be released:
an on-disk vector store keeps its folder locked against the next store, a connection pool
stays open. So such closes run shielded from the caller's cancellation, and bounded by
:data:`CLEANUP_TIMEOUT`, since a peer that hangs must not hang the caller with it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from typing import Any

import anyio

__all__ = ["CLEANUP_TIMEOUT", "cleanup_scope", "close_in_thread"]

CLEANUP_TIMEOUT = 10.0
"""Seconds a shielded cleanup may take before the caller moves on without it."""


def cleanup_scope() -> AbstractContextManager[Any]:
    """A scope for awaiting cleanup: shielded from the caller's cancellation, given up after
    :data:`CLEANUP_TIMEOUT` seconds (without raising)."""
    stack = ExitStack()
    stack.enter_context(anyio.CancelScope(shield=True))
    stack.enter_context(anyio.move_on_after(CLEANUP_TIMEOUT))
    return stack


async def close_in_thread(function: Callable[..., object], *args: Any) -> None:
    """Run the blocking cleanup ``function(*args)`` in a worker thread, also when the calling
    task is cancelled; after :data:`CLEANUP_TIMEOUT` seconds the caller goes on and the thread
    finishes on its own.

    :raises Exception: whatever *function* raised (when it finished in time).
    """
    with cleanup_scope():
        await anyio.to_thread.run_sync(lambda: function(*args), abandon_on_cancel=True)
