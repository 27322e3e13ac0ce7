"""Opening an initialized SDK session over a transport, shared by every client kind."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import mcp.types
from mcp import ClientSession

__all__ = ["TransportFactory", "list_all_tools", "open_session"]

TransportFactory = Callable[[], AbstractAsyncContextManager[Any]]
"""Returns a fresh SDK transport context manager yielding ``(read_stream, write_stream, ...)``."""


@asynccontextmanager
async def open_session(
    transport: TransportFactory, connect_timeout: float
) -> AsyncIterator[ClientSession]:
    """Enter a transport and a ClientSession on it, and run the initialize handshake.

    Connecting (for SSE: up to the server's endpoint event) and the handshake together are
    bounded by *connect_timeout*; the session itself is not. Must be entered and exited by
    the same task (the SDK's task groups live inside).

    :param transport: the transport factory.
    :param connect_timeout: seconds allowed for connecting plus the handshake.
    :raises TimeoutError: if the server does not finish the handshake in time.
    """
    # One scope encloses the SDK's contexts and its deadline is lifted after the handshake:
    # a deadline scope around entering them alone would be exited while their task groups
    # are still open, which anyio forbids.
    with anyio.CancelScope(deadline=anyio.current_time() + connect_timeout) as scope:
        try:
            async with transport() as streams, ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                scope.deadline = math.inf
                yield session
        except Exception as exc:
            # The SDK may turn the deadline's cancellation into an error of its own.
            if scope.cancel_called:
                raise TimeoutError(f"no MCP handshake within {connect_timeout:g} s") from exc
            raise
    if scope.cancelled_caught:
        raise TimeoutError(f"no MCP handshake within {connect_timeout:g} s")


async def list_all_tools(session: ClientSession, limit_seconds: float) -> list[mcp.types.Tool]:
    """Every tool the server lists, following pagination cursors.

    :raises TimeoutError: if the listing takes longer than *limit_seconds* in total.
    """
    tools: list[mcp.types.Tool] = []
    cursor: str | None = None
    with anyio.fail_after(limit_seconds):
        while True:
            params = mcp.types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools
