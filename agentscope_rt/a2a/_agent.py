"""A2AAgent: a remote A2A agent called like any other agent.

AgentScope's ``A2AAgent`` over a2a-sdk 1.x's client, which speaks protocol 1.0 or 0.3 to the
server as its card says. Each reply opens its own HTTP client and closes it, so an agent may be
used from any event loop (trio or asyncio) and leaks no connection.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from typing import Any, cast

import anyio
import httpx
from a2a.client import A2AClientError, Client, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor
from a2a.client.client_factory import TransportProducer
from a2a.client.interceptors import ClientCallInterceptor
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)

from ..agent import AgentBase
from ..exception import A2AError
from ..message import Msg
from ._auth import AgentCredentials
from ._card import to_agent_card
from ._formatter import A2AChatFormatter
from ._http import new_http_client
from ._jsonrpc import shorten

__all__ = ["A2AAgent", "Consumer"]

logger = logging.getLogger("agentscope_rt.a2a")

Consumer = Callable[[StreamResponse, AgentCard], Any]
"""Called with every event the remote agent streams and the agent's card (may be async)."""

# AgentScope's client waits this long for a remote reply.
_HTTP_TIMEOUT_S = 600.0
# How long an interrupted reply waits for the server to accept the task's cancellation.
_CANCEL_TIMEOUT_S = 10.0
# How long closing a reply's clients may take (a peer that never acknowledges is left).
_CLOSE_TIMEOUT_S = 5.0
_FINAL_STATES = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_REJECTED,
    }
)
_WAITING_STATES = frozenset(
    {TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED}
)


class _TaskView:
    """The remote task as the streamed events describe it so far (a2a-sdk 1.x streams the
    events one by one; 0.3's client handed over the task they add up to)."""

    def __init__(self) -> None:
        self.task: Task | None = None

    def apply(self, event: StreamResponse) -> Task | None:
        """Fold *event* in; the task after it, or ``None`` for a message event."""
        kind = event.WhichOneof("payload")
        if kind == "task":
            self.task = Task()
            self.task.CopyFrom(event.task)
        elif kind == "status_update":
            task = self._task(event.status_update.task_id, event.status_update.context_id)
            if task.status.HasField("message"):
                task.history.append(task.status.message)
            task.status.CopyFrom(event.status_update.status)
        elif kind == "artifact_update":
            update = event.artifact_update
            task = self._task(update.task_id, update.context_id)
            for artifact in task.artifacts:
                if artifact.artifact_id == update.artifact.artifact_id:
                    if update.append:
                        artifact.parts.extend(update.artifact.parts)
                    else:
                        artifact.CopyFrom(update.artifact)
                    break
            else:
                task.artifacts.append(update.artifact)
        else:
            return None
        return self.task

    def _task(self, task_id: str, context_id: str) -> Task:
        if self.task is None:
            self.task = Task(id=task_id, context_id=context_id)
        return self.task


async def _next_event(events: AsyncIterator[StreamResponse]) -> StreamResponse | None:
    """The next of *events* (``None`` at the end), with what a2a-sdk or httpx raise for a
    failed exchange as ``A2AClientError`` (a2a-sdk lets some through as they are: a
    ``UnicodeDecodeError`` for an answer that is not UTF-8, httpx's errors, parse errors)."""
    try:
        return await anext(events)
    except StopAsyncIteration:
        return None
    except A2AClientError:
        raise
    except (httpx.HTTPError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise A2AClientError(
            f"the A2A exchange failed: {type(exc).__name__}: {shorten(str(exc), 300)}"
        ) from exc


class A2AAgent(AgentBase):
    """A remote agent reached over the A2A protocol.

    As AgentScope's: it has no memory; observed messages are kept and sent, merged with the
    reply's input into one A2A message (role user), with the next reply, then forgotten. The
    reply is the remote agent's last message (a message, or the task's status message and
    artifacts). Structured output is not supported (A2A has none).

    Beyond AgentScope: when the remote task asks for input (``input-required``), the next reply
    continues that task; an interrupted reply cancels the remote task.

    :param agent_card: the remote agent's card: a2a-sdk 1.x ``AgentCard``, a protocol 0.3 card
        (a2a-sdk 0.3's model, as AgentScope builds them), or its JSON as a dict.
    :param client_config: a2a-sdk's ``ClientConfig`` (streaming, transports, an HTTP client);
        by default streaming JSON-RPC with a fresh HTTP client per reply (600 s timeout).
    :param consumers: callables (sync or async) given every streamed event
        (a2a-sdk 1.x ``StreamResponse``) and the card.
    :param additional_transport_producers: transport label -> a2a-sdk 1.x transport producer
        (``(card, url, config) -> ClientTransport``).
    :param credentials: the credentials to send, by the name of the card's security scheme
        they answer (``{"bearer": token}`` or ``{"apiKey": key}`` for an
        :class:`A2AServer` with :class:`A2AAuth`): each goes where its scheme says
        (``Authorization: Bearer``, the API key's header). Never shown in a repr or the state.
    :raises TypeError: for a card of another type, consumers that are not callable, or
        credentials that are not strings by scheme name.
    :raises A2AError: for a card dict that is not a valid card.
    """

    def __init__(
        self,
        agent_card: Any,
        client_config: ClientConfig | None = None,
        consumers: Sequence[Consumer] | None = None,
        additional_transport_producers: dict[str, TransportProducer] | None = None,
        *,
        credentials: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        card = to_agent_card(agent_card)
        if client_config is not None and not isinstance(client_config, ClientConfig):
            raise TypeError(
                f"client_config must be an a2a.client.ClientConfig, not "
                f"{type(client_config).__name__}"
            )
        for index, consumer in enumerate(consumers or ()):
            if not callable(consumer):
                raise TypeError(f"consumers[{index}] is not callable: {consumer!r}")
        self.name: str = card.name
        self.agent_card: AgentCard = card
        self._client_config = client_config or ClientConfig()
        self._consumers = list(consumers or ())
        self._transport_producers = dict(additional_transport_producers or {})
        self._credentials = None if credentials is None else AgentCredentials(credentials)
        self._observed_msgs: list[Msg] = []
        # (task id, context id) of a remote task waiting for our input.
        self._waiting_task: tuple[str, str] | None = None
        self.formatter = A2AChatFormatter()
        self.register_state("_observed_msgs", state_type=list[Msg])

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        """Keep *msg* to send with the next reply (nothing happens for ``None``)."""
        if msg is None:
            return
        if isinstance(msg, Msg):
            self._observed_msgs.append(msg)
        else:
            self._observed_msgs.extend(msg)

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        """Send the observed messages and *msg* to the remote agent as one A2A message and
        return its answer (printed as it arrives). The observed messages are forgotten once the
        remote agent has answered.

        :raises ValueError: when ``structured_model`` is passed (A2A has no structured output).
        :raises A2AError: when the remote agent answers nothing, or the remote task failed
            without a message.
        :raises A2AClientError: (a2a-sdk's) for transport failures and answers that cannot be
            read (not UTF-8, not JSON, not A2A), also when a2a-sdk or httpx raised another
            error for them.
        """
        if "structured_model" in kwargs:
            raise ValueError(
                "structured_model is not supported in A2AAgent.reply() due to the lack of "
                "structured output support in A2A protocol."
            )
        incoming = [] if msg is None else [msg] if isinstance(msg, Msg) else list(msg)
        message = await self.formatter.format([*self._observed_msgs, *incoming])
        if self._waiting_task is not None:
            message.task_id, message.context_id = self._waiting_task
        response = await self._exchange(SendMessageRequest(message=message))
        self._observed_msgs.clear()
        return response

    async def _exchange(self, request: SendMessageRequest) -> Msg:
        view = _TaskView()
        response: Msg | None = None
        shown: Any = None  # the content printed last: a repeat is not printed again
        async with self._client() as client:
            try:
                # aclosing: an interrupted stream is closed here, not left to the collector.
                stream = cast(AsyncGenerator[StreamResponse, None], client.send_message(request))
                async with aclosing(stream) as events:
                    while (event := await _next_event(events)) is not None:
                        await self._consume(event)
                        for msg in await self._answer(event, view):
                            if msg.content != shown:
                                await self.print(msg)
                                shown = msg.content
                            response = msg
            except anyio.get_cancelled_exc_class():
                await self._cancel_remote(client, view.task)
                raise
        task = view.task
        self._waiting_task = None
        if task is not None and task.status.state in _WAITING_STATES:
            self._waiting_task = (task.id, task.context_id)
        if response is not None:
            return response
        if task is not None and task.status.state in _FINAL_STATES - {
            TaskState.TASK_STATE_COMPLETED
        }:
            raise A2AError(
                f"the remote agent {self.name!r} ended task {task.id} as "
                f"{TaskState.Name(task.status.state)} without a message"
            )
        raise A2AError("No response received from remote agent")

    async def _answer(self, event: StreamResponse, view: _TaskView) -> list[Msg]:
        """The messages *event* brings: a message, or what the task now says."""
        if event.WhichOneof("payload") == "message":
            return [await self.formatter.format_a2a_message(self.name, event.message)]
        task = view.apply(event)
        if task is None:
            return []
        return await self.formatter.format_a2a_task(self.name, task)

    async def _consume(self, event: StreamResponse) -> None:
        for consumer in self._consumers:
            result = consumer(event, self.agent_card)
            if inspect.isawaitable(result):
                await result

    async def _cancel_remote(self, client: Client, task: Task | None) -> None:
        """Ask the server to cancel *task* (the reply was interrupted), bounded in time."""
        if task is None or not task.id or task.status.state in _FINAL_STATES:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_TIMEOUT_S):
            try:
                await client.cancel_task(CancelTaskRequest(id=task.id))
            except Exception as exc:
                logger.warning(
                    "%s: the remote task %s could not be cancelled: %s", self.name, task.id, exc
                )

    @asynccontextmanager
    async def _client(self) -> AsyncIterator[Client]:
        config = self._client_config
        own_http: httpx.AsyncClient | None = None
        if config.httpx_client is None:
            own_http = await new_http_client(_HTTP_TIMEOUT_S)
            config = dataclasses.replace(config, httpx_client=own_http)
        try:
            factory = ClientFactory(config)
            for label, producer in self._transport_producers.items():
                factory.register(label, producer)
            interceptors: list[ClientCallInterceptor] = []
            if self._credentials is not None:
                interceptors.append(AuthInterceptor(self._credentials))
            client = factory.create(self.agent_card, interceptors)
            try:
                yield client
            finally:
                with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT_S):
                    await client.close()
        finally:
            if own_http is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT_S):
                    await own_http.aclose()

    async def handle_interrupt(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        """Say that the reply was interrupted (metadata ``{"_is_interrupted": True}``) and keep
        the unanswered input and that notice to send with the next reply, as AgentScope does."""
        if msg is not None:
            await self.observe(msg)
        response = Msg(
            self.name,
            "I noticed that you have interrupted me. What can I do for you?",
            "assistant",
            metadata={"_is_interrupted": True},
        )
        await self.print(response, True)
        self._observed_msgs.append(response)
        return response
