"""RealtimeAgent against the scripted Realtime server: audio in, transcripts and audio out as
server events, tool calls run by the agent, the user speaking over the agent (barge-in),
stop() while a tool runs, and the agent's state."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest

from agentscope_rt.exception import MessageFormatError, ModelAPIError, StateError
from agentscope_rt.message import TextBlock
from agentscope_rt.realtime import (
    AudioFormat,
    ClientEvents,
    ClientEventType,
    ModelEvents,
    OpenAIRealtimeModel,
    RealtimeAgent,
    ServerEvents,
    ServerEventType,
)
from agentscope_rt.tool import Toolkit, ToolResponse

from ..tts._tts_servers import pcm_of, text_of
from ._realtime_server import STORY, STORY_REPEAT, RealtimeServer

T = ServerEventType


@pytest.fixture
def server() -> Iterator[RealtimeServer]:
    with RealtimeServer() as server:
        yield server


def said(text: str, rate: int = 24000) -> ClientEvents.ClientAudioAppendEvent:
    """The user's audio saying *text*, as the frontend sends it."""
    return ClientEvents.ClientAudioAppendEvent(
        session_id="s1",
        audio=base64.b64encode(pcm_of(text)).decode(),
        format=AudioFormat(type="audio/pcm", rate=rate),
    )


def model_for(server: RealtimeServer) -> OpenAIRealtimeModel:
    return OpenAIRealtimeModel("gpt-realtime", api_key="k", websocket_url=server.url)


async def read_until(receive: Any, done: Callable[[list[Any]], bool]) -> list[Any]:
    """The events read until *done* holds for them."""
    events: list[Any] = []
    with anyio.fail_after(20):
        async for event in receive:
            events.append(event)
            if done(events):
                return events
    raise AssertionError(f"the stream ended: {[e.type for e in events]}")


def count(events: list[Any], kind: ServerEventType) -> int:
    return sum(e.type == kind for e in events)


def audio_of(events: list[Any], item_id: str | None = None) -> str:
    return text_of(
        b"".join(
            base64.b64decode(e.delta)
            for e in events
            if e.type == T.AGENT_RESPONSE_AUDIO_DELTA and item_id in (None, e.item_id)
        )
    )


def transcript_of(events: list[Any], item_id: str | None = None) -> str:
    return "".join(
        e.delta
        for e in events
        if e.type == T.AGENT_RESPONSE_AUDIO_TRANSCRIPT_DELTA and item_id in (None, e.item_id)
    )


async def remembered(agent: RealtimeAgent) -> list[tuple[str, str, str]]:
    return [(m.name, m.role, m.get_text_content()) for m in await agent.memory.get_memory()]


def weather_toolkit(answer: str = "sunny") -> Toolkit:
    def get_weather(city: str) -> ToolResponse:
        """The weather of a city.

        Args:
            city: the city.
        """
        return ToolResponse(content=[TextBlock(text=answer)])

    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    return toolkit


async def test_a_spoken_question_answered_with_a_tool(server: RealtimeServer) -> None:
    agent = RealtimeAgent("Friday", "Be brief.", model_for(server), weather_toolkit())
    send, receive = anyio.create_memory_object_stream[Any](0)
    with send, receive:
        await agent.start(send)
        try:
            for piece in ("What is the ", "weather in Paris?"):
                await agent.handle_input(said(piece))
            events = await read_until(receive, lambda ev: count(ev, T.AGENT_RESPONSE_DONE) == 2)
        finally:
            await agent.stop()
    assert events[0].type == T.AGENT_READY
    assert {(e.agent_id, e.agent_name) for e in events} == {(agent.id, "Friday")}
    kinds = [e.type for e in events]
    assert kinds.index(T.AGENT_INPUT_STARTED) < kinds.index(T.AGENT_INPUT_DONE)
    transcribed = [e for e in events if e.type == T.AGENT_INPUT_TRANSCRIPTION_DONE]
    assert transcribed[0].transcript == "What is the weather in Paris?"
    call = next(e for e in events if e.type == T.AGENT_RESPONSE_TOOL_USE_DONE).tool_use
    assert (call.name, call.input) == ("get_weather", {"city": "Paris"})
    result = next(e for e in events if e.type == T.AGENT_RESPONSE_TOOL_RESULT).tool_result
    assert result.id == "call_1" and result.output[0].text == "sunny"
    # Audio and transcripts agree; the second answer speaks the tool's result.
    assert audio_of(events) == transcript_of(events) == "Let me check.It is sunny."
    sent = await server.log()
    assert sent[0]["session"]["tools"][0]["name"] == "get_weather"
    assert sent[-1]["item"] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": "sunny",
    }
    assert await remembered(agent) == [
        ("user", "user", "What is the weather in Paris?"),
        ("Friday", "assistant", "Let me check."),
        ("Friday", "assistant", "It is sunny."),
    ]
    assert not agent.started
    assert await anyio.to_thread.run_sync(server.closed.wait, 10.0)


async def test_the_user_speaking_over_the_agent_cuts_its_speech(server: RealtimeServer) -> None:
    agent = RealtimeAgent("Friday", "Tell stories.", model_for(server))
    send, receive = anyio.create_memory_object_stream[Any](0)

    def heard_two_pieces(events: list[Any]) -> bool:
        return transcript_of(events, "item_story") == "".join(STORY[:2])

    with send, receive:
        await agent.start(send)
        try:
            await agent.handle_input(said("Tell me a story?"))
            before = await read_until(receive, heard_two_pieces)
            # The provider holds the rest until the user speaks: interrupt now.
            await agent.handle_input(said("Stop. What time is it?"))
            after = await read_until(receive, lambda ev: count(ev, T.AGENT_RESPONSE_DONE) == 2)
        finally:
            await agent.stop()
    events = before + after
    # Nothing of the story said after the interruption went out (the provider sent it all).
    assert audio_of(events, "item_story") == STORY[0] * STORY_REPEAT + STORY[1] * STORY_REPEAT
    assert transcript_of(events, "item_story") == "".join(STORY[:2])
    assert audio_of(events, "item_out_1") == "I heard you."
    assert count(after, T.AGENT_INPUT_STARTED) == 1
    # The provider's copy is trimmed to the 200 ms the user heard, after the user spoke.
    sent = await server.log()
    kinds = [e["type"] for e in sent]
    truncate = sent[kinds.index("conversation.item.truncate")]
    assert truncate == {
        "type": "conversation.item.truncate",
        "item_id": "item_story",
        "content_index": 0,
        "audio_end_ms": 200,
    }
    assert kinds.count("conversation.item.truncate") == 1
    interruption = sent[kinds.index("conversation.item.truncate") - 1]
    assert text_of(base64.b64decode(interruption["audio"])) == "Stop. What time is it?"
    # ... and so is the agent's memory.
    assert await remembered(agent) == [
        ("user", "user", "Tell me a story?"),
        ("Friday", "assistant", "Once upon a time the"),
        ("user", "user", "Stop. What time is it?"),
        ("Friday", "assistant", "I heard you."),
    ]


async def test_speech_that_was_all_delivered_is_not_trimmed(server: RealtimeServer) -> None:
    agent = RealtimeAgent("Friday", "Be brief.", model_for(server))
    send, receive = anyio.create_memory_object_stream[Any](0)
    with send, receive:
        await agent.start(send)
        try:
            for question in ("Hello?", "Again?"):
                await agent.handle_input(said(question))
                await read_until(receive, lambda ev: count(ev, T.AGENT_RESPONSE_DONE) == 1)
        finally:
            await agent.stop()
    # The second question started while nothing of the agent was still playing.
    assert "conversation.item.truncate" not in [e["type"] for e in await server.log()]
    assert [text for *_, text in await remembered(agent)] == [
        "Hello?",
        "I heard you.",
        "Again?",
        "I heard you.",
    ]


async def test_stop_cancels_a_running_tool_call(server: RealtimeServer) -> None:
    started, finished = anyio.Event(), []

    async def get_weather(city: str) -> ToolResponse:
        """The weather of a city.

        Args:
            city: the city.
        """
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            finished.append(city)
        raise AssertionError("not reached")

    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    agent = RealtimeAgent("Friday", "Be brief.", model_for(server), toolkit)
    send, receive = anyio.create_memory_object_stream[Any](0)
    with send, receive:
        await agent.start(send)
        try:
            await agent.handle_input(said("What is the weather?"))
            await read_until(receive, lambda ev: count(ev, T.AGENT_RESPONSE_TOOL_USE_DONE) == 1)
            with anyio.fail_after(20):
                await started.wait()
        finally:
            await agent.stop()
    assert finished == ["Paris"]  # the tool was cancelled by stop()
    assert "conversation.item.create" not in [e["type"] for e in await server.log()]
    await agent.stop()  # twice is fine
    assert await anyio.to_thread.run_sync(server.closed.wait, 10.0)


async def test_state_saves_the_transcript_and_loads_agentscope_states(
    server: RealtimeServer,
) -> None:
    agent = RealtimeAgent("Friday", "Be brief.", model_for(server), weather_toolkit())
    send, receive = anyio.create_memory_object_stream[Any](0)
    with send, receive:
        await agent.start(send)
        try:
            await agent.handle_input(said("Hello?"))
            await read_until(receive, lambda ev: count(ev, T.AGENT_RESPONSE_DONE) == 1)
        finally:
            await agent.stop()
    state = json.loads(json.dumps(agent.state_dict()))
    assert set(state) == {"toolkit", "memory"}
    again = RealtimeAgent("Friday", "Be brief.", model_for(server), weather_toolkit())
    again.load_state_dict(state)
    assert await remembered(again) == [
        ("user", "user", "Hello?"),
        ("Friday", "assistant", "I heard you."),
    ]
    # AgentScope's RealtimeAgent saves only its toolkit: such a state loads, memory untouched.
    again.load_state_dict({"toolkit": state["toolkit"]})
    assert len(await again.memory.get_memory()) == 2
    with pytest.raises(StateError, match="nonsense"):
        again.load_state_dict({**state, "nonsense": 1})


async def test_start_refuses_what_it_cannot_use(server: RealtimeServer) -> None:
    agent = RealtimeAgent("Friday", "", model_for(server))
    with pytest.raises(TypeError, match="outgoing_queue"):
        await agent.start(object())
    assert not agent.started
    refused = OpenAIRealtimeModel("m", api_key="k", websocket_url="ws://127.0.0.1:9/v1/realtime")
    agent = RealtimeAgent("Friday", "", refused)
    send, receive = anyio.create_memory_object_stream[Any](0)
    with send, receive:
        with pytest.raises(ModelAPIError):
            await agent.start(send)
        assert not agent.started
        agent = RealtimeAgent("Friday", "", model_for(server))
        await agent.start(send)
        try:
            with pytest.raises(RuntimeError, match="already started"):
                await agent.start(send)
        finally:
            await agent.stop()


def test_client_events_from_json() -> None:
    event = ClientEvents.from_json(
        {
            "type": "client_audio_append",
            "session_id": "s",
            "audio": "AAA=",
            "format": {"type": "audio/pcm", "rate": 16000},
        }
    )
    assert isinstance(event, ClientEvents.ClientAudioAppendEvent)
    assert event.type == ClientEventType.CLIENT_AUDIO_APPEND and event.format.rate == 16000
    with pytest.raises(MessageFormatError, match="unknown client event type"):
        ClientEvents.from_json({"type": "client_dance"})
    with pytest.raises(MessageFormatError, match="bad client_text_append"):
        ClientEvents.from_json({"type": "client_text_append", "session_id": "s"})
    with pytest.raises(ValueError, match="'type'"):
        ClientEvents.from_json({"text": "hi"})  # type: ignore[arg-type]


def test_model_events_become_agent_events() -> None:
    model_event = ModelEvents.ModelInputStartedEvent(item_id="in_1", audio_start_ms=5)
    event = ServerEvents.from_model_event(model_event, agent_id="a1", agent_name="Ann")
    assert isinstance(event, ServerEvents.AgentInputStartedEvent)
    assert (event.type.value, event.item_id, event.audio_start_ms) == (
        "agent_input_started",
        "in_1",
        5,
    )
    assert (event.agent_id, event.agent_name) == ("a1", "Ann")
    with pytest.raises(ValueError, match="no agent event"):
        ServerEvents.from_model_event(
            ModelEvents.ModelSessionCreatedEvent(session_id="s"), agent_id="a", agent_name="A"
        )


async def test_audio_at_another_rate_is_resampled_for_the_model(server: RealtimeServer) -> None:
    agent = RealtimeAgent("Friday", "", model_for(server))
    send, receive = anyio.create_memory_object_stream[Any](0)
    with send, receive:
        await agent.start(send)
        try:
            await agent.handle_input(said("abcdef", rate=12000))
            await agent.handle_input(said("Hello?"))
            await read_until(receive, lambda ev: count(ev, T.AGENT_RESPONSE_DONE) == 1)
        finally:
            await agent.stop()
    sent = next(e for e in await server.log() if e["type"] == "input_audio_buffer.append")
    # 6 samples at 12 kHz are 12 at 24 kHz, interpolated between the originals.
    assert [ord(c) for c in text_of(base64.b64decode(sent["audio"]))] == [
        97, 98, 98, 99, 99, 100, 100, 101, 101, 102, 102, 102
    ]  # fmt: skip


async def test_every_interrupted_answer_is_cut(server: RealtimeServer) -> None:
    # The provider reuses the story's item id: a cut item is forgotten once its response ends.
    agent = RealtimeAgent("Friday", "Tell stories.", model_for(server))
    send, receive = anyio.create_memory_object_stream[Any](0)
    story = "".join(STORY[:2])
    with send, receive:
        await agent.start(send)
        try:
            for _ in range(2):
                await agent.handle_input(said("Tell me a story?"))
                await read_until(receive, lambda ev: transcript_of(ev, "item_story") == story)
                await agent.handle_input(said("Stop?"))
                await read_until(receive, lambda ev: count(ev, T.AGENT_RESPONSE_DONE) == 2)
        finally:
            await agent.stop()
    truncates = [e for e in await server.log() if e["type"] == "conversation.item.truncate"]
    assert [e["audio_end_ms"] for e in truncates] == [200, 200]
    assert [text for *_, text in await remembered(agent)] == [
        "Tell me a story?",
        "Once upon a time the",
        "Stop?",
        "I heard you.",
    ] * 2


async def test_speech_waiting_in_the_agent_is_dropped_when_the_user_speaks(
    server: RealtimeServer,
) -> None:
    # Three pieces arrive at once; the player takes the first and the user speaks before it
    # takes more: the two pieces waiting in the agent never go out.
    server.barge_after = 3
    agent = RealtimeAgent("Friday", "Tell stories.", model_for(server))
    send, receive = anyio.create_memory_object_stream[Any](0)
    with send, receive:
        await agent.start(send)
        try:
            await agent.handle_input(said("Tell me a story?"))
            before = await read_until(receive, lambda ev: audio_of(ev, "item_story") != "")
            await agent.handle_input(said("Stop?"))
            assert await anyio.to_thread.run_sync(server.truncated.wait, 20.0)
            after = await read_until(receive, lambda ev: count(ev, T.AGENT_RESPONSE_DONE) == 2)
        finally:
            await agent.stop()
    events = before + after
    assert audio_of(events, "item_story") == STORY[0] * STORY_REPEAT
    truncate = next(e for e in await server.log() if e["type"] == "conversation.item.truncate")
    assert (truncate["item_id"], truncate["audio_end_ms"]) == ("item_story", 100)
    # The transcript piece that was on its way may have gone out; memory keeps what did.
    delivered = transcript_of(events, "item_story")
    assert delivered in ("", STORY[0])
    kept = [text for name, _, text in await remembered(agent) if name == "Friday"]
    assert kept == ([delivered] if delivered else []) + ["I heard you."]


async def test_an_input_that_cannot_be_sent_is_skipped(server: RealtimeServer) -> None:
    agent = RealtimeAgent("Friday", "", model_for(server))
    send, receive = anyio.create_memory_object_stream[Any](0)
    broken = ClientEvents.ClientAudioAppendEvent(
        session_id="s", audio="not base64!", format=AudioFormat(type="audio/pcm", rate=16000)
    )
    with send, receive:
        await agent.start(send)
        try:
            await agent.handle_input(broken)
            await agent.handle_input(said("Hello?"))
            events = await read_until(receive, lambda ev: count(ev, T.AGENT_RESPONSE_DONE) == 1)
        finally:
            await agent.stop()
    assert transcript_of(events) == "I heard you."
    appended = [e for e in await server.log() if e["type"] == "input_audio_buffer.append"]
    assert len(appended) == 1


async def test_the_provider_closing_the_session_ends_the_agent_visibly(
    server: RealtimeServer,
) -> None:
    server.close_with = (1011, "Internal server error")
    agent = RealtimeAgent("Friday", "Be brief.", model_for(server))
    send, receive = anyio.create_memory_object_stream[Any](100)
    with send, receive:
        await agent.start(send)
        try:
            await agent.handle_input(said("Hello?"))
            events = await read_until(receive, lambda ev: count(ev, T.AGENT_ENDED) == 1)
            assert not agent.model.connected
            # Later input is dropped quietly, and the end is told once.
            await agent.handle_input(said("Anyone?"))
            await anyio.wait_all_tasks_blocked()
        finally:
            await agent.stop()
        assert [e.type for e in events] == [T.AGENT_READY, T.AGENT_ERROR, T.AGENT_ENDED]
        assert events[1].code == "1011"
        rest = []
        while True:
            try:
                rest.append(receive.receive_nowait())
            except anyio.WouldBlock:
                break
        assert all(e.type != T.AGENT_ENDED for e in rest)
