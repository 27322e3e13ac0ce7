"""OpenAIRealtimeModel against a local server playing a scripted Realtime session: audio in,
transcripts and audio out, a tool call and its result, errors, disconnects."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from agentscope_rt.exception import ModelAPIError
from agentscope_rt.message import AudioBlock, Base64Source, TextBlock, ToolResultBlock
from agentscope_rt.realtime import ModelEvents, ModelEventType, OpenAIRealtimeModel

from ..tts._tts_servers import pcm_of, text_of
from ._provider_servers import answer_after_bad_frame, deaf_listener_closes
from ._realtime_server import RealtimeServer

KEY = "sk-realtime-secret-42"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather of a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


@pytest.fixture
def server() -> Iterator[RealtimeServer]:
    with RealtimeServer() as server:
        yield server


def _audio(text: str) -> AudioBlock:
    data = base64.b64encode(pcm_of(text)).decode()
    return AudioBlock(source=Base64Source(media_type="audio/pcm;rate=24000", data=data))


async def _until(receive: Any, kind: ModelEventType) -> list[Any]:
    events = []
    with anyio.fail_after(15):
        async for event in receive:
            events.append(event)
            if event.type == kind:
                return events
    raise AssertionError(f"the stream ended before {kind}")


async def test_a_spoken_question_with_a_tool_call(server: RealtimeServer) -> None:
    model = OpenAIRealtimeModel("gpt-realtime", api_key=KEY, websocket_url=server.url)
    send, receive = anyio.create_memory_object_stream[Any](math.inf)
    await model.connect(send, "Be brief.", TOOLS)
    try:
        for piece in ("What is the ", "weather in Paris?"):
            await model.send(_audio(piece))
        first = await _until(receive, ModelEventType.MODEL_RESPONSE_DONE)
        tool_done = [e for e in first if isinstance(e, ModelEvents.ModelResponseToolUseDoneEvent)]
        call = tool_done[0].tool_use
        assert (call.id, call.name, call.input) == ("call_1", "get_weather", {"city": "Paris"})
        await model.send(ToolResultBlock(id=call.id, name=call.name, output="sunny"))
        second = await _until(receive, ModelEventType.MODEL_RESPONSE_DONE)
    finally:
        await model.disconnect()
        send.close()
        receive.close()
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
    audio = b"".join(
        base64.b64decode(e.delta)
        for e in second
        if e.type == ModelEventType.MODEL_RESPONSE_AUDIO_DELTA
    )
    words = "".join(
        e.delta for e in second if e.type == ModelEventType.MODEL_RESPONSE_AUDIO_TRANSCRIPT_DELTA
    )
    assert text_of(audio) == words == "It is sunny."
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
    send, receive = anyio.create_memory_object_stream[Any](math.inf)
    await model.connect(send, "", None)
    try:
        await model.send(TextBlock(text="hello"))
        events = await _until(receive, ModelEventType.MODEL_ERROR)
        assert events[-1].code == "unsupported" and events[-1].message == "no text here"
    finally:
        await model.disconnect()
        send.close()
        receive.close()
    assert not model.connected
    with pytest.raises(RuntimeError, match="not connected"):
        await model.send(TextBlock(text="again"))


async def test_a_refused_connection_is_a_model_api_error() -> None:
    model = OpenAIRealtimeModel(
        "gpt-realtime", api_key=KEY, websocket_url="ws://127.0.0.1:9/v1/realtime"
    )
    send, receive = anyio.create_memory_object_stream[Any](1)
    with send, receive, pytest.raises(ModelAPIError):
        await model.connect(send, "", None)
    assert not model.connected


# One frame the parser cannot take, each kind: it is reported once and skipped.
BAD_FRAMES = [
    pytest.param(b"\xff\xfe not UTF-8", id="binary-not-utf8"),
    pytest.param(json.dumps({"type": "error", "error": f"bad key {KEY}"}), id="error-string"),
    pytest.param(
        json.dumps({"type": "response.output_audio.delta", "item_id": "i", "delta": 5}),
        id="audio-delta-number",
    ),
]


@pytest.mark.parametrize("frame", BAD_FRAMES)
async def test_a_bad_frame_is_reported_and_skipped(
    server: RealtimeServer, frame: str | bytes
) -> None:
    server.preamble = [frame]
    model = OpenAIRealtimeModel("gpt-realtime", api_key=KEY, websocket_url=server.url)
    opening, answer = await answer_after_bad_frame(model, _audio("Can you hear me?"))
    errors = [e for e in opening if e.type == ModelEventType.MODEL_ERROR]
    assert len(errors) == 1 and KEY not in errors[0].message
    assert answer[-1].type == ModelEventType.MODEL_RESPONSE_DONE


async def test_the_reader_closes_the_connection_when_nobody_listens(
    server: RealtimeServer,
) -> None:
    model = OpenAIRealtimeModel("gpt-realtime", api_key=KEY, websocket_url=server.url)
    await deaf_listener_closes(model, server)


async def test_a_numeric_response_id_does_not_fail_the_response_s_events(
    server: RealtimeServer,
) -> None:
    # Kept for the response's later events: as a number it failed each of them.
    delta = {"type": "response.output_audio.delta", "item_id": "i", "delta": "AAA="}
    server.preamble = [json.dumps({"type": "response.created", "response": {"id": 5}})]
    server.preamble.append(json.dumps(delta))
    model = OpenAIRealtimeModel("gpt-realtime", api_key=KEY, websocket_url=server.url)
    opening, _ = await answer_after_bad_frame(model, _audio("Can you hear me?"))
    kinds = [e.type for e in opening]
    assert kinds[:2] == [
        ModelEventType.MODEL_RESPONSE_CREATED,
        ModelEventType.MODEL_RESPONSE_AUDIO_DELTA,
    ]
    assert opening[1].response_id == "5"
    assert ModelEventType.MODEL_ERROR not in kinds


async def test_a_websocket_url_refused_is_named_without_its_credentials() -> None:
    from agentscope_rt._provider.websocket import connect

    with pytest.raises(ValueError, match="not a WebSocket URL") as refused:
        async with connect("https://bob:pa55word@127.0.0.1:9/v1?key=s3cret", {}):
            pass
    assert "pa55word" not in str(refused.value) and "s3cret" not in str(refused.value)
