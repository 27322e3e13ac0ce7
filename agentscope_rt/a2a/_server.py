"""A2AServer: any agentscope-rt agent served over A2A (JSON-RPC and SSE, protocol 1.0 and 0.3).

The protocol handling is written here on Starlette rather than taken from a2a-sdk's server,
which runs on asyncio only; a2a-sdk's types and converters are used as they are. The app runs
under any ASGI server; :meth:`A2AServer.serve` runs it on hypercorn, under trio or asyncio.

A task's lifetime is one reply of the agent: the task is ``working`` while the agent replies,
``completed`` with the reply as its status message, ``canceled`` when ``CancelTask`` interrupted
the reply (its status message is then the agent's interrupt answer), ``failed`` when the reply
raised. A :class:`A2AUserInput` asked for the user's input inside the reply turns the task
``input-required`` until the client sends the answer (a message with the task's id).
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from a2a.types import AgentCard, Message, Part, StreamResponse, TaskState
from anyio.streams.memory import MemoryObjectReceiveStream
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .._asgi import hypercorn_config, hypercorn_serve, listening_socket
from ..agent import AgentBase, UserInputBase, UserInputData
from ..exception import A2AError
from ..message import Msg
from ._card import build_agent_card, card_to_dict, to_agent_card
from ._formatter import A2AChatFormatter, to_python
from ._jsonrpc import Rpc, RpcError, parse_rpc, render_event, render_result
from ._tasks import ServedTask, TaskStore, current_task, text_message

__all__ = ["A2AServer", "A2AUserInput"]

logger = logging.getLogger("agentscope_rt.a2a")

AgentSource = AgentBase | Callable[[str], AgentBase]

_CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
_HOOK_NAME = "a2a_server"
# How long CancelTask waits for the interrupted reply to end before answering.
_CANCEL_WAIT_S = 30.0
# How long a stopping server lets open requests (streams) finish.
_GRACEFUL_TIMEOUT_S = 2.0


class A2AServer:
    """Serves *agent* to A2A clients.

    :param agent: the agent (its replies run one at a time, as every agent's calls do; a task
        waiting for it is ``submitted``), or a factory called with a context id that returns
        the agent for that conversation (made once per context; contexts reply concurrently).
    :param agent_card: the card to publish (any form :func:`to_agent_card` reads); by default
        one is made from the agent's name and the URL the request came to.
    :param description: the default card's description.
    :param user_name: the name of the messages the agent receives from clients.
    :param max_finished_tasks: finished tasks kept for ``GetTask`` (the oldest are forgotten).
    :raises TypeError: for an *agent* that is neither an agent nor callable.
    """

    def __init__(
        self,
        agent: AgentSource,
        agent_card: Any = None,
        *,
        description: str = "",
        user_name: str = "user",
        max_finished_tasks: int = 1000,
    ) -> None:
        if not isinstance(agent, AgentBase) and not callable(agent):
            raise TypeError(
                "agent must be an AgentBase or a callable(context_id) -> AgentBase, not "
                f"{type(agent).__name__}"
            )
        self._agent_source = agent
        self._card = None if agent_card is None else to_agent_card(agent_card)
        self._description = description
        self._user_name = user_name
        self._agents: dict[str, AgentBase] = {}
        self._locks: dict[int, anyio.Lock] = {}
        self._hooked: set[int] = set()
        self._tasks = TaskStore(max_finished_tasks)
        self._formatter = A2AChatFormatter()
        self._task_group: anyio.abc.TaskGroup | None = None
        self.app = Starlette(
            routes=[
                *(Route(path, self._agent_card, methods=["GET"]) for path in _CARD_PATHS),
                Route("/", self._rpc, methods=["POST"]),
            ],
            lifespan=self._lifespan,
        )

    # -- running ---------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        # The task group that runs the replies: a task outlives the request that started it
        # (a client may go away and ask for the task later), not the server.
        async with anyio.create_task_group() as group:
            self._task_group = group
            try:
                yield
            finally:
                self._task_group = None
                group.cancel_scope.cancel()

    async def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        task_status: anyio.abc.TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve on *host*:*port* with hypercorn (port 0: a free port) until cancelled.

        ``await task_group.start(server.serve)`` returns the server's URL once it accepts
        connections.

        :raises OSError: when the address cannot be bound.
        """
        sock = listening_socket(host, port)
        bound_port = sock.getsockname()[1]
        config = hypercorn_config(sock, "agentscope_rt.a2a.http", _GRACEFUL_TIMEOUT_S)
        stopped = anyio.Event()

        async def run() -> None:
            # Shielded: hypercorn stops through its shutdown trigger (a cancellation reaching
            # its asyncio workers breaks their shutdown).
            with anyio.CancelScope(shield=True):
                await hypercorn_serve()(self.app, config, shutdown_trigger=stopped.wait)

        async with anyio.create_task_group() as group:
            group.start_soon(run)
            shown_host = f"[{host}]" if ":" in host else host
            task_status.started(f"http://{shown_host}:{bound_port}/")
            try:
                await anyio.sleep_forever()
            finally:
                stopped.set()

    # -- HTTP endpoints -----------------------------------------------------------------------

    async def _agent_card(self, request: Request) -> Response:
        return JSONResponse(card_to_dict(self._card_for(str(request.base_url))))

    def _card_for(self, url: str) -> AgentCard:
        if self._card is not None:
            return self._card
        # Made per request: a server reached under several names gives each its own URL.
        source = self._agent_source
        name = getattr(source, "name", None) or getattr(source, "__name__", "agent")
        return build_agent_card(str(name), url, description=self._description)

    async def _rpc(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            body = None
        rpc: Rpc | None = None
        try:
            rpc = parse_rpc(body)
            return await self._dispatch(rpc)
        except RpcError as exc:
            if exc.request_id is None and rpc is not None:
                exc.request_id = rpc.id
            return JSONResponse(exc.response())

    async def _dispatch(self, rpc: Rpc) -> Response:
        if rpc.kind == "send":
            task, events = await self._accept(rpc.request.message)
            async with events:
                if not rpc.request.configuration.return_immediately:
                    async for _event in events:
                        pass  # until the task ends or waits for input
            return JSONResponse(render_result(rpc, task.snapshot()))
        if rpc.kind == "stream":
            task, events = await self._accept(rpc.request.message)
            return _event_stream(rpc, events)
        task = self._task(rpc.request.id)
        if rpc.kind == "get":
            length = rpc.request.history_length if rpc.request.HasField("history_length") else None
            return JSONResponse(render_result(rpc, task.snapshot(length)))
        if rpc.kind == "cancel":
            await self._cancel(task)
            return JSONResponse(render_result(rpc, task.snapshot()))
        # resubscribe
        if task.is_final:
            raise RpcError.unsupported(rpc.id, f"task {task.id} has ended")
        return _event_stream(rpc, task.subscribe())

    def _task(self, task_id: str) -> ServedTask:
        task = self._tasks.get(task_id)
        if task is None:
            raise RpcError.task_not_found(task_id)
        return task

    # -- tasks ----------------------------------------------------------------------------------

    async def _accept(
        self, message: Message
    ) -> tuple[ServedTask, MemoryObjectReceiveStream[StreamResponse]]:
        """Start a task for *message*, or give it to the task waiting for it; with the
        task's events from now on."""
        if not message.parts:
            raise RpcError.invalid_params("the message has no parts")
        if message.task_id:
            task = self._task(message.task_id)
            if not task.is_waiting:
                raise RpcError.unsupported(
                    None,
                    f"task {task.id} is {TaskState.Name(task.state)}: it takes no more "
                    "messages (only a task waiting for input does)",
                )
            try:
                task.answer(message)
            except anyio.WouldBlock:
                raise RpcError.unsupported(
                    None, f"task {task.id} already has an answer it has not taken up yet"
                ) from None
            return task, task.subscribe()
        if self._task_group is None:
            raise RpcError.internal("the server is not running (its lifespan has not started)")
        task = ServedTask(id=uuid.uuid4().hex, context_id=message.context_id or uuid.uuid4().hex)
        task.history.append(message)
        self._tasks.add(task)
        events = task.subscribe()
        self._task_group.start_soon(self._run, task, message)
        return task, events

    async def _run(self, task: ServedTask, message: Message) -> None:
        token = current_task.set(task)
        try:
            await self._reply(task, message)
        except Exception as exc:
            logger.exception("A2A task %s: the agent's reply failed", task.id)
            text = f"The agent failed: {type(exc).__name__}: {exc}"
            task.set_state(TaskState.TASK_STATE_FAILED, text_message(task, text))
        finally:
            current_task.reset(token)
            if not task.is_final:
                # Cancelled with the server: no listener must wait forever.
                task.set_state(TaskState.TASK_STATE_CANCELED)

    async def _reply(self, task: ServedTask, message: Message) -> None:
        msg = await self._formatter.format_a2a_message(self._user_name, message)
        agent = await self._agent_for(task.context_id)
        lock = self._locks.setdefault(id(agent), anyio.Lock())
        with anyio.CancelScope() as scope:
            task.scope = scope
            async with lock:
                task.set_state(TaskState.TASK_STATE_WORKING)
                task.replying_agent = agent
                try:
                    reply = await agent(msg)
                finally:
                    task.replying_agent = None
        task.scope = None
        if scope.cancelled_caught:
            task.set_state(TaskState.TASK_STATE_CANCELED)
            return
        answer = task.agent_message(await self._formatter.format([reply]))
        if task.cancel_requested:
            task.set_state(TaskState.TASK_STATE_CANCELED, answer)
        else:
            task.set_state(TaskState.TASK_STATE_COMPLETED, answer)

    async def _agent_for(self, context_id: str) -> AgentBase:
        source = self._agent_source
        if isinstance(source, AgentBase):
            agent = source
        else:
            found = self._agents.get(context_id)
            if found is None:
                made = source(context_id)
                if not isinstance(made, AgentBase):
                    raise TypeError(
                        f"the agent factory returned {type(made).__name__}, not an AgentBase"
                    )
                found = self._agents[context_id] = made
            agent = found
        if id(agent) not in self._hooked:
            agent.register_instance_hook("post_print", _HOOK_NAME, self._printed)
            self._hooked.add(id(agent))
        return agent

    async def _printed(self, agent: AgentBase, kwargs: dict[str, Any], output: Any) -> None:
        """Every whole message the agent prints goes to the task's listeners as progress."""
        task = current_task.get(None)
        msg = kwargs.get("msg")
        if task is None or not kwargs.get("last", True) or not isinstance(msg, Msg):
            return
        if task.replying_agent is not agent:
            return
        progress = task.agent_message(await self._formatter.format([msg]))
        if not progress.parts:
            return
        task.last_printed = progress
        task.set_state(TaskState.TASK_STATE_WORKING, progress)

    async def _cancel(self, task: ServedTask) -> None:
        if task.is_final:
            raise RpcError.not_cancelable(task.id, TaskState.Name(task.state))
        task.cancel_requested = True
        if task.replying_agent is not None:
            task.replying_agent.interrupt()
        elif task.scope is not None:
            task.scope.cancel()
        with anyio.move_on_after(_CANCEL_WAIT_S):
            await task.finished.wait()


class A2AUserInput(UserInputBase):
    """A :class:`UserAgent` input method that asks the client of the A2A task being served:
    the task becomes ``input-required`` (its status message is the last message the served
    agent printed) and the client's next message to that task is the user's answer.

    ``user.override_instance_input_method(A2AUserInput())`` on a UserAgent the served agent
    calls inside its reply. With a structured model, the answer's first data part (a JSON
    object) is the structured input.
    """

    async def __call__(
        self,
        agent_id: str,
        agent_name: str,
        *args: Any,
        structured_model: Any = None,
        **kwargs: Any,
    ) -> UserInputData:
        """The client's answer.

        :raises A2AError: when called outside a reply served by :class:`A2AServer`.
        """
        task = current_task.get(None)
        if task is None:
            raise A2AError(
                "A2AUserInput asks the client of an A2A task, but no task served by "
                "A2AServer is running here"
            )
        answer = await task.ask(agent_name)
        formatter = A2AChatFormatter()
        blocks = (await formatter.format_a2a_message(agent_name, answer)).get_content_blocks()
        structured = None
        if structured_model is not None:
            structured = next(
                (
                    value
                    for value in (_part_data(part) for part in answer.parts)
                    if isinstance(value, dict)
                ),
                None,
            )
        return UserInputData(blocks_input=list(blocks), structured_input=structured)


def _part_data(part: Part) -> Any:
    return to_python(part.data) if part.WhichOneof("content") == "data" else None


def _event_stream(rpc: Rpc, events: MemoryObjectReceiveStream[StreamResponse]) -> StreamingResponse:
    """The events as server-sent events, one JSON-RPC response each."""

    async def lines() -> AsyncIterator[str]:
        async with events:
            async for event in events:
                yield f"data: {json.dumps(render_event(rpc, event))}\n\n"

    return StreamingResponse(lines(), media_type="text/event-stream")
