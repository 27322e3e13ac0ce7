"""Cutting an ``async with`` block short by a cancellation, for tests of cleanup that must run
in a cancelled scope."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio


async def used_then_cancelled(resource: Any, use: Callable[[Any], Awaitable[object]]) -> None:
    """Enter ``async with resource``, await ``use(resource)``, then cancel the scope around the
    block while inside it, so the block's exit runs in a cancelled scope."""
    with anyio.CancelScope() as scope:
        async with resource:
            await use(resource)
            scope.cancel()
            await anyio.sleep(1)
    assert scope.cancelled_caught
