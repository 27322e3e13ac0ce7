"""Building the SDK's HTTP transports (streamable HTTP and SSE) from AgentScope's arguments."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import httpx2
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from ._session import TransportFactory

__all__ = ["HttpTransportKind", "http_transport_factory", "validate_http_arguments"]

HttpTransportKind = Literal["streamable_http", "sse"]


def validate_http_arguments(
    name: str,
    transport: str,
    url: str,
    headers: dict[str, str] | None,
    timeout: float,
    sse_read_timeout: float,
) -> None:
    """Check the HTTP client arguments, naming the first bad one.

    :raises ValueError: on an unknown transport, a non-HTTP URL, non-string headers or a
        non-positive timeout.
    """
    if transport not in ("streamable_http", "sse"):
        raise ValueError(
            f"MCP client {name!r}: transport must be 'streamable_http' or 'sse', got {transport!r}"
        )
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError(f"MCP client {name!r}: url must be an http:// or https:// URL")
    if headers is not None and not (
        isinstance(headers, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
    ):
        raise ValueError(f"MCP client {name!r}: headers must map strings to strings")
    for label, value in (("timeout", timeout), ("sse_read_timeout", sse_read_timeout)):
        if not isinstance(value, int | float) or not 0 < value < math.inf:
            raise ValueError(
                f"MCP client {name!r}: {label} must be a positive number of seconds, got {value!r}"
            )


def http_transport_factory(
    transport: HttpTransportKind,
    url: str,
    headers: dict[str, str] | None,
    timeout: float,
    sse_read_timeout: float,
    client_kwargs: dict[str, Any],
) -> TransportFactory:
    """A factory of fresh SDK transport contexts for one HTTP server.

    :param transport: ``"streamable_http"`` or ``"sse"``.
    :param client_kwargs: extra keyword arguments for the SDK's transport function.
    """
    headers = dict(headers or {})
    if transport == "sse":
        return lambda: sse_client(
            url,
            headers=headers,
            timeout=timeout,
            sse_read_timeout=sse_read_timeout,
            **client_kwargs,
        )

    @asynccontextmanager
    async def streamable() -> AsyncIterator[Any]:
        # SDK 2.x takes headers and timeouts through the HTTP client it is given, and leaves
        # closing that client to whoever created it.
        http_client = httpx2.AsyncClient(
            headers=headers, timeout=httpx2.Timeout(timeout, read=sse_read_timeout)
        )
        async with (
            http_client,
            streamable_http_client(url, http_client=http_client, **client_kwargs) as streams,
        ):
            yield streams

    return streamable
