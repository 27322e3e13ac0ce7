"""OpenAIRealtimeModel against a local server playing a scripted Realtime session: audio in,
transcripts and audio out, a tool call and its result, errors, disconnects."""

from __future__ import annotations

import functools

import anyio
import pytest

from agentscope_rt.message import TextBlock, ToolResultBlock
from agentscope_rt.realtime import ModelEvents, ModelEventType, OpenAIRealtimeModel

from ._provider_servers import WEATHER_TOOLS, audio_block, connected, serving, spoken, until
from ._realtime_server import RealtimeServer

KEY = "sk-realtime-secret-42"


server = serving(RealtimeServer)
_audio = functools.partial(audio_block, rate=24000)


async def test_a_spoken_question_with_a_tool_call(server: RealtimeServer) -> None:
    model = OpenAIRealtimeModel("gpt-realtime", api_key=KEY, websocket_url=server.url)
    async with connected(model, "Be brief.", WEATHER_TOOLS) as receive:
        for piece in ("What is the ", "weather in Paris?"):
            await model.send(_audio(piece))
        first = await until(receive, ModelEventType.MODEL_RESPONSE_DONE)
        tool_done = [e for e in first if isinstance(e, ModelEvents.ModelResponseToolUseDoneEvent)]
        call = tool_done[0].tool_use
        assert (call.id, call.name, call.input) == ("call_1", "get_weather", {"city": "Paris"})
        await model.send(ToolResultBlock(id=call.id, name=call.name, output="sunny"))
        second = await until(receive, ModelEventType.MODEL_RESPONSE_DONE)
    kinds = [e.type for e in first]
    assert kinds[:4] == [
        ModelEventType.MODEL_SESSION_CREATED,
        ModelEventType.MODEL_INPUT_STARTED,
        ModelEventType.MODEL_INPUT_DONE,
        ModelEventType.MODEL_INPUT_TRANSCRIPTION_DELTA,
    ]
    transcript = [e for e in first if e.type == ModelEventType.MODEL_INPUT_TRANSCRIPTION_DONE]
    assert transcript[0].transcript == "What is the weather in Paris?"
    # The tool-use deltas carry the arguments so far.
    deltas = [
        e.tool_use.raw_input
        for e in first
        if e.type == ModelEventType.MODEL_RESPONSE_TOOL_USE_DELTA
    ]
    assert deltas[-1] == '{"city": "Paris"}' and deltas[0] == deltas[-1][:6]
    done = first[-1]
    assert (done.response_id, done.input_tokens, done.output_tokens) == ("resp_1", 9, 4)
    # The second response speaks the tool's result: audio and transcript agree.
    assert spoken(second) == ("It is sunny.", "It is sunny.")
    assert all(
        e.format.rate == 24000
        for e in second
        if e.type == ModelEventType.MODEL_RESPONSE_AUDIO_DELTA
    )
    # What the client sent: the session, the audio, the tool's output.
    session = server.received[0]
    assert session["type"] == "session.update"
    assert session["session"]["instructions"] == "Be brief."
    assert session["session"]["tools"][0]["name"] == "get_weather"
    assert session["session"]["audio"]["input"]["transcription"] == {"model": "whisper-1"}
    assert server.received[-1]["item"] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": "sunny",
    }
    assert server.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(model) and KEY not in repr(vars(model))
    assert await anyio.to_thread.run_sync(server.closed.wait, 10.0)


async def test_provider_errors_and_a_closed_connection_become_events(
    server: RealtimeServer,
) -> None:
    model = OpenAIRealtimeModel("gpt-realtime", api_key=KEY, websocket_url=server.url)
    async with connected(model) as receive:
        await model.send(TextBlock(text="hello"))
        events = await until(receive, ModelEventType.MODEL_ERROR)
        assert events[-1].code == "unsupported" and events[-1].message == "no text here"
    assert not model.connected
    with pytest.raises(RuntimeError, match="not connected"):
        await model.send(TextBlock(text="again"))


async def test_a_websocket_url_refused_is_named_without_its_credentials() -> None:
    from agentscope_rt._provider.websocket import connect

    with pytest.raises(ValueError, match="not a WebSocket URL") as refused:
        async with connect("https://bob:pa55word@127.0.0.1:9/v1?key=s3cret", {}):
            pass
    assert "pa55word" not in str(refused.value) and "s3cret" not in str(refused.value)
