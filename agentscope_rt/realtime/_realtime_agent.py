"""AgentScope's :class:`RealtimeAgent` on anyio: a realtime model's events become server events
for the frontend and the other agents, inputs from them go to the model, tools run in the
agent's own task group, and the user speaking over the agent cuts its speech (barge-in).

Three tasks, all in the task group :meth:`RealtimeAgent.start` opens and
:meth:`RealtimeAgent.stop` closes: the *forward* task sends inputs (:meth:`handle_input`) to the
model; the *intake* task reads the model's events, and cuts the agent's speech the moment the
provider reports that the user started speaking; the *response* task turns the events into
server events and delivers them to the outgoing stream. Tool calls run as tasks of the same
group, so :meth:`stop` cancels them.

What the user heard is what was delivered to the outgoing stream: hand :meth:`start` a stream
without buffer (``create_memory_object_stream(0)``) read by the player, so that a chunk counts
as delivered when the player takes it.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import logging
import math
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .._ids import new_id
from ..memory import InMemoryMemory, MemoryBase
from ..message import (
    AudioBlock,
    Base64Source,
    ImageBlock,
    Msg,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ..module import StateModule
from ..tool import Toolkit
from ._base import RealtimeModelBase
from ._client_events import ClientEvents
from ._model_events import ModelEvents
from ._server_events import ServerEvents

__all__ = ["RealtimeAgent"]

logger = logging.getLogger(__name__)

Deliver = Callable[[Any], Awaitable[Any]]

# Model events that map one to one onto agent events (AgentScope's list).
_DIRECT = (
    ModelEvents.ModelResponseCreatedEvent,
    ModelEvents.ModelResponseDoneEvent,
    ModelEvents.ModelResponseAudioDoneEvent,
    ModelEvents.ModelResponseAudioTranscriptDoneEvent,
    ModelEvents.ModelResponseToolUseDeltaEvent,
    ModelEvents.ModelInputTranscriptionDeltaEvent,
    ModelEvents.ModelInputTranscriptionDoneEvent,
    ModelEvents.ModelInputStartedEvent,
    ModelEvents.ModelInputDoneEvent,
    ModelEvents.ModelErrorEvent,
)


@dataclasses.dataclass
class _Speech:
    """One spoken output item of the agent: what of it was delivered (heard)."""

    item_id: str
    response_id: str
    samples: int = 0
    rate: int = 0
    text: list[str] = dataclasses.field(default_factory=list)
    finished: bool = False  # its audio-done event was delivered: all of it was heard
    cut: bool = False  # the user spoke over it: nothing more of it goes out
    saved: bool = False  # its transcript is in memory

    @property
    def heard_ms(self) -> int:
        return self.samples * 1000 // self.rate if self.rate else 0


def _deliverer(outgoing_queue: Any) -> Deliver:
    """The coroutine function that delivers one event to *outgoing_queue*.

    :raises TypeError: when it has neither an async ``send`` (an anyio memory object send
        stream) nor an async ``put`` (an ``asyncio.Queue`` under asyncio).
    """
    for method in ("send", "put"):
        deliver = getattr(outgoing_queue, method, None)
        if callable(deliver):
            return deliver
    raise TypeError(
        "outgoing_queue must have an async send(event) (an anyio memory object send stream) "
        f"or put(event), not {type(outgoing_queue).__name__}"
    )


def _pcm_samples(delta: str) -> int:
    """The number of 16-bit samples of base64 PCM, without decoding it."""
    return (len(delta) * 3 // 4 - delta[-2:].count("=")) // 2 if delta else 0


def _resample_pcm_delta(pcm_base64: str, sample_rate: int, target_rate: int) -> str:
    """Base64 16-bit mono PCM at *sample_rate* resampled to *target_rate* (linear
    interpolation; returned as is when the rates agree)."""
    if sample_rate == target_rate or not pcm_base64:
        return pcm_base64
    data = base64.b64decode(pcm_base64)
    source = [v for (v,) in struct.iter_unpack("<h", data[: len(data) // 2 * 2])]
    count = len(source) * target_rate // sample_rate
    if not source or not count:
        return ""
    step = sample_rate / target_rate
    out = []
    last = len(source) - 1
    for i in range(count):
        position = i * step
        left = int(position)
        right = min(left + 1, last)
        value = source[left] + (source[right] - source[left]) * (position - left)
        out.append(math.floor(value + 0.5))  # halves up: round() would alternate
    return base64.b64encode(struct.pack(f"<{count}h", *out)).decode()


class RealtimeAgent(StateModule):
    """A realtime (speech in, speech out) agent, as AgentScope's: a :class:`StateModule`,
    not an :class:`~agentscope_rt.agent.AgentBase`.

    :param name: the agent's name (in its events and its memory).
    :param sys_prompt: the instructions given to the model.
    :param model: the realtime model.
    :param toolkit: the tools the model may call (run by the agent).
    :param memory: where the transcript of the conversation goes (the user's transcribed
        speech and, of the agent's speech, what the user heard); an :class:`InMemoryMemory`
        by default. Saved with the agent's state.
    """

    def __init__(
        self,
        name: str,
        sys_prompt: str,
        model: RealtimeModelBase,
        toolkit: Toolkit | None = None,
        *,
        memory: MemoryBase | None = None,
    ) -> None:
        super().__init__()
        self.id = new_id()
        self.name = name
        self.sys_prompt = sys_prompt
        self.model = model
        self.toolkit = toolkit
        self.memory = memory if memory is not None else InMemoryMemory()
        # Inputs queue up before start() as in AgentScope; unbounded like its asyncio.Queue.
        self._incoming_send, self._incoming_receive = anyio.create_memory_object_stream[Any](
            math.inf
        )
        self._stack: contextlib.AsyncExitStack | None = None
        self._group: TaskGroup | None = None
        self._speech: dict[str, _Speech] = {}
        self._audio_send: tuple[str, anyio.CancelScope] | None = None
        self._ended = False  # an AgentEndedEvent went out for this session
        self._model_gone = False  # the model's connection ended: inputs go nowhere

    def __repr__(self) -> str:
        return f"RealtimeAgent(name={self.name!r}, model={self.model!r})"

    @property
    def started(self) -> bool:
        """Whether the agent runs (between :meth:`start` and :meth:`stop`)."""
        return self._stack is not None

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self, outgoing_queue: Any) -> None:
        """Connect the model and start the agent's tasks.

        Call :meth:`start` and :meth:`stop` from one task (the tasks live in a task group the
        agent opens here and closes in :meth:`stop`).

        :param outgoing_queue: where the agent's server events go: an anyio memory object send
            stream (or anything with an async ``send``; an ``asyncio.Queue`` works under
            asyncio). Without buffer, a delivered audio chunk is one the player took.
        :raises RuntimeError: when already started.
        :raises TypeError: for an *outgoing_queue* that can take no events.
        :raises ModelAPIError: when the model cannot connect (nothing is left running).
        """
        if self._stack is not None:
            raise RuntimeError(f"RealtimeAgent {self.name!r} is already started")
        deliver = _deliverer(outgoing_queue)
        stack = contextlib.AsyncExitStack()
        try:
            group = await stack.enter_async_context(anyio.create_task_group())
            model_send, model_receive = anyio.create_memory_object_stream[Any](math.inf)
            work_send, work_receive = anyio.create_memory_object_stream[Any](math.inf)
            for stream in (model_send, model_receive, work_send, work_receive):
                stack.callback(stream.close)
            tools = self.toolkit.get_json_schemas() if self.toolkit else None
            await self.model.connect(model_send, instructions=self.sys_prompt, tools=tools)
            stack.push_async_callback(self.model.disconnect)
            # First on exit: the tasks (tool calls included) are cancelled before the model
            # disconnects, so none of them sends to a closed connection.
            stack.callback(group.cancel_scope.cancel)
            self._speech.clear()
            self._ended = self._model_gone = False
            group.start_soon(self._forward_loop)
            group.start_soon(self._intake_loop, model_receive, work_send)
            group.start_soon(self._model_response_loop, work_receive, deliver)
        except BaseException:
            await stack.aclose()
            raise
        self._stack, self._group = stack, group

    async def stop(self) -> None:
        """Cancel the agent's tasks (running tool calls included) and disconnect the model.
        Safe to call twice, and before :meth:`start`."""
        stack, self._stack, self._group = self._stack, None, None
        self._audio_send = None
        if stack is not None:
            await stack.aclose()

    async def handle_input(self, event: ClientEvents.EventBase | ServerEvents.EventBase) -> None:
        """Take an input from the frontend (a client event) or another agent (its audio).

        Audio, text and images go to the model (audio resampled to the model's input rate);
        other events are ignored, as in AgentScope. Never blocks; inputs given before
        :meth:`start` are sent once it runs.
        """
        self._incoming_send.send_nowait(event)

    # -- state -------------------------------------------------------------------------------

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Restore the state saved by :meth:`state_dict`; a state AgentScope saved (which
        has no memory) loads too and leaves the memory as it is.

        :raises StateError: as :meth:`StateModule.load_state_dict`.
        """
        if isinstance(state_dict, dict) and "memory" not in state_dict:
            state_dict = {**state_dict, "memory": self.memory.state_dict()}
        super().load_state_dict(state_dict, strict)

    # -- inputs: outside ==> agent ==> model ---------------------------------------------------

    async def _forward_loop(self) -> None:
        async for event in self._incoming_receive:
            if self._model_gone:
                continue  # the session is over, and the frontend was told (AgentEndedEvent)
            try:
                block = self._block_of(event)
                if block is not None:
                    await self.model.send(block)
            except Exception as exc:  # bad audio, a closed or failing connection: go on
                logger.warning("RealtimeAgent %r could not send input: %s", self.name, exc)

    def _block_of(self, event: Any) -> AudioBlock | TextBlock | ImageBlock | None:
        """The block an input event sends to the model (``None``: nothing to send)."""
        rate = self.model.input_sample_rate
        if isinstance(event, ServerEvents.AgentResponseAudioDeltaEvent):
            delta = _resample_pcm_delta(event.delta, event.format.rate, rate)
            return AudioBlock(source=Base64Source(media_type=event.format.type, data=delta))
        if isinstance(event, ClientEvents.ClientAudioAppendEvent):
            audio = _resample_pcm_delta(event.audio, event.format.rate, rate)
            return AudioBlock(source=Base64Source(media_type=event.format.type, data=audio))
        if isinstance(event, ClientEvents.ClientTextAppendEvent):
            return TextBlock(text=event.text)
        if isinstance(event, ClientEvents.ClientImageAppendEvent):
            media_type = event.format.get("type", "image/jpeg")
            return ImageBlock(source=Base64Source(media_type=media_type, data=event.image))
        return None

    # -- the model's events: model ==> agent ---------------------------------------------------

    async def _intake_loop(
        self, model_receive: MemoryObjectReceiveStream[Any], work_send: MemoryObjectSendStream[Any]
    ) -> None:
        # Reads ahead of the response task: a barge-in is acted on when the provider reports
        # it, not after the audio queued before it has been delivered.
        async for event in model_receive:
            if isinstance(
                event,
                ModelEvents.ModelResponseAudioDeltaEvent
                | ModelEvents.ModelResponseAudioTranscriptDeltaEvent,
            ):
                self._speech_of(event)
            elif isinstance(event, ModelEvents.ModelInputStartedEvent):
                await self._barge_in()
            await work_send.send(event)

    def _speech_of(
        self,
        event: ModelEvents.ModelResponseAudioDeltaEvent
        | ModelEvents.ModelResponseAudioTranscriptDeltaEvent,
    ) -> _Speech:
        speech = self._speech.get(event.item_id)
        if speech is None:
            speech = self._speech[event.item_id] = _Speech(event.item_id, event.response_id)
        return speech

    async def _barge_in(self) -> None:
        """The user started speaking: cut every item the agent is still saying, trim the
        provider's context and the memory to what was delivered."""
        for speech in list(self._speech.values()):
            if speech.finished or speech.cut:
                continue
            speech.cut = True
            if self._audio_send is not None and self._audio_send[0] == speech.item_id:
                self._audio_send[1].cancel()  # the chunk on its way is not delivered
            try:
                await self.model.truncate(speech.item_id, speech.heard_ms)
            except Exception as exc:
                logger.warning("RealtimeAgent %r could not trim item: %s", self.name, exc)
            # The memory gets the item when its response ends: a transcript piece on its way
            # now is still delivered, and heard.

    async def _save_speech(self, speech: _Speech) -> None:
        if speech.saved:
            return
        speech.saved = True
        text = "".join(speech.text)
        if text:
            await self.memory.add(Msg(self.name, text, "assistant"))

    # -- agent ==> outside -------------------------------------------------------------------

    async def _model_response_loop(
        self, work_receive: MemoryObjectReceiveStream[Any], deliver: Deliver
    ) -> None:
        try:
            async for event in work_receive:
                await self._handle_model_event(event, deliver)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return  # nobody listens any more

    async def _handle_model_event(self, event: Any, deliver: Deliver) -> None:
        who = {"agent_id": self.id, "agent_name": self.name}
        if isinstance(event, ModelEvents.ModelResponseAudioDeltaEvent):
            await self._deliver_audio(event, deliver)
        elif isinstance(event, ModelEvents.ModelResponseAudioTranscriptDeltaEvent):
            speech = self._speech_of(event)
            if not speech.cut:
                await deliver(ServerEvents.from_model_event(event, **who))
                speech.text.append(event.delta)
        elif isinstance(event, ModelEvents.ModelResponseToolUseDoneEvent):
            await deliver(ServerEvents.from_model_event(event, **who))
            if self.toolkit is not None and self._group is not None:
                self._group.start_soon(self._acting, event.tool_use, deliver)
        elif isinstance(event, ModelEvents.ModelSessionCreatedEvent):
            await deliver(ServerEvents.AgentReadyEvent(agent_id=self.id, agent_name=self.name))
        elif isinstance(
            event, ModelEvents.ModelSessionEndedEvent | ModelEvents.WebsocketDisconnectEvent
        ):
            # The model's connection is gone (announced or not): the frontend hears it once.
            if isinstance(event, ModelEvents.WebsocketDisconnectEvent):
                self._model_gone = True
            if not self._ended:
                self._ended = True
                await deliver(ServerEvents.AgentEndedEvent(agent_id=self.id, agent_name=self.name))
        elif isinstance(event, _DIRECT):
            await deliver(ServerEvents.from_model_event(event, **who))
            await self._after_delivery(event)
        else:
            logger.debug("RealtimeAgent %r ignores %s", self.name, type(event).__name__)

    async def _deliver_audio(
        self, event: ModelEvents.ModelResponseAudioDeltaEvent, deliver: Deliver
    ) -> None:
        speech = self._speech_of(event)
        if speech.cut:
            return
        server_event = ServerEvents.from_model_event(event, agent_id=self.id, agent_name=self.name)
        with anyio.CancelScope() as scope:
            self._audio_send = (event.item_id, scope)
            try:
                await deliver(server_event)
            finally:
                self._audio_send = None
        if not scope.cancelled_caught:
            speech.samples += _pcm_samples(event.delta)
            speech.rate = event.format.rate

    async def _after_delivery(self, event: Any) -> None:
        """Record in memory what the delivered event completes."""
        if isinstance(event, ModelEvents.ModelResponseAudioDoneEvent):
            speech = self._speech.get(event.item_id)
            if speech is not None and not speech.cut:
                speech.finished = True
        elif isinstance(event, ModelEvents.ModelResponseAudioTranscriptDoneEvent):
            speech = self._speech.get(event.item_id)
            if speech is not None and not speech.cut:
                await self._save_speech(speech)
        elif isinstance(event, ModelEvents.ModelResponseDoneEvent):
            # The intake task may already know items of the next response: only this one's
            # are complete. A cut item is kept until then so that its pieces that were on
            # their way when the user spoke are dropped.
            done = event.response_id
            for speech in list(self._speech.values()):
                if speech.response_id == done:
                    await self._save_speech(speech)
            self._speech = {
                k: s
                for k, s in self._speech.items()
                if s.response_id != done and not (s.saved and not s.cut)
            }
        elif isinstance(event, ModelEvents.ModelInputTranscriptionDoneEvent):
            await self.memory.add(Msg("user", event.transcript, "user"))

    async def _acting(self, tool_use: ToolUseBlock, deliver: Deliver) -> None:
        """Run one tool call; send its result to the model and deliver it as an event."""
        if self.toolkit is None:
            return
        last = None
        async for chunk in self.toolkit.call_tool_function(tool_use):
            last = chunk
        if last is None:
            return
        result = ToolResultBlock(id=tool_use.id, name=tool_use.name, output=last.content)
        try:
            await self.model.send(result)
        except Exception as exc:
            logger.warning("RealtimeAgent %r could not send a tool result: %s", self.name, exc)
        event = ServerEvents.AgentResponseToolResultEvent(
            tool_result=result, agent_id=self.id, agent_name=self.name
        )
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await deliver(event)
