"""MCP over HTTP with one long-lived session: :class:`HttpStatefulClient`."""

from __future__ import annotations

from typing import Any

from ._client_base import redact_url
from ._http_transport import HttpTransportKind, http_transport_factory, validate_http_arguments
from ._session import TransportFactory
from ._stateful_client_base import DEFAULT_CONNECT_TIMEOUT, StatefulClientBase

__all__ = ["HttpStatefulClient"]


class HttpStatefulClient(StatefulClientBase):
    """A streamable-HTTP or SSE MCP server, with one session kept across calls.

    Recommended for servers that keep per-session state (browsers, shells). The headers
    (often carrying credentials) never appear in reprs, errors or logs; the URL is shown
    without its query string.
    """

    def __init__(
        self,
        name: str,
        transport: HttpTransportKind,
        url: str,
        headers: dict[str, str] | None = None,
        timeout: float = 30,
        sse_read_timeout: float = 60 * 5,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        **client_kwargs: Any,
    ) -> None:
        """
        :param name: the name identifying the MCP server.
        :param transport: ``"streamable_http"`` (URLs usually end in ``/mcp``) or ``"sse"``
            (URLs usually end in ``/sse``).
        :param url: the server's endpoint.
        :param headers: extra HTTP headers sent with every request.
        :param timeout: seconds for each HTTP operation (connect, write, pool).
        :param sse_read_timeout: seconds to wait for the next event on an open stream.
        :param connect_timeout: seconds allowed for the handshake and each tool listing.
        :param client_kwargs: passed to the SDK's ``streamable_http_client`` or
            ``sse_client``.
        :raises ValueError: on an unknown transport, a non-HTTP URL, malformed headers or a
            non-positive timeout.
        """
        super().__init__(name, connect_timeout=connect_timeout)
        validate_http_arguments(name, transport, url, headers, timeout, sse_read_timeout)
        self.transport = transport
        self.url = url
        self._factory = http_transport_factory(
            transport, url, headers, float(timeout), float(sse_read_timeout), client_kwargs
        )

    def __repr__(self) -> str:
        return (
            f"HttpStatefulClient(name={self.name!r}, transport={self.transport!r}, "
            f"url={redact_url(self.url)!r})"
        )

    def _transport(self) -> TransportFactory:
        return self._factory

    def _describe_target(self) -> str:
        return f"{self.transport} at {redact_url(self.url)}"
