"""Closing the ``openai`` / ``anthropic`` SDK streams completely.

An SDK ``AsyncStream`` reads its events through an internal async generator. Closing only the
HTTP response would leave that generator suspended until the garbage collector finalises it —
which under trio happens outside any task and is reported as a ResourceWarning. So the
generator is closed first (its ``finally`` closes the response), then the response itself, all
inside a shield so a cancelled consumer still releases the connection.
"""

from __future__ import annotations

from typing import Any

import anyio

from ._retry import CLOSE_TIMEOUT

__all__ = ["close_sdk_stream"]


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
