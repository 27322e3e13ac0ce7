"""The HTTP clients A2A calls open: one TLS context for the whole process.

Building an ``httpx.AsyncClient`` loads the CA bundle into a fresh TLS context, about 60 ms on a
small machine; a reply that opens its own client would pay it every time. The context is made
once, in a worker thread (it blocks), and shared (TLS contexts are safe to share).
"""

from __future__ import annotations

import ssl

import anyio.to_thread
import httpx

__all__ = ["new_http_client"]

_TLS: list[ssl.SSLContext] = []


async def new_http_client(timeout_s: float) -> httpx.AsyncClient:
    """A new HTTP client with *timeout_s* for every step, sharing the process's TLS context."""
    if not _TLS:
        context = await anyio.to_thread.run_sync(httpx.create_ssl_context)
        if not _TLS:
            _TLS.append(context)
    return httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), verify=_TLS[0])
