"""MCP over HTTP with a fresh session per operation: :class:`HttpStatelessClient`."""

from __future__ import annotations

import math
from typing import Any

import mcp.types

from ..exception import MCPError
from ._client_base import MCPClientBase, describe_exception, redact_url
from ._http_transport import HttpTransportKind, http_transport_factory, validate_http_arguments
from ._session import list_all_tools, open_session

__all__ = ["HttpStatelessClient"]

# Default bound on connecting, the initialize handshake and one listing of the tools.
DEFAULT_CONNECT_TIMEOUT = 30.0


class HttpStatelessClient(MCPClientBase):
    """A streamable-HTTP or SSE MCP server, with a new session for every operation.

    Nothing needs connecting or closing: :meth:`list_tools` and each tool call open a
    session, use it and close it before returning (also when cancelled). Suited to servers
    that keep no per-session state. Headers never appear in reprs, errors or logs.
    """

    stateful: bool = False

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
        :param transport: ``"streamable_http"`` or ``"sse"``.
        :param url: the server's endpoint.
        :param headers: extra HTTP headers sent with every request.
        :param timeout: seconds for each HTTP operation (connect, write, pool).
        :param sse_read_timeout: seconds to wait for the next event on an open stream.
        :param connect_timeout: seconds allowed for each handshake and each tool listing.
        :param client_kwargs: passed to the SDK's ``streamable_http_client`` or
            ``sse_client``.
        :raises ValueError: on an unknown transport, a non-HTTP URL, malformed headers or a
            non-positive timeout.
        """
        super().__init__(name)
        validate_http_arguments(name, transport, url, headers, timeout, sse_read_timeout)
        if not isinstance(connect_timeout, int | float) or not 0 < connect_timeout < math.inf:
            raise ValueError(
                f"connect_timeout must be a positive number of seconds, got {connect_timeout!r}"
            )
        self.transport = transport
        self.url = url
        self.connect_timeout = float(connect_timeout)
        self._factory = http_transport_factory(
            transport, url, headers, float(timeout), float(sse_read_timeout), client_kwargs
        )

    def __repr__(self) -> str:
        return (
            f"HttpStatelessClient(name={self.name!r}, transport={self.transport!r}, "
            f"url={redact_url(self.url)!r})"
        )

    def _connect_error(self, exc: BaseException, action: str) -> MCPError:
        return MCPError(
            f"could not connect to MCP server {self.name!r} ({self.transport} at "
            f"{redact_url(self.url)}) for {action}: {describe_exception(exc)}"
        )

    async def list_tools(self) -> list[mcp.types.Tool]:
        """All tools the server offers, fetched over a fresh session; cached for
        get_callable_function.

        :raises MCPError: if the server cannot be reached or fails to answer within
            ``connect_timeout``.
        """
        try:
            async with open_session(self._factory, self.connect_timeout) as session:
                try:
                    tools = await list_all_tools(session, self.connect_timeout)
                except Exception as exc:
                    raise self._translate_error(exc, "list_tools()") from exc
        except MCPError:
            raise
        except Exception as exc:
            raise self._connect_error(exc, "list_tools()") from exc
        self._cached_tools = tools
        return tools

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        read_timeout_seconds: float | None = None,
    ) -> mcp.types.CallToolResult:
        """Call tool *name* over a fresh session and return its raw result.

        :param name: the tool's name.
        :param arguments: the tool's arguments.
        :param read_timeout_seconds: seconds to wait for the result; ``None`` for no limit.
        :raises MCPError: if the server cannot be reached, the connection is lost, the call
            times out, or the server answers with a protocol error.
        """
        action = f"the call to tool {name!r}"
        try:
            async with open_session(self._factory, self.connect_timeout) as session:
                try:
                    return await session.call_tool(
                        name, arguments or {}, read_timeout_seconds=read_timeout_seconds
                    )
                except Exception as exc:
                    raise self._translate_error(exc, action) from exc
        except MCPError:
            raise
        except Exception as exc:
            raise self._connect_error(exc, action) from exc
