"""Served tasks: one A2A task per reply of a served agent, and who is listening to it."""

from __future__ import annotations

import contextvars
import math
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import anyio
from a2a.types import (
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = [
    "FINAL_STATES",
    "WAITING_STATES",
    "ServedTask",
    "TaskStore",
    "current_task",
    "text_message",
]

FINAL_STATES = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_REJECTED,
    }
)
# The task stops and waits for the client: a stream of events ends there too.
WAITING_STATES = frozenset(
    {TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED}
)

current_task: contextvars.ContextVar[ServedTask] = contextvars.ContextVar("a2a_served_task")
"""The task whose reply is running (set by the server for the reply's duration)."""


@dataclass(eq=False)
class ServedTask:
    """A task and its reply: state, status message, history, and the event listeners."""

    id: str
    context_id: str
    state: int = TaskState.TASK_STATE_SUBMITTED
    status_message: Message | None = None
    history: list[Message] = field(default_factory=list)
    listeners: list[MemoryObjectSendStream[StreamResponse]] = field(default_factory=list)
    # The reply's scope, cancelled when the task is cancelled before the agent takes it up.
    scope: anyio.CancelScope | None = None
    # The agent replying for this task (interrupted to cancel it) while it does.
    replying_agent: Any = None
    cancel_requested: bool = False
    last_printed: Message | None = None
    finished: anyio.Event = field(default_factory=anyio.Event)
    # The client's answers while the task waits for input.
    answers: tuple[MemoryObjectSendStream[Message], MemoryObjectReceiveStream[Message]] = field(
        default_factory=lambda: anyio.create_memory_object_stream[Message](1)
    )

    @property
    def is_final(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def is_waiting(self) -> bool:
        return self.state in WAITING_STATES

    def agent_message(self, message: Message) -> Message:
        """*message* as this task's agent message (role agent, the task's ids)."""
        out = Message()
        out.CopyFrom(message)
        out.role = Role.ROLE_AGENT
        out.task_id = self.id
        out.context_id = self.context_id
        return out

    def snapshot(self, history_length: int | None = None) -> Task:
        """The task as protocol messages carry it."""
        task = Task(id=self.id, context_id=self.context_id)
        task.status.CopyFrom(self._status())
        history = self.history
        if history_length is not None:
            history = history[-history_length:] if history_length > 0 else []
        task.history.extend(history)
        return task

    def _status(self) -> TaskStatus:
        status = TaskStatus(state=self.state)  # type: ignore[arg-type]
        status.timestamp.GetCurrentTime()
        if self.status_message is not None:
            status.message.CopyFrom(self.status_message)
        return status

    def set_state(
        self, state: int, message: Message | None = None, *, announce: bool = True
    ) -> None:
        """Move to *state* (with *message* as the status message) and tell every listener;
        the listeners of a final or waiting state are closed after it.

        :param announce: whether the listeners' update carries *message* (it is the task's
            status message either way, as ``GetTask`` shows it).
        """
        if self.status_message is not None:
            self.history.append(self.status_message)
        self.state = state
        self.status_message = message
        status = self._status() if announce else TaskStatus(state=state)  # type: ignore[arg-type]
        if not announce:
            status.timestamp.GetCurrentTime()
        event = StreamResponse(
            status_update=TaskStatusUpdateEvent(
                task_id=self.id, context_id=self.context_id, status=status
            )
        )
        ends = self.is_final or self.is_waiting
        self.publish(event, close=ends)
        if self.is_final:
            for end in self.answers:
                end.close()
            self.finished.set()

    def publish(self, event: StreamResponse, *, close: bool = False) -> None:
        """Give *event* to every listener (a listener that went away is dropped)."""
        for listener in list(self.listeners):
            try:
                listener.send_nowait(event)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self.listeners.remove(listener)
        if close:
            for listener in self.listeners:
                listener.close()
            self.listeners.clear()

    def answer(self, message: Message) -> None:
        """Give the client's *message* to the reply waiting for input.

        :raises anyio.WouldBlock: when an earlier answer has not been taken up yet.
        """
        self.answers[0].send_nowait(message)
        self.history.append(message)

    async def ask(self, agent_name: str) -> Message:
        """Wait for the client's input (the task is ``input-required`` meanwhile; its status
        message is the last message the agent printed) and return the client's answer."""
        question = self.last_printed or text_message(self, f"{agent_name} needs your input")
        self.last_printed = None
        self.set_state(TaskState.TASK_STATE_INPUT_REQUIRED, question)
        answer = await self.answers[1].receive()
        self.set_state(TaskState.TASK_STATE_WORKING)
        return answer

    def subscribe(self) -> MemoryObjectReceiveStream[StreamResponse]:
        """A stream of this task's events from now on, starting with the task itself; it ends
        when the task ends or waits for input."""
        send, receive = anyio.create_memory_object_stream[StreamResponse](math.inf)
        send.send_nowait(StreamResponse(task=self.snapshot()))
        self.listeners.append(send)
        return receive


def text_message(task: ServedTask, text: str) -> Message:
    """A text message from the agent of *task*."""
    return task.agent_message(Message(message_id=uuid.uuid4().hex, parts=[Part(text=text)]))


class TaskStore:
    """The tasks a server knows: every unfinished one, and the latest finished ones (the
    oldest finished task is forgotten beyond *max_finished*)."""

    def __init__(self, max_finished: int) -> None:
        self._tasks: OrderedDict[str, ServedTask] = OrderedDict()
        self._max_finished = max_finished

    def add(self, task: ServedTask) -> None:
        self._tasks[task.id] = task
        self._trim()

    def get(self, task_id: str) -> ServedTask | None:
        return self._tasks.get(task_id)

    def __len__(self) -> int:
        return len(self._tasks)

    def _trim(self) -> None:
        finished = [key for key, task in self._tasks.items() if task.is_final]
        for key in finished[: max(0, len(finished) - self._max_finished)]:
            del self._tasks[key]
