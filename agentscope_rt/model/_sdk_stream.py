"""Closing the ``openai`` / ``anthropic`` SDK streams completely.

An SDK ``AsyncStream`` reads its events through an internal async generator. Closing only the
HTTP response would leave that generator suspended until the garbage collector finalises it —
which under trio happens outside any task and is reported as a ResourceWarning. So the
generator is closed first (its ``finally`` closes the response), then the response itself, all
inside a shield so a cancelled consumer still releases the connection.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import anyio

from ._retry import CLOSE_TIMEOUT

__all__ = ["close_sdk_client", "close_sdk_stream", "route_extra_fields"]


async def close_sdk_stream(stream: Any) -> None:
    """Close an SDK ``AsyncStream``: its event generator, then its HTTP response."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT):
        # The SDKs keep the generator in ``_iterator`` (a plain attribute in openai, a cached
        # property in anthropic); reading ``__dict__`` avoids creating one that never ran.
        iterator = vars(stream).get("_iterator")
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()
        await stream.close()


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
