"""Stateful MCP clients: one long-lived session, owned by a runner task.

Why a runner task. The SDK's transports and ``ClientSession`` are async context managers that
open task groups and cancel scopes, and anyio requires those to be entered and exited by the
same task, innermost first. AgentScope 1.0 enters them with an ``AsyncExitStack`` in whatever
task calls ``connect()`` and exits them in whatever task calls ``close()``; that corrupts the
cancel-scope stack as soon as the two differ or other scopes interleave, and an exception
raised between ``connect()`` and ``close()`` leaves them open in the caller's task (on trio
the run then ends in ``TrioInternalError`` and the caller's own error is never shown). Here a
*runner task* enters the transport and the session, runs the handshake, reports that it has
started, waits for a stop request and then exits the contexts itself. Calls from any task
share the session (the SDK multiplexes concurrent requests).

Where the runner lives:

* ``async with client:`` or ``await client.connect()`` ... ``await client.close()`` — in a
  task of the event loop that no task group owns (:func:`~agentscope_rt._backend.start_detached`),
  so nothing of the session sits in the caller's cancel scopes: an exception, a cancellation
  or a timeout between ``connect()`` and ``close()`` unwinds the caller normally, ``close()``
  may come from any task, in any order. A client never closed is closed when the event loop
  ends (with a warning).
* ``await client.connect(task_group=tg)`` — in the caller's task group: ``close()`` may come
  from any task, in any order, and the session ends at the latest when ``tg`` ends.

Guarantees. On ``close()`` (also when the caller of ``close()`` is cancelled), on
cancellation of ``connect()`` and when the server dies, the SDK's shutdown runs to completion
(for stdio: close stdin, wait, then terminate and kill the process tree, each step bounded
and shielded), so no subprocess or stream outlives the client. A failure of the runner never
cancels the caller's code: it is recorded, and the next call raises ``MCPError``. Connecting,
the handshake and listing tools are bounded by ``connect_timeout``.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Self

import anyio
import anyio.abc
from mcp import ClientSession

from .._backend import start_detached
from ..exception import MCPError
from ._client_base import DEFAULT_CONNECT_TIMEOUT, MCPClientBase
from ._session import TransportFactory, open_session

__all__ = ["StatefulClientBase"]

logger = logging.getLogger(__name__)


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
        self._start_failure: Exception | None = None

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

        :param task_group: a task group to run the session in (it ends at the latest with
            the group). Without it the session runs in a task of its own that no task group
            owns, so an exception between ``connect()`` and ``close()`` unwinds the caller
            normally. Either way :meth:`close` may be called from any task.
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
        else:
            await self._start_detached()
        self._running = True

    async def _start_detached(self) -> None:
        """Start the runner in a task no task group owns and wait until the session is up.

        :raises MCPError: if connecting failed (the runner has then ended).
        """
        started = anyio.Event()
        scope = anyio.CancelScope()
        self._start_failure = None
        start_detached(
            lambda: self._run_detached(scope, started), name=f"MCP session {self.name!r}"
        )
        try:
            await started.wait()
        except BaseException:
            # Cancelled while connecting: stop the runner and wait for the SDK's shutdown
            # (bounded), so no half-started server outlives the call.
            scope.cancel()
            with anyio.CancelScope(shield=True):
                await self._runner_done.wait()
            raise
        failure, self._start_failure = self._start_failure, None
        if failure is not None:
            raise self._connect_error(failure) from self._safe_cause(failure)

    async def _run_detached(self, scope: anyio.CancelScope, started: anyio.Event) -> None:
        # Never raises but the cancellation (see start_detached): a failure before the session
        # is up goes to connect(), a later one is recorded by _run_session.
        up = anyio.Event()
        try:
            with scope:
                await self._run_session(task_status=_SignalStarted(up, started))
        except Exception as exc:
            self._start_failure = exc
        except BaseException:
            if up.is_set() and not self._stop_requested.is_set():
                logger.warning(
                    "MCP client %r was never closed; its session ends with the event loop "
                    "(call close() or use 'async with client:')",
                    self.name,
                )
            raise
        finally:
            self._runner_done.set()
            started.set()

    async def close(self, ignore_errors: bool = True) -> None:
        """End the session and release the server (for stdio: the process is gone after this).

        Waits until the SDK's shutdown has finished, also when the calling task is cancelled
        meanwhile; that shutdown is bounded.

        :param ignore_errors: log a failure the session met (instead of raising it).
        :raises MCPError: if the client is not connected; with ``ignore_errors=False``, also
            if the session had failed.
        """
        if not self._running:
            raise MCPError(
                f"MCP client {self.name!r} is not connected; call connect() (or use "
                "'async with client:') first"
            )
        self._stop_requested.set()
        try:
            with anyio.CancelScope(shield=True):
                await self._runner_done.wait()
        finally:
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


class _SignalStarted:
    """The ``task_status`` of a runner no task group started: ``started()`` sets events."""

    def __init__(self, *events: anyio.Event) -> None:
        self._events = events

    def started(self, value: object = None) -> None:
        for event in self._events:
            event.set()
