"""The life of an ``openai`` / ``anthropic`` SDK client: one copy per event loop, closed.

An SDK client holds an HTTP connection pool, which belongs to the event loop that opened its
connections (see :mod:`._loop_client`). A model or embedding model keeps the client it was
built with as a template and, through :class:`~._loop_client.LoopClients`, gives each event
loop its own copy (:func:`loop_copy`), closed by :func:`close_sdk_client`; a client whose HTTP
client the user passed is the user's to manage (:func:`sdk_owns_http_client`).
"""

from __future__ import annotations

import sys
from typing import Any

import anyio

from ._retry import CLOSE_TIMEOUT

__all__ = ["close_sdk_client", "loop_copy", "sdk_owns_http_client"]


async def close_sdk_client(client: Any) -> None:
    """Close an SDK client's connection pool, shielded; closing twice is harmless."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT):
        await client.close()


def loop_copy(template: Any) -> Any:
    """A copy of the SDK client *template* with a connection pool of its own (the SDK's
    default HTTP client), for one event loop."""
    sdk = sys.modules[type(template).__module__.partition(".")[0]]
    return template.copy(http_client=sdk.DefaultAsyncHttpxClient(timeout=template.timeout))


def sdk_owns_http_client(client: Any) -> bool:
    # The SDKs wrap the HTTP client they make themselves in this class; one the user passed
    # (``client_kwargs={"http_client": ...}``) is the user's to manage and is used as given.
    return type(getattr(client, "_client", None)).__name__ == "AsyncHttpxClientWrapper"
