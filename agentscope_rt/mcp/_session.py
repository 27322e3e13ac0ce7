"""Opening an initialized SDK session over a transport, shared by every client kind."""

from __future__ import annotations

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
    transport: TransportFactory, initialize_timeout: float
) -> AsyncIterator[ClientSession]:
    """Enter a transport and a ClientSession on it, and run the initialize handshake.

    Must be entered and exited by the same task (the SDK's task groups live inside).

    :param transport: the transport factory.
    :param initialize_timeout: seconds allowed for the handshake.
    :raises TimeoutError: if the server does not finish the handshake in time.
    """
    async with transport() as streams, ClientSession(streams[0], streams[1]) as session:
        # Only the handshake is bounded here: a deadline scope around entering the contexts
        # would be exited while their task groups are still open, which anyio forbids.
        with anyio.fail_after(initialize_timeout):
            await session.initialize()
        yield session


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
