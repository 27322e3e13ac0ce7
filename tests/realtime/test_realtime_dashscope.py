"""DashScopeRealtimeModel against a local server playing a scripted Qwen-Omni realtime session:
audio in, transcripts and audio out, the user speaking over the model, tools (which the API
does not take), a provider error and a closed connection."""

from __future__ import annotations

import base64
import functools
import json
import logging

import anyio
import pytest

from agentscope_rt.exception import ModelAPIError
from agentscope_rt.message import (
    AudioBlock,
    Base64Source,
    ImageBlock,
    TextBlock,
    ToolResultBlock,
    URLSource,
)
from agentscope_rt.realtime import DashScopeRealtimeModel, ModelEvents, ModelEventType

from ._provider_servers import DashScopeServer, audio_block, connected, serving, spoken, until

KEY = "sk-dashscope-secret-42"
MODEL = "qwen3-omni-flash-realtime"
T = ModelEventType
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]


server = serving(DashScopeServer)
_audio = functools.partial(audio_block, rate=16000)


def _model(server: DashScopeServer, name: str = MODEL) -> DashScopeRealtimeModel:
    base = server.url.rsplit("?", 1)[0]
    return DashScopeRealtimeModel(name, api_key=KEY, voice="Ethan", websocket_url=base)


async def test_a_spoken_question_and_its_spoken_answer(server: DashScopeServer) -> None:
    model = _model(server)
    async with connected(model, "Be brief.", None) as receive:
        for piece in ("Can you ", "hear me?"):
            await model.send(_audio(piece))
        events = await until(receive, T.MODEL_RESPONSE_DONE)
    kinds = [e.type for e in events]
    assert kinds[:6] == [
        T.MODEL_SESSION_CREATED,
        T.MODEL_INPUT_STARTED,
        T.MODEL_INPUT_DONE,
        T.MODEL_INPUT_TRANSCRIPTION_DONE,
        T.MODEL_RESPONSE_CREATED,
        T.MODEL_RESPONSE_AUDIO_DELTA,
    ]
    assert events[0].session_id == "sess_ds"
    assert events[3].transcript == "Can you hear me?"
    assert spoken(events) == ("I heard you.", "I heard you.")
    deltas = [e for e in events if e.type == T.MODEL_RESPONSE_AUDIO_DELTA]
    assert {(e.response_id, e.item_id, e.format.rate) for e in deltas} == {
        ("resp_1", "item_out_1", 24000)
    }
    assert kinds[-3:] == [
        T.MODEL_RESPONSE_AUDIO_DONE,
        T.MODEL_RESPONSE_AUDIO_TRANSCRIPT_DONE,
        T.MODEL_RESPONSE_DONE,
    ]
    assert (events[-1].response_id, events[-1].input_tokens, events[-1].output_tokens) == (
        "resp_1",
        7,
        3,
    )
    # What the client sent: AgentScope's session, then the audio.
    session = server.received[0]
    assert session["type"] == "session.update"
    assert session["session"] == {
        "instructions": "Be brief.",
        "modalities": ["audio", "text"],
        "input_audio_format": "pcm16",
        "output_audio_format": "pcm24",
        "voice": "Ethan",
        "input_audio_transcription": {"model": "gummy-realtime-v1"},
        "turn_detection": {"type": "server_vad", "threshold": 0.5, "silence_duration_ms": 800},
    }
    assert server.received[1]["type"] == "input_audio_buffer.append"
    assert server.query == {"model": MODEL}
    assert server.headers["authorization"] == f"Bearer {KEY}"
    assert server.headers["x-dashscope-datainspection"] == "disable"
    assert KEY not in repr(model) and KEY not in repr(vars(model))
    assert await anyio.to_thread.run_sync(server.closed.wait, 10.0)


async def test_the_user_speaking_over_the_model(server: DashScopeServer) -> None:
    model = _model(server)
    async with connected(model) as receive:
        await model.send(_audio("Tell me a story?"))
        await until(receive, T.MODEL_RESPONSE_AUDIO_DELTA)
        await model.send(_audio("Stop."))
        barge_in = await until(receive, T.MODEL_RESPONSE_DONE)
        await model.send(_audio(" Are you there?"))
        answer = await until(receive, T.MODEL_RESPONSE_DONE)
    started = [e for e in barge_in if e.type == T.MODEL_INPUT_STARTED]
    assert [(e.item_id, e.audio_start_ms) for e in started] == [("in_2", 1000)]
    assert barge_in[-1].response_id == "resp_1"
    heard = [e.transcript for e in answer if e.type == T.MODEL_INPUT_TRANSCRIPTION_DONE]
    assert heard == ["Stop. Are you there?"]
    assert answer[-1].response_id == "resp_2"


async def test_tools_are_not_sent_and_a_tool_result_is_dropped(
    server: DashScopeServer, caplog: pytest.LogCaptureFixture
) -> None:
    # AgentScope's DashScope model takes no tools: the API has none.
    model = _model(server)
    assert model.support_tools is False
    with caplog.at_level(logging.WARNING, "agentscope_rt.realtime"):
        async with connected(model, "", TOOLS) as receive:
            await model.send(ToolResultBlock(id="call_1", name="get_weather", output="sunny"))
            await model.send(_audio("Hi?"))
            await until(receive, T.MODEL_RESPONSE_DONE)
    assert "tools" not in server.received[0]["session"]
    assert [e["type"] for e in server.received] == ["session.update", "input_audio_buffer.append"]
    messages = [r.getMessage() for r in caplog.records]
    assert any("takes no tools" in m for m in messages)
    assert any("does not support tool_result" in m for m in messages)


async def test_a_provider_error_and_a_closed_connection(server: DashScopeServer) -> None:
    model = _model(server)
    async with connected(model) as receive:
        await model.send(TextBlock(text="hello"))
        error = (await until(receive, T.MODEL_ERROR))[-1]
        assert (error.error_type, error.code) == ("invalid_request_error", "InvalidParameter")
        assert error.message == "text input is not supported"
        # The scripted server answers an image by closing with an internal error.
        image = Base64Source(media_type="image/jpeg", data=base64.b64encode(b"jpg").decode())
        await model.send(ImageBlock(source=image))
        events = await until(receive, T.MODEL_WEBSOCKET_DISCONNECT)
        assert not model.connected  # ended visibly, before disconnect()
        with pytest.raises(ModelAPIError, match="code 1011") as caught:
            await model.send(_audio("Anyone?"))
    sent = server.received[-2:]
    assert sent[0]["type"] == "response.create"
    assert sent[0]["response"] == {"instructions": "hello"}
    assert sent[1] == {"type": "input_image_buffer.append", "image": image.data}
    closed = events[-2]
    assert isinstance(closed, ModelEvents.ModelErrorEvent)
    assert closed.code == "1011" and "Internal server error" in closed.message
    assert KEY not in str(caught.value)


async def test_rates_urls_and_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    with pytest.raises(ValueError, match="DASHSCOPE_API_KEY"):
        DashScopeRealtimeModel(MODEL)
    monkeypatch.setenv("DASHSCOPE_API_KEY", KEY)
    flash = DashScopeRealtimeModel(MODEL)
    older = DashScopeRealtimeModel("qwen-omni-turbo-realtime")
    assert (flash.input_sample_rate, flash.output_sample_rate) == (16000, 24000)
    assert (older.input_sample_rate, older.output_sample_rate) == (16000, 16000)
    assert flash.websocket_url == (
        "wss://dashscope.aliyuncs.com/api-ws/v1/realtime?model=qwen3-omni-flash-realtime"
    )
    with pytest.raises(RuntimeError, match="not connected"):
        await flash.send(_audio("early"))
    with pytest.raises(ValueError, match="base64 audio only"):
        await flash.send(AudioBlock(source=URLSource(url="http://127.0.0.1:9/a.wav")))


async def test_the_session_s_end_and_messages_that_are_not_events() -> None:
    model = DashScopeRealtimeModel(MODEL, api_key=KEY)
    ended = await model.parse_api_message(
        json.dumps({"type": "session.finished", "session": {"id": "sess_9"}})
    )
    assert isinstance(ended, ModelEvents.ModelSessionEndedEvent)
    assert ended.session_id == "sess_9"
    assert await model.parse_api_message(json.dumps({"type": "session.updated"})) is None
    assert await model.parse_api_message(json.dumps({"type": "response.audio.delta"})) is None
    assert await model.parse_api_message("{") is None
    assert await model.parse_api_message('"text"') is None
