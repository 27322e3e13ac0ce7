"""Reading a streamed httpx response line by line, closing the generators behind it.

httpx reads a body through a chain of async generators (lines, text, bytes, the transport's
raw stream). ``async for`` never closes the generator it iterates, so a reader that stops early
leaves the inner ones suspended until the garbage collector finalises them, which trio reports
as a ResourceWarning. :func:`response_lines` closes the chain explicitly, outermost first,
shielded, so a cancelled reader still releases everything.
"""

from __future__ import annotations

import contextlib
import gc
import types
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx

from ._retry import CLOSE_TIMEOUT

__all__ = [
    "close_generator_chain",
    "response_bytes",
    "response_lines",
    "suspended_generator_chain",
]


def suspended_generator_chain(agen: Any) -> list[types.AsyncGeneratorType[Any, Any]]:
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


@contextlib.asynccontextmanager
async def response_lines(response: httpx.Response) -> AsyncIterator[AsyncIterator[str]]:
    """``response.aiter_lines()``, with the chain of httpx generators behind it closed on exit.

    When the reader stops early (an error event raised, the consumer gone), those generators
    are left suspended, and trio reports each one the collector finalises; so they are closed
    here, outermost first, shielded.
    """
    lines = response.aiter_lines()
    try:
        yield lines
    finally:
        await close_generator_chain(lines)


@contextlib.asynccontextmanager
async def response_bytes(response: httpx.Response) -> AsyncIterator[AsyncIterator[bytes]]:
    """``response.aiter_bytes()``, with the chain of httpx generators behind it closed on exit
    (as :func:`response_lines`)."""
    pieces = response.aiter_bytes()
    try:
        yield pieces
    finally:
        await close_generator_chain(pieces)


async def close_generator_chain(agen: Any) -> None:
    """Close *agen* and the async generators it is suspended in, outermost first; shielded
    and bounded by :data:`CLOSE_TIMEOUT`, so a cancelled caller still releases them."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT):
        for generator in suspended_generator_chain(agen):
            await generator.aclose()
