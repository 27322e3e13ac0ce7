"""Stateful MCP clients: one long-lived session, owned by a runner task.

Why a runner task. The SDK's transports and ``ClientSession`` are async context managers that
open task groups and cancel scopes, and anyio requires those to be entered and exited by the
same task, innermost first. AgentScope 1.0 enters them with an ``AsyncExitStack`` in whatever
task calls ``connect()`` and exits them in whatever task calls ``close()``; that corrupts the
cancel-scope stack as soon as the two differ or other scopes interleave. Here a *runner task*
enters the transport and the session, runs the handshake, reports that it has started, waits
for a stop request and then exits the contexts itself. Calls from any task share the session
(the SDK multiplexes concurrent requests).

Where the runner lives:

* ``async with client:`` (recommended) or ``await client.connect()`` — in a task group the
  client owns, entered in the calling task. ``close()`` must then come from that same task,
  and several clients connected this way close in reverse order, like any nested context
  managers. Breaking either rule raises :class:`~agentscope_rt.exception.MCPError` instead of
  corrupting the cancel scopes.
* ``await client.connect(task_group=tg)`` — in the caller's task group: ``close()`` may come
  from any task, in any order, and the session ends at the latest when ``tg`` ends.

Guarantees. On ``close()``, on cancellation and when the server dies, the SDK's shutdown runs
to completion (for stdio: close stdin, wait, then terminate and kill the process tree, each
step bounded and shielded), so no subprocess or stream outlives the client. A failure of the
runner never cancels the caller's code: it is recorded, and the next call raises
``MCPError``. Connecting, the handshake and listing tools are bounded by ``connect_timeout``.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Self

import anyio
import anyio.abc
from mcp import ClientSession

from ..exception import MCPError
from ._client_base import DEFAULT_CONNECT_TIMEOUT, MCPClientBase
from ._session import TransportFactory, open_session

__all__ = ["StatefulClientBase"]

logger = logging.getLogger(__name__)

# The innermost client connected without a task group in the current task. Each task has its
# own context, so this is a per-task stack (linked through ``_outer_client``) that lets
# close() refuse an order that would exit task groups out of nesting.
_innermost_client: ContextVar[StatefulClientBase | None] = ContextVar(
    "agentscope_rt_mcp_innermost_client", default=None
)


class StatefulClientBase(MCPClientBase):
    """Base class of MCP clients that keep one session across tool calls.

    Use as an async context manager (``async with client: ...``), or call :meth:`connect`
    and :meth:`close` (see the module documentation for the rules of each).

    :ivar name: the name identifying the server.
    """

    def __init__(self, name: str, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
        """
        :param name: the name identifying the MCP server.
        :param connect_timeout: seconds allowed for connecting plus the handshake, and for
            each listing of the tools.
        :raises ValueError: if *name* is empty or *connect_timeout* is not positive.
        """
        super().__init__(name, connect_timeout=connect_timeout)
        self._session: ClientSession | None = None
        self._running = False
        self._failure: BaseException | None = None
        self._stop_requested = anyio.Event()
        self._runner_done = anyio.Event()
        self._own_task_group: anyio.abc.TaskGroup | None = None
        self._owner_task_id: int | None = None
        self._outer_client: StatefulClientBase | None = None

    # -- subclass hooks ------------------------------------------------------------------

    @abstractmethod
    def _transport(self) -> TransportFactory:
        """The SDK transport factory for this server."""

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def is_connected(self) -> bool:
        """Whether the session is up (connected, not closed, not known to have failed)."""
        return self._running and self._session is not None

    async def connect(self, task_group: anyio.abc.TaskGroup | None = None) -> None:
        """Start the server connection and run the MCP handshake.

        :param task_group: a task group to run the session in; then :meth:`close` may be
            called from any task. Without it the client uses a task group of its own,
            entered in the calling task, and :meth:`close` must be called from this task.
        :raises MCPError: if the client is already connected, or the server cannot be
            started, reached or initialized within ``connect_timeout`` (the message says
            which server and why).
        """
        if self._running:
            raise MCPError(
                f"MCP client {self.name!r} is already connected; call close() before "
                "connecting again"
            )
        self._failure = None
        self._end_reason = None
        self._cached_tools = None
        self._stop_requested = anyio.Event()
        self._runner_done = anyio.Event()
        if task_group is not None:
            try:
                await task_group.start(self._run_session)
            except Exception as exc:
                raise self._connect_error(exc) from self._safe_cause(exc)
            self._running = True
            return

        own = anyio.create_task_group()
        await own.__aenter__()
        try:
            await own.start(self._run_session)
        except BaseException as exc:
            own.cancel_scope.cancel()
            # Shield the group's own scope so a pending outer cancellation cannot interrupt
            # the exit; a new scope here would break the LIFO order of scopes.
            own.cancel_scope.shield = True
            await own.__aexit__(None, None, None)
            if isinstance(exc, Exception):
                raise self._connect_error(exc) from self._safe_cause(exc)
            raise
        self._own_task_group = own
        self._owner_task_id = anyio.get_current_task().id
        self._outer_client = _innermost_client.get()
        _innermost_client.set(self)
        self._running = True

    async def close(self, ignore_errors: bool = True) -> None:
        """End the session and release the server (for stdio: the process is gone after this).

        Waits until the SDK's shutdown has finished; that shutdown is bounded.

        :param ignore_errors: log a failure the session met (instead of raising it).
        :raises MCPError: if the client is not connected; if it was connected without a task
            group and close() is called from another task, or before closing a client
            connected later in the same task the same way; with ``ignore_errors=False``, also
            if the session had failed.
        """
        if not self._running:
            raise MCPError(
                f"MCP client {self.name!r} is not connected; call connect() (or use "
                "'async with client:') first"
            )
        own = self._own_task_group
        if own is not None and anyio.get_current_task().id != self._owner_task_id:
            raise MCPError(
                f"MCP client {self.name!r} must be closed by the task that connected it; "
                "to close it from another task, connect with connect(task_group=...)"
            )
        if own is not None:
            innermost = _innermost_client.get()
            if innermost is not self and innermost is not None:
                raise MCPError(
                    f"MCP client {self.name!r} must be closed after {innermost.name!r}, which "
                    "was connected later in the same task: clients close in reverse order, "
                    "like nested 'async with' blocks (or connect with connect(task_group=...))"
                )
            _innermost_client.set(self._outer_client)
        self._stop_requested.set()
        try:
            if own is not None:
                await own.__aexit__(None, None, None)
            else:
                await self._runner_done.wait()
        finally:
            self._own_task_group = None
            self._owner_task_id = None
            self._outer_client = None
            self._running = False
            self._session = None
            self._cached_tools = None
        failure, self._failure = self._failure, None
        if failure is not None and not ignore_errors:
            raise MCPError(
                f"MCP session with {self.name!r} had failed: {self._describe(failure)}"
            ) from self._safe_cause(failure)

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._running:
            await self.close()

    async def _run_session(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        started = False
        try:
            async with open_session(self._transport(), self.connect_timeout) as session:
                self._session = session
                started = True
                task_status.started()
                await self._stop_requested.wait()
        except Exception as exc:
            if not started:
                raise
            # Raising would cancel the task group, and with it the caller's own code.
            self._failure = exc
            logger.warning(
                "MCP session with %r ended with an error: %s", self.name, self._describe(exc)
            )
        finally:
            self._session = None
            self._runner_done.set()

    def _end_session(self, reason: str) -> None:
        """End the session from inside (any task of it, synchronously): pending calls fail
        naming *reason*, later calls are refused until the client reconnects."""
        if self._end_reason is None:
            self._end_reason = reason
            self._failure = MCPError(reason)
        self._stop_requested.set()

    def _require_session(self, action: str) -> ClientSession:
        session = self._session
        if session is not None and self._running:
            return session
        if self._running and self._failure is not None:
            raise MCPError(
                f"the session with MCP server {self.name!r} has ended "
                f"({self._describe(self._failure)}); cannot do {action}. "
                "Call close() and connect() again."
            )
        if self._running:
            raise MCPError(
                f"the session with MCP server {self.name!r} has ended; cannot do {action}. "
                "Call close() and connect() again."
            )
        raise MCPError(
            f"MCP client {self.name!r} is not connected; call connect() (or use "
            f"'async with client:') before {action}"
        )

    @asynccontextmanager
    async def _use_session(self, action: str) -> AsyncIterator[ClientSession]:
        yield self._require_session(action)
