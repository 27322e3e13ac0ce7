"""MCP over HTTP with a fresh session per operation: :class:`HttpStatelessClient`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp import ClientSession

from ..exception import MCPError
from ._client_base import unwrap_exception
from ._http_transport import HttpClientBase
from ._session import open_session

__all__ = ["HttpStatelessClient"]


class HttpStatelessClient(HttpClientBase):
    """A streamable-HTTP or SSE MCP server, with a new session for every operation.

    ``HttpStatelessClient(name, transport, url, headers=None, timeout=30,
    sse_read_timeout=300, *, connect_timeout=30, auth=None, **client_kwargs)``. Nothing
    needs connecting or closing: :meth:`list_tools` and each tool call open a session, use it
    and close it before returning (also when cancelled). Suited to servers that keep no
    per-session state. ``auth`` (an ``httpx.Auth`` or ``httpx2.Auth``) is shared by every
    session, so a token it fetched once serves the following calls. The headers, the
    credentials the auth flow sends and the URL's credentials and query string never appear
    in reprs, errors or logs.
    """

    stateful: bool = False

    @asynccontextmanager
    async def _use_session(self, action: str) -> AsyncIterator[ClientSession]:
        try:
            async with open_session(self._transport(), self.connect_timeout) as session:
                yield session
        except MCPError:
            raise
        except Exception as exc:
            inner = unwrap_exception(exc)
            if isinstance(inner, MCPError):
                # Already translated inside the session; the SDK's task group wrapped it.
                raise inner from None
            raise self._connect_error(exc, action) from self._safe_cause(exc)
