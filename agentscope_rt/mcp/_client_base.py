"""The base class of every MCP client: naming, tool lookup, calls and error translation."""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import mcp
import mcp.types
from mcp import ClientSession

from .._provider import install_library_log_redaction
from .._urls import MIN_SECRET_LENGTH as _MIN_SECRET_LENGTH
from .._urls import REDACTED as _REDACTED
from .._urls import redact_url, url_redactions
from ..exception import FunctionNotFoundError, MCPError
from ._mcp_function import MCPToolFunction
from ._session import list_all_tools

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "MCPClientBase",
    "call_timeout_text",
    "check_timeout",
    "redact_url",
    "unwrap_exception",
    "url_redactions",
    "value_redactions",
]

# The JSON-RPC error the SDK raises for a transport that closed under a pending request. The
# code alone is not enough: -32000 is the first "server error" code, which servers use too.
_CONNECTION_CLOSED = mcp.types.CONNECTION_CLOSED
_CONNECTION_CLOSED_MESSAGE = "Connection closed"
# The JSON-RPC error code the SDK uses for a request that ran out of time.
_REQUEST_TIMEOUT = mcp.types.REQUEST_TIMEOUT

DEFAULT_CONNECT_TIMEOUT = 30.0
"""Default bound on connecting plus the initialize handshake, and on one listing of the tools."""


def check_timeout(label: str, value: float) -> float:
    """*value* as a float if it is a positive, finite number of seconds.

    :raises ValueError: naming *label* otherwise.
    """
    if not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ValueError(f"{label} must be a positive number of seconds, got {value!r}")
    return float(value)


def call_timeout_text(seconds: float) -> str:
    """The message of a tool call that ran out of time (AgentScope's, with the mcp SDK 1.x
    wording the model saw there)."""
    return (
        f"Timed out while waiting for response to ClientRequest. Waited {float(seconds)} seconds."
    )


def value_redactions(values: Iterable[str]) -> list[tuple[str, str]]:
    """``(value, "***")`` pairs for header or environment values long enough to be secrets."""
    return [(v, _REDACTED) for v in values if len(v) >= _MIN_SECRET_LENGTH]


def unwrap_exception(exc: BaseException) -> BaseException:
    """*exc*, or the one exception inside it if it is a group of one (recursively)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _chain_texts(exc: BaseException, depth: int = 0) -> Iterator[str]:
    # Everything a traceback of *exc* would print as messages.
    if depth > 8:
        return
    yield str(exc)
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _chain_texts(inner, depth + 1)
    for linked in (exc.__cause__, exc.__context__):
        if linked is not None:
            yield from _chain_texts(linked, depth + 1)


class MCPClientBase(ABC):
    """Base class of the MCP clients: a named connection to one MCP server.

    Subclasses say how a session is obtained (:meth:`_use_session`); this class lists and
    calls tools over it, turns failures into :class:`~agentscope_rt.exception.MCPError`
    messages free of secrets, and builds the :class:`MCPToolFunction` wrappers the
    :class:`~agentscope_rt.tool.Toolkit` registers.

    :ivar name: the name identifying the server; unique among the servers a toolkit uses.
    :ivar connect_timeout: seconds allowed for connecting plus the handshake, and for each
        listing of the tools.
    """

    stateful: bool = True
    """Whether the client keeps one session across calls (``False``: a session per call)."""

    def __init__(self, name: str, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
        """
        :param name: the name identifying the MCP server.
        :param connect_timeout: seconds allowed for connecting plus the handshake, and for
            each listing of the tools.
        :raises ValueError: if *name* is empty or not a string, or *connect_timeout* is not a
            positive number.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"an MCP client needs a non-empty string name, got {name!r}")
        self.name = name
        self.connect_timeout = check_timeout("connect_timeout", connect_timeout)
        self._cached_tools: list[mcp.types.Tool] | None = None
        # Secret texts (header and env values, URL credentials) and what replaces them in
        # error messages and logs; longest first, so a URL is replaced before its parts.
        self._redactions: list[tuple[str, str]] = []
        # The SDK and the HTTP libraries log URLs and messages this client hands them.
        self._log_filter = install_library_log_redaction()
        # Why the client itself ended the latest session (named when calls then fail).
        self._end_reason: str | None = None

    def _add_redactions(self, pairs: Iterable[tuple[str, str]]) -> None:
        self._redactions = sorted(
            {*self._redactions, *pairs}, key=lambda pair: len(pair[0]), reverse=True
        )
        self._log_filter.remember(self, self._redactions)

    # -- subclass hooks ------------------------------------------------------------------

    @abstractmethod
    def _use_session(self, action: str) -> AbstractAsyncContextManager[ClientSession]:
        """An initialized session for *action*.

        :raises MCPError: if no session can be had (not connected, cannot connect).
        """

    @abstractmethod
    def _describe_target(self) -> str:
        """Where the server is, for error messages (never containing secrets)."""

    # -- MCP operations ------------------------------------------------------------------

    async def list_tools(self) -> list[mcp.types.Tool]:
        """All tools the server offers (every page of the listing); the result is cached for
        :meth:`get_callable_function`.

        :raises MCPError: if the client is not connected, the server cannot be reached, or it
            fails to answer within ``connect_timeout``.
        """
        action = "list_tools()"
        async with self._use_session(action) as session:
            try:
                tools = await list_all_tools(session, self.connect_timeout)
            except Exception as exc:
                raise self._translate_error(exc, action) from self._safe_cause(exc)
        self._cached_tools = tools
        return tools

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        read_timeout_seconds: float | None = None,
    ) -> mcp.types.CallToolResult:
        """Call tool *name* on the server and return its raw result.

        A tool that fails on the server returns normally, with ``is_error`` set. Concurrent
        calls from several tasks are fine (a stateful client multiplexes them on its session).

        :param name: the tool's name.
        :param arguments: the tool's arguments.
        :param read_timeout_seconds: seconds to wait for the result, counted once the session
            is open (a stateless client's connection and handshake are bounded by
            ``connect_timeout`` instead); ``None`` waits as long as the connection lives (a
            dead server ends it, so this never hangs on a crash). When it runs out the
            request is cancelled (the SDK tells the server) and the session stays usable.
        :raises MCPError: if the client is not connected, the server cannot be reached, the
            connection is lost, the call times out (the message is then
            ``Timed out while waiting for response to ClientRequest. Waited <s> seconds.``,
            as in AgentScope), or the server answers with a protocol error.
        :raises MCPError: if *arguments* cannot be sent as JSON (NaN or infinite numbers, lone
            surrogates, values that are not JSON); the session is left untouched.
        :raises ValueError: if *read_timeout_seconds* is not a positive number.
        """
        limit = (
            math.inf
            if read_timeout_seconds is None
            else check_timeout("read_timeout_seconds", read_timeout_seconds)
        )
        action = f"the call to tool {name!r}"
        self._check_sendable(name, arguments)
        async with self._use_session(action) as session:
            try:
                with anyio.move_on_after(limit):
                    return await session.call_tool(name, arguments or {})
            except Exception as exc:
                raise self._translate_error(exc, action) from self._safe_cause(exc)
        # Only the deadline leaves the block without returning.
        raise MCPError(call_timeout_text(limit))

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
        if execution_timeout is not None:
            check_timeout("execution_timeout", execution_timeout)
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

    def _check_sendable(self, name: str, arguments: dict[str, Any] | None) -> None:
        """Refuse arguments the SDK could not serialize: its writer task would fail on them
        and take the whole session (every other call on it) down."""
        try:
            json.dumps(arguments or {}, allow_nan=False, ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
            raise MCPError(
                f"the arguments of tool {name!r} on MCP server {self.name!r} cannot be sent as "
                f"JSON ({type(exc).__name__}: {self._scrub(str(exc))[:200]}); send only strings "
                "(without lone surrogates), finite numbers, booleans, null, lists and objects"
            ) from None

    # -- errors --------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        for secret, replacement in self._redactions:
            text = text.replace(secret, replacement)
        return text

    def _describe(self, exc: BaseException) -> str:
        """A one-line, secret-free description of *exc*, looking through single groups."""
        exc = unwrap_exception(exc)
        text = self._scrub(str(exc))
        return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

    def _safe_cause(self, exc: BaseException) -> BaseException | None:
        """*exc* to chain as the cause, or ``None`` when a traceback of it would show a secret."""
        if any(self._scrub(text) != text for text in _chain_texts(exc)):
            return None
        return exc

    def _connect_error(self, exc: BaseException, action: str | None = None) -> MCPError:
        """The error for failing to connect to the server (for *action*, if given)."""
        exc = unwrap_exception(exc)
        if self._end_reason is not None:
            reason = self._end_reason
        elif isinstance(exc, TimeoutError):
            reason = f"no answer to the MCP handshake within {self.connect_timeout:g} s"
        else:
            reason = self._describe(exc)
        purpose = f" for {action}" if action else ""
        return MCPError(
            f"could not connect to MCP server {self.name!r} ({self._describe_target()})"
            f"{purpose}: {reason}"
        )

    def _translate_error(self, exc: BaseException, action: str) -> MCPError:
        """Turn an SDK or transport failure during *action* into a readable MCPError."""
        exc = unwrap_exception(exc)
        if isinstance(exc, mcp.MCPError):
            if exc.code == _CONNECTION_CLOSED and exc.message == _CONNECTION_CLOSED_MESSAGE:
                reason = self._end_reason or (
                    "the server closed the connection or its process exited"
                )
                return MCPError(
                    f"lost the connection to MCP server {self.name!r} during {action}: {reason}"
                )
            if exc.code == _REQUEST_TIMEOUT:
                return MCPError(
                    f"MCP server {self.name!r} timed out during {action}: {self._scrub(str(exc))}"
                )
            return MCPError(
                f"MCP server {self.name!r} answered {action} with error {exc.code}: "
                f"{self._scrub(str(exc))}"
            )
        if isinstance(exc, TimeoutError):
            return MCPError(f"MCP server {self.name!r} timed out during {action}")
        return MCPError(f"MCP server {self.name!r} failed during {action}: {self._describe(exc)}")
