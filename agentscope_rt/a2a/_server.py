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
from typing import TYPE_CHECKING, Any

import anyio
from a2a.types import AgentCard, Message, Part, StreamResponse, TaskState
from anyio.streams.memory import MemoryObjectReceiveStream
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .._asgi import hypercorn_config, hypercorn_serve, listening_socket
from ..agent import AgentBase, UserInputBase, UserInputData
from ..exception import A2AError, MessageFormatError
from ..message import Msg
from ._auth import A2AAuth, is_loopback
from ._card import build_agent_card, card_to_dict, to_agent_card
from ._contexts import Context, ContextPool
from ._formatter import A2AChatFormatter, to_python
from ._jsonrpc import Rpc, RpcError, parse_rpc, render_event, render_result
from ._tasks import ServedTask, TaskStore, current_task, text_message

if TYPE_CHECKING:
    from ..session import SessionBase

__all__ = ["A2AServer", "A2AUserInput"]

logger = logging.getLogger("agentscope_rt.a2a")

AgentSource = AgentBase | Callable[[str], AgentBase]

_CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
_HOOK_NAME = "a2a_server"
# How long CancelTask waits for the interrupted reply to end before answering.
_CANCEL_WAIT_S = 30.0
# How long a stopping server lets open requests (streams) finish.
_GRACEFUL_TIMEOUT_S = 2.0
# How long a client may take to send a request's body: a peer that stalls is cut off.
_BODY_TIMEOUT_S = 60.0
# How long the application's credential check may take before the request is refused.
_CHECK_TIMEOUT_S = 30.0
# Bodies larger than this are parsed in a worker thread (10 MiB of JSON holds the loop ~50 ms).
_THREADED_PARSE_BYTES = 1 << 20
MAX_BODY_BYTES = 10 * 1024 * 1024


class _Refused(Exception):
    """A request refused before it is read: the HTTP status and the JSON-RPC error."""

    def __init__(self, status: int, error: RpcError, headers: dict[str, str] | None = None) -> None:
        super().__init__(error.message)
        self.status = status
        self.error = error
        self.headers = headers

    def response(self) -> Response:
        return JSONResponse(self.error.response(), self.status, headers=self.headers)


class A2AServer:
    """Serves *agent* to A2A clients.

    :param agent: the agent (its replies run one at a time, as every agent's calls do; a task
        waiting for it is ``submitted``), or a factory called with a context id that returns
        the agent for that conversation (contexts reply concurrently; see *max_contexts*).
    :param agent_card: the card to publish (any form :func:`to_agent_card` reads); by default
        one is made from the agent's name and the URL the request came to. With *auth*, the
        published card declares its security schemes.
    :param description: the default card's description.
    :param user_name: the name of the messages the agent receives from clients.
    :param max_finished_tasks: finished tasks kept for ``GetTask`` (the oldest are forgotten).
    :param auth: the credentials a request needs (:class:`A2AAuth`); every JSON-RPC request
        (tasks, streams, the extended card) without one is refused with HTTP 401. The public
        card stays readable by anyone, as the A2A specification wants. Without *auth*,
        :meth:`serve` binds only loopback addresses unless told otherwise.
    :param extended_agent_card: a card for authenticated clients only (``GetExtendedAgentCard``,
        0.3's ``agent/getAuthenticatedExtendedCard``); needs *auth*.
    :param max_body_bytes: the largest request body read (10 MiB by default); a larger one is
        refused with HTTP 413 before the rest of it is read.
    :param max_contexts: with an agent factory, the contexts (and their agents) kept; the least
        recently used idle one is evicted beyond it.
    :param context_idle_s: with an agent factory, how long a context nobody uses is kept.
    :param session: with an agent factory, where an evicted context's agent state is saved
        (under the context id) and loaded from when the context returns.
    :raises TypeError: for an *agent* that is neither an agent nor callable.
    :raises ValueError: for limits that are not positive, or an extended card without *auth*.
    """

    def __init__(
        self,
        agent: AgentSource,
        agent_card: Any = None,
        *,
        description: str = "",
        user_name: str = "user",
        max_finished_tasks: int = 1000,
        auth: A2AAuth | None = None,
        extended_agent_card: Any = None,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_contexts: int = 1000,
        context_idle_s: float = 3600.0,
        session: SessionBase | None = None,
    ) -> None:
        if not isinstance(agent, AgentBase) and not callable(agent):
            raise TypeError(
                "agent must be an AgentBase or a callable(context_id) -> AgentBase, not "
                f"{type(agent).__name__}"
            )
        if auth is not None and not isinstance(auth, A2AAuth):
            raise TypeError(f"auth must be an A2AAuth, not {type(auth).__name__}")
        if min(max_body_bytes, max_contexts, context_idle_s) <= 0:
            raise ValueError("max_body_bytes, max_contexts and context_idle_s must be positive")
        if extended_agent_card is not None and auth is None:
            raise ValueError(
                "an extended agent card is for authenticated clients: pass auth=A2AAuth(...)"
            )
        self._agent_source = agent
        self._card = None if agent_card is None else to_agent_card(agent_card)
        self._extended = None if extended_agent_card is None else to_agent_card(extended_agent_card)
        self._description = description
        self._user_name = user_name
        self._auth = auth
        self._max_body = max_body_bytes
        self._single: Context | None = None
        self._contexts: ContextPool | None = None
        if isinstance(agent, AgentBase):
            # Hooked while the server runs (see _lifespan): the agent is the application's.
            self._single = Context(agent)
        else:
            self._contexts = ContextPool(
                agent,
                max_contexts=max_contexts,
                idle_s=context_idle_s,
                session=session,
                on_made=self._hook,
                on_evicted=_unhook,
            )
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

    def __repr__(self) -> str:
        return f"A2AServer(agent={self._agent_name()!r}, auth={self._auth!r})"

    # -- running ---------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        # The task group that runs the replies: a task outlives the request that started it
        # (a client may go away and ask for the task later), not the server.
        single = None if self._single is None else self._single.agent
        if single is not None:
            self._hook(single)
        try:
            async with anyio.create_task_group() as group:
                self._task_group = group
                if self._contexts is not None:
                    group.start_soon(self._sweep, self._contexts)
                try:
                    yield
                finally:
                    self._task_group = None
                    group.cancel_scope.cancel()
        finally:
            if single is not None:
                _unhook(single)
        if self._contexts is not None:
            await self._contexts.save_all()

    async def _sweep(self, contexts: ContextPool) -> None:
        """Evict idle contexts as time passes (new contexts evict too, see _reply)."""
        while True:
            await anyio.sleep(contexts.sweep_interval)
            contexts.evict(self._task_group)

    async def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        allow_unauthenticated: bool = False,
        task_status: anyio.abc.TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve on *host*:*port* with hypercorn (port 0: a free port) until cancelled.

        ``await task_group.start(server.serve)`` returns the server's URL once it accepts
        connections.

        :param allow_unauthenticated: serve a non-loopback address without ``auth`` (anyone
            who reaches it may run the agent); a warning is logged.
        :raises A2AError: for a non-loopback *host* without ``auth`` and without
            *allow_unauthenticated*.
        :raises OSError: when the address cannot be bound.
        """
        if self._auth is None and not is_loopback(host):
            if not allow_unauthenticated:
                raise A2AError(
                    f"A2AServer refuses to serve {host!r} without authentication: anyone who "
                    "reaches it could run the agent. Pass auth=A2AAuth(...) to A2AServer, or "
                    "allow_unauthenticated=True to serve() if a proxy in front checks callers"
                )
            logger.warning(
                "A2AServer serves %s without authentication: anyone who reaches it can run "
                "the agent",
                host,
            )
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

    def _agent_name(self) -> str:
        source = self._agent_source
        return str(getattr(source, "name", None) or getattr(source, "__name__", "agent"))

    def _card_for(self, url: str) -> AgentCard:
        card = self._card
        if card is None:
            # Made per request: a server reached under several names gives each its own URL.
            card = build_agent_card(self._agent_name(), url, description=self._description)
        if self._extended is not None:
            card = _copy(card)
            card.capabilities.extended_agent_card = True
        return card if self._auth is None else self._auth.declare(card)

    async def _rpc(self, request: Request) -> Response:
        rpc: Rpc | None = None
        try:
            await self._authenticate(request)
            rpc = parse_rpc(await self._json_body(request))
            return await self._dispatch(rpc, str(request.base_url))
        except _Refused as refused:
            return refused.response()
        except RpcError as exc:
            if exc.request_id is None and rpc is not None:
                exc.request_id = rpc.id
            return JSONResponse(exc.response())
        except Exception:
            # A fault of the server's own, not of the request: logged whole, answered -32603.
            logger.exception("A2A request %s failed", "?" if rpc is None else rpc.kind)
            error = RpcError.internal("the server failed to answer; see its log")
            error.request_id = None if rpc is None else rpc.id
            return JSONResponse(error.response())

    async def _authenticate(self, request: Request) -> None:
        """:raises _Refused: (401) for a request without valid credentials."""
        if self._auth is None:
            return
        try:
            with anyio.fail_after(_CHECK_TIMEOUT_S):
                allowed = await self._auth.allows(request.headers)
        except Exception as exc:
            # The application's check failed: say which, never with the headers it read.
            logger.error("A2AAuth's check raised %s: the request is refused", type(exc).__name__)
            allowed = False
        if not allowed:
            raise _Refused(
                401,
                RpcError.invalid_request(
                    "this A2A server needs credentials: send the ones its agent card's "
                    "securitySchemes name (e.g. Authorization: Bearer <token>)"
                ),
                {"WWW-Authenticate": self._auth.challenge()},
            )

    async def _json_body(self, request: Request) -> Any:
        """The request's body as JSON (``None`` when it is not JSON), read up to the limit.

        :raises _Refused: 413 for a body over the limit (said by Content-Length or found
            while reading), 408 for a client too slow to send it.
        """
        too_large = _Refused(
            413,
            RpcError.invalid_request(
                f"the request body is larger than this server's limit of {self._max_body} "
                "bytes (A2AServer's max_body_bytes); send a smaller message"
            ),
        )
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_body:
            raise too_large
        chunks: list[bytes] = []
        size = 0
        try:
            with anyio.fail_after(_BODY_TIMEOUT_S):
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > self._max_body:
                        raise too_large
                    chunks.append(chunk)
        except TimeoutError:
            raise _Refused(
                408, RpcError.invalid_request("the request body did not arrive in time")
            ) from None
        body = b"".join(chunks)
        if len(body) > _THREADED_PARSE_BYTES:
            return await anyio.to_thread.run_sync(_parse_json, body)
        return _parse_json(body)

    async def _dispatch(self, rpc: Rpc, base_url: str) -> Response:
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
        if rpc.kind == "card":
            if self._extended is None:
                raise RpcError(None, -32007, "Extended agent card is not configured")
            extended = self._auth.declare(self._extended) if self._auth else self._extended
            return JSONResponse({"jsonrpc": "2.0", "id": rpc.id, "result": card_to_dict(extended)})
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
        try:
            # Read now: a part the agent could not take is the client's error, not the task's.
            msg = await self._formatter.format_a2a_message(self._user_name, message)
        except MessageFormatError as exc:
            raise RpcError.invalid_params(str(exc)) from None
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
        self._task_group.start_soon(self._run, task, msg)
        return task, events

    async def _run(self, task: ServedTask, msg: Msg) -> None:
        token = current_task.set(task)
        try:
            await self._reply(task, msg)
        except Exception as exc:
            logger.exception("A2A task %s: the agent's reply failed", task.id)
            text = f"The agent failed: {type(exc).__name__}: {exc}"
            task.set_state(TaskState.TASK_STATE_FAILED, text_message(task, text))
        finally:
            current_task.reset(token)
            if not task.is_final:
                # Cancelled with the server: no listener must wait forever.
                task.set_state(TaskState.TASK_STATE_CANCELED)

    async def _reply(self, task: ServedTask, msg: Msg) -> None:
        async with self._context(task.context_id) as context:
            agent = context.agent
            with anyio.CancelScope() as scope:
                task.scope = scope
                async with context.lock:
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
        state = (
            TaskState.TASK_STATE_CANCELED
            if task.cancel_requested
            else TaskState.TASK_STATE_COMPLETED
        )
        # A reply the agent printed has reached the stream as progress already: the final
        # update does not carry it again (AgentScope's clients print every message they get).
        printed = task.last_printed
        announced = printed is not None and list(printed.parts) == list(answer.parts)
        task.set_state(state, answer, announce=not announced)

    @contextlib.asynccontextmanager
    async def _context(self, context_id: str) -> AsyncIterator[Context]:
        """The context's agent for one reply (it is not evicted meanwhile)."""
        if self._contexts is None:
            assert self._single is not None
            yield self._single
            return
        context = await self._contexts.enter(context_id)
        try:
            # A new context is the moment others may have to go.
            self._contexts.evict(self._task_group)
            yield context
        finally:
            self._contexts.leave(context_id, context)

    def _hook(self, agent: AgentBase) -> None:
        agent.register_instance_hook("post_print", _HOOK_NAME, self._printed)

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


def _unhook(agent: AgentBase) -> None:
    with contextlib.suppress(ValueError):
        agent.remove_instance_hook("post_print", _HOOK_NAME)


def _copy(card: AgentCard) -> AgentCard:
    out = AgentCard()
    out.CopyFrom(card)
    return out


def _parse_json(body: bytes) -> Any:
    """*body* as JSON, or ``None`` for what is not JSON (nested too deeply among it)."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


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
