"""The base class of every MCP client: naming, tool lookup and error translation."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import mcp
import mcp.types

from ..exception import FunctionNotFoundError, MCPError
from ._mcp_function import MCPToolFunction

__all__ = ["MCPClientBase"]

# The JSON-RPC error code the SDK uses for a transport that closed under a pending request.
_CONNECTION_CLOSED = mcp.types.CONNECTION_CLOSED
# The JSON-RPC error code the SDK uses for a request that ran out of time.
_REQUEST_TIMEOUT = mcp.types.REQUEST_TIMEOUT


def redact_url(url: str) -> str:
    """The URL without credentials and query string, safe for reprs and error messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def describe_exception(exc: BaseException) -> str:
    """A one-line description of *exc*, looking through single-exception groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class MCPClientBase(ABC):
    """Base class of the MCP clients: a named connection to one MCP server.

    Subclasses provide :meth:`list_tools` and :meth:`call_tool`; this class builds the
    :class:`MCPToolFunction` wrappers the :class:`~agentscope_rt.tool.Toolkit` registers.

    :ivar name: the name identifying the server; unique among the servers a toolkit uses.
    """

    stateful: bool = True
    """Whether the client keeps one session across calls (``False``: a session per call)."""

    def __init__(self, name: str) -> None:
        """
        :param name: the name identifying the MCP server.
        :raises ValueError: if *name* is empty or not a string.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"an MCP client needs a non-empty string name, got {name!r}")
        self.name = name
        self._cached_tools: list[mcp.types.Tool] | None = None

    @abstractmethod
    async def list_tools(self) -> list[mcp.types.Tool]:
        """All tools the server offers (every page of the listing).

        :raises MCPError: if the server cannot be reached or answers with an error.
        """

    @abstractmethod
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        read_timeout_seconds: float | None = None,
    ) -> mcp.types.CallToolResult:
        """Call tool *name* on the server and return its raw result.

        A tool that fails on the server returns normally, with ``is_error`` set.

        :param name: the tool's name.
        :param arguments: the tool's arguments.
        :param read_timeout_seconds: seconds to wait for the result; ``None`` waits as long as the
            connection lives.
        :raises MCPError: if the connection is lost, the call times out, or the server
            answers with a protocol error.
        """

    async def get_callable_function(
        self,
        func_name: str,
        wrap_tool_result: bool = True,
        execution_timeout: float | None = None,
    ) -> MCPToolFunction:
        """A callable wrapper of the server's tool *func_name*, usable as a tool function.

        The tool list is fetched once and cached; call :meth:`list_tools` to refresh it.

        :param func_name: the tool's name on the server.
        :param wrap_tool_result: return :class:`~agentscope_rt.tool.ToolResponse` objects
            (``True``) or the SDK's ``CallToolResult`` (``False``).
        :param execution_timeout: seconds each call may take; ``None`` for no limit.
        :raises FunctionNotFoundError: if the server has no tool with that name.
        :raises ValueError: if *execution_timeout* is not a positive number.
        :raises MCPError: if the tool list cannot be fetched.
        """
        if execution_timeout is not None and not (
            isinstance(execution_timeout, int | float) and 0 < execution_timeout < math.inf
        ):
            raise ValueError(
                f"execution_timeout must be a positive number of seconds or None, "
                f"got {execution_timeout!r}"
            )
        tools = self._cached_tools if self._cached_tools is not None else await self.list_tools()
        for tool in tools:
            if tool.name == func_name:
                return MCPToolFunction(
                    mcp_name=self.name,
                    tool=tool,
                    wrap_tool_result=wrap_tool_result,
                    client=self,
                    timeout=execution_timeout,
                )
        available = ", ".join(sorted(t.name for t in tools)) or "(none)"
        raise FunctionNotFoundError(
            f"MCP server {self.name!r} has no tool named {func_name!r}; its tools are: {available}"
        )

    def _translate_error(self, exc: BaseException, action: str) -> MCPError:
        """Turn an SDK or transport failure during *action* into a readable MCPError."""
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        if isinstance(exc, mcp.MCPError):
            if exc.code == _CONNECTION_CLOSED:
                return MCPError(
                    f"lost the connection to MCP server {self.name!r} during {action}: the "
                    "server closed the connection or its process exited"
                )
            if exc.code == _REQUEST_TIMEOUT:
                return MCPError(f"MCP server {self.name!r} timed out during {action}: {exc}")
            return MCPError(
                f"MCP server {self.name!r} answered {action} with error {exc.code}: {exc}"
            )
        if isinstance(exc, TimeoutError):
            return MCPError(f"MCP server {self.name!r} timed out during {action}")
        return MCPError(
            f"MCP server {self.name!r} failed during {action}: {describe_exception(exc)}"
        )
