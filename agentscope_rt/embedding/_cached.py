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

import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel

from ._cache_base import EmbeddingCacheBase
from ._embedding_base import empty_response, merge_responses
from ._embedding_response import EmbeddingResponse, EmbeddingUsage

__all__ = ["cached_embed", "embed_all", "one_response", "timed"]

logger = logging.getLogger(__name__)

_in_flight: dict[tuple[object, int, str], anyio.Event] = {}
"""The identifiers being computed, by (event loop, cache, identifier JSON)."""


async def cached_embed(
    cache: EmbeddingCacheBase | None,
    identifier: dict[str, Any],
    compute: Callable[[], Awaitable[EmbeddingResponse]],
    *,
    count: int | None = None,
    dimensions: int | None = None,
) -> EmbeddingResponse:
    """The embeddings for *identifier*: from *cache* when it holds them, else from
    ``compute()`` (whose result is then stored).

    A hit is taken only when it answers the request: *count* vectors (when given), each of
    *dimensions* numbers (when given). Any other hit (a damaged or foreign file, a cache of
    another's writing) is logged as a miss, and the computed answer replaces it.

    :param count: the number of inputs the request embeds.
    :param dimensions: the length of vector the request asks for (anything but an integer:
        not checked).
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
        mismatch = _mismatch(cached, count, dimensions) if cached else None
        if cached and mismatch is None:
            return EmbeddingResponse(
                embeddings=cached, usage=EmbeddingUsage(time=0.0, tokens=0), source="cache"
            )
        if mismatch is not None:
            logger.warning("Ignoring cached embeddings that do not match the request: %s", mismatch)
        response = await compute()
        await cache.store(
            embeddings=response.embeddings, identifier=identifier, overwrite=mismatch is not None
        )
        return response
    finally:
        del _in_flight[key]
        done.set()


async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
    """``(result, seconds)`` of awaiting ``call()``."""
    started = time.monotonic()
    result = await call()
    return result, time.monotonic() - started


def _mismatch(cached: list[Any], count: int | None, dimensions: int | None) -> str | None:
    """Why *cached* does not answer a request for *count* vectors of *dimensions* numbers, or
    ``None`` when it does (a limit not given is not checked)."""
    if count is not None and len(cached) != count:
        return f"{len(cached)} vectors for {count} inputs"
    # A request's dimensions are whatever its caller passed: only a real integer is checked.
    if isinstance(dimensions, int) and not isinstance(dimensions, bool):
        for index, vector in enumerate(cached):
            if len(vector) != dimensions:
                return f"vector {index} has {len(vector)} dimensions, not {dimensions}"
    return None


async def embed_all(
    cache: EmbeddingCacheBase | None,
    inputs: list[Any],
    size: int,
    fields: dict[str, Any],
    embed: Callable[[dict[str, Any]], Awaitable[EmbeddingResponse]],
    *,
    dimension_key: str,
) -> EmbeddingResponse:
    """*inputs* embedded *size* at a time, in order, as one response (see
    :func:`one_response`); no request for an empty list.

    Each request ``{"input": batch, **fields}`` is taken through :func:`cached_embed` (a hit
    must hold one vector per input, each as long as the request's *dimension_key* field
    asks). Requests run one after another; those answered before one fails stay in the cache.

    :raises: whatever *embed* or the cache raises.
    """
    if not inputs:
        return empty_response()
    responses = []
    for start in range(0, len(inputs), size):
        request = {"input": inputs[start : start + size], **fields}
        responses.append(
            await cached_embed(
                cache,
                request,
                functools.partial(embed, request),
                count=len(request["input"]),
                dimensions=request.get(dimension_key),
            )
        )
    return one_response(responses)


def one_response(responses: list[EmbeddingResponse]) -> EmbeddingResponse:
    """The response of a call made of *responses* (at least one): a single one as it is,
    several merged (:func:`merge_responses`)."""
    return responses[0] if len(responses) == 1 else merge_responses(responses)
