"""The cache step every embedding model shares: look up, call once, store.

A model with an embedding cache turns each request into an identifier (the request body it
would send: texts, model name, dimensions and extra arguments) and asks the cache first. A
non-empty hit is returned as ``source="cache"`` with zero time and zero tokens, as in
AgentScope. Concurrent identical requests are coalesced: while one task computes an
identifier's embeddings, the others with the same identifier (in the same event loop, through
the same cache) wait for it and then read its result from the cache, so N tasks asking for the
same texts cost one provider call. If that call fails or is cancelled, the next waiter makes
its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel

from ._cache_base import EmbeddingCacheBase
from ._embedding_response import EmbeddingResponse, EmbeddingUsage

__all__ = ["cached_embed", "timed"]

_in_flight: dict[tuple[object, int, str], anyio.Event] = {}
"""The identifiers being computed, by (event loop, cache, identifier JSON)."""


async def cached_embed(
    cache: EmbeddingCacheBase | None,
    identifier: dict[str, Any],
    compute: Callable[[], Awaitable[EmbeddingResponse]],
) -> EmbeddingResponse:
    """The embeddings for *identifier*: from *cache* when it holds them, else from
    ``compute()`` (whose result is then stored).

    :raises: whatever *compute* or the cache raises.
    """
    if cache is None:
        return await compute()
    key = (
        anyio.lowlevel.current_token(),
        id(cache),
        json.dumps(identifier, ensure_ascii=False, sort_keys=True),
    )
    # Only one task per identifier reads the cache and, on a miss, computes: the others wait
    # for it and then read what it stored. (Reading before taking the turn would let a task
    # that missed just before the first one stored call the provider a second time.)
    while (pending := _in_flight.get(key)) is not None:
        await pending.wait()
    done = _in_flight[key] = anyio.Event()
    try:
        cached = await cache.retrieve(identifier)
        if cached:
            return EmbeddingResponse(
                embeddings=cached, usage=EmbeddingUsage(time=0.0, tokens=0), source="cache"
            )
        response = await compute()
        await cache.store(embeddings=response.embeddings, identifier=identifier)
        return response
    finally:
        del _in_flight[key]
        done.set()


async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
    """``(result, seconds)`` of awaiting ``call()``."""
    started = time.monotonic()
    result = await call()
    return result, time.monotonic() - started
