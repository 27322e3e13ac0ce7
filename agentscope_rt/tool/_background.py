"""Background tool calls: tools registered with ``async_execution=True``.

A call of such a tool starts a task in the toolkit's task group and answers at once with the
task id; the model then uses the toolkit's ``view_task``, ``wait_task`` and ``cancel_task``
tools, which read the table kept here. A task's final chunk is kept until it is handed out
once; the task group (and so every task still running) ends with ``async with toolkit``.
"""

from __future__ import annotations

import uuid
from contextlib import aclosing
from typing import Any

import anyio
import anyio.abc
import attrs

from ..exception import ToolError
from ..message import ToolUseBlock
from ._execution import execute_tool, interrupted_response, text_response
from ._response import ToolResponse
from ._types import RegisteredToolFunction

__all__ = ["BackgroundTasks"]


@attrs.define(eq=False)
class _BackgroundTask:
    scope: anyio.CancelScope
    done: anyio.Event
    result: ToolResponse | None = None


class BackgroundTasks:
    """The background calls of one toolkit, by task id."""

    __slots__ = ("_tasks",)

    def __init__(self) -> None:
        self._tasks: dict[str, _BackgroundTask] = {}

    def start(
        self,
        task_group: anyio.abc.TaskGroup | None,
        tool: RegisteredToolFunction,
        kwargs: dict[str, Any],
        tool_call: ToolUseBlock,
        timeout: float | None,
    ) -> ToolResponse:
        """Start *tool* in *task_group*; the chunk telling the model the task id.

        :raises ToolError: if *task_group* is ``None`` (the toolkit is not open).
        """
        if task_group is None:
            raise ToolError(
                f"tool '{tool.name}' runs in the background (async_execution=True), which "
                "needs an open toolkit: use `async with toolkit:` around the calls"
            )
        task_id = uuid.uuid4().hex[:12]
        task = _BackgroundTask(scope=anyio.CancelScope(), done=anyio.Event())
        self._tasks[task_id] = task
        task_group.start_soon(_run, task, tool, kwargs, tool_call, timeout)
        return text_response(
            f"<system-reminder>Tool '{tool.name}' is executing asynchronously. Task ID: "
            f"{task_id}. Use view_task('{task_id}') to check status, wait_task('{task_id}') "
            f"to wait for completion, or cancel_task('{task_id}') to cancel the task."
            "</system-reminder>"
        )

    def view(self, task_id: str) -> ToolResponse:
        """The task's result if it has finished (then its id is forgotten), else its status."""
        task = self._tasks.get(task_id)
        if task is None:
            return _unknown_task(task_id)
        if not task.done.is_set():
            return text_response(f"Task {task_id} is still running.")
        return self._take_result(task_id, task)

    async def cancel(self, task_id: str) -> ToolResponse:
        """Cancel the task and wait until it has ended."""
        task = self._tasks.get(task_id)
        if task is None:
            return _unknown_task(task_id)
        if task.done.is_set():
            return text_response(f"Task {task_id} has already completed and cannot be cancelled.")
        task.scope.cancel()
        await task.done.wait()
        return text_response(f"Task {task_id} has been cancelled.")

    async def wait(self, task_id: str, timeout: float) -> ToolResponse:  # noqa: ASYNC109
        """The task's result once it finishes, or its status after *timeout* seconds."""
        task = self._tasks.get(task_id)
        if task is None:
            return _unknown_task(task_id)
        with anyio.move_on_after(timeout):
            await task.done.wait()
        if not task.done.is_set():
            return text_response(
                f"Task {task_id} is still running after waiting for {timeout} seconds."
            )
        return self._take_result(task_id, task)

    def _take_result(self, task_id: str, task: _BackgroundTask) -> ToolResponse:
        # A finished task's id is forgotten once its result is handed out; callers already
        # waiting on it (parallel wait_task calls) still get the result.
        self._tasks.pop(task_id, None)
        assert task.result is not None
        return task.result


async def _run(
    task: _BackgroundTask,
    tool: RegisteredToolFunction,
    kwargs: dict[str, Any],
    tool_call: ToolUseBlock,
    timeout: float | None,  # noqa: ASYNC109  (execute_tool enforces it, and reports it)
) -> None:
    last: ToolResponse | None = None
    try:
        with task.scope:
            async with aclosing(execute_tool(tool, kwargs, tool_call, timeout)) as chunks:
                async for chunk in chunks:
                    last = chunk
    finally:
        final = last if last is not None else interrupted_response(None)
        task.result = attrs.evolve(final, stream=False, is_last=True)
        task.done.set()


def _unknown_task(task_id: str) -> ToolResponse:
    return text_response(f"InvalidTaskIdError: Cannot find async task with ID {task_id}.")
