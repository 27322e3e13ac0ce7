"""GeminiRealtimeModel against a local server playing a scripted Gemini Live session: audio in,
transcripts and audio out, a tool call and its result, the user speaking over the model, a
provider error (a close with a reason) and the closed connection after it."""

from __future__ import annotations

import base64
import functools
import json

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
from agentscope_rt.realtime import GeminiRealtimeModel, ModelEvents, ModelEventType

from ._provider_servers import (
    WEATHER_TOOLS,
    GeminiServer,
    audio_block,
    connected,
    serving,
    spoken,
    until,
)

KEY = "AIza-gemini-secret-42"
T = ModelEventType


server = serving(GeminiServer)
_audio = functools.partial(audio_block, rate=16000)


async def test_a_spoken_question_with_a_tool_call(server: GeminiServer) -> None:
    model = GeminiRealtimeModel("gemini-live", api_key=KEY, voice="Kore", websocket_url=server.url)
    async with connected(model, "Be brief.", WEATHER_TOOLS) as receive:
        for piece in ("What is the ", "weather in Paris?"):
            await model.send(_audio(piece))
        first = await until(receive, T.MODEL_RESPONSE_TOOL_USE_DONE)
        call = first[-1].tool_use
        assert (call.id, call.name, call.input) == ("call_1", "get_weather", {"city": "Paris"})
        await model.send(ToolResultBlock(id=call.id, name=call.name, output="sunny"))
        second = await until(receive, T.MODEL_RESPONSE_DONE)
    kinds = [e.type for e in first]
    assert kinds[:3] == [
        T.MODEL_SESSION_CREATED,
        T.MODEL_INPUT_TRANSCRIPTION_DELTA,
        T.MODEL_INPUT_TRANSCRIPTION_DELTA,
    ]
    # What the user said is whole before the model's answer starts.
    heard = [e for e in first if e.type == T.MODEL_INPUT_TRANSCRIPTION_DONE]
    assert heard[0].transcript == "What is the weather in Paris?"
    assert kinds.index(T.MODEL_INPUT_TRANSCRIPTION_DONE) < kinds.index(T.MODEL_RESPONSE_CREATED)
    assert spoken(first) == ("Let me check.", "Let me check.")
    # One response, named by the client, spans the tool call and the spoken result.
    response_id = first[kinds.index(T.MODEL_RESPONSE_CREATED)].response_id
    assert response_id.startswith("resp_")
    assert {e.response_id for e in first + second if hasattr(e, "response_id")} == {response_id}
    assert spoken(second) == ("It is sunny.", "It is sunny.")
    assert all(e.format.rate == 24000 for e in second if e.type == T.MODEL_RESPONSE_AUDIO_DELTA)
    assert [e.type for e in second[-3:]] == [
        T.MODEL_RESPONSE_AUDIO_DONE,
        T.MODEL_RESPONSE_AUDIO_TRANSCRIPT_DONE,
        T.MODEL_RESPONSE_DONE,
    ]
    assert (second[-1].input_tokens, second[-1].output_tokens) == (9, 4)
    # What the client sent: the setup, the audio at 16 kHz, the tool's response.
    setup = server.received[0]["setup"]
    assert setup["model"] == "models/gemini-live"
    assert setup["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert setup["tools"][0]["function_declarations"][0]["name"] == "get_weather"
    assert setup["inputAudioTranscription"] == {} and setup["outputAudioTranscription"] == {}
    voice = setup["generationConfig"]["speechConfig"]["voiceConfig"]["prebuiltVoiceConfig"]
    assert voice == {"voiceName": "Kore"}
    assert setup["generationConfig"]["responseModalities"] == ["AUDIO"]
    assert server.received[1]["realtimeInput"]["audio"]["mimeType"] == "audio/pcm;rate=16000"
    assert server.received[-1] == {
        "toolResponse": {
            "functionResponses": [
                {"id": "call_1", "name": "get_weather", "response": {"result": "sunny"}}
            ]
        }
    }
    # The key travels in a header only, and shows nowhere.
    assert server.headers["x-goog-api-key"] == KEY
    assert KEY not in model.websocket_url
    assert KEY not in repr(model) and KEY not in repr(vars(model))
    assert await anyio.to_thread.run_sync(server.closed.wait, 10.0)


async def test_the_user_speaking_over_the_model_ends_its_response(server: GeminiServer) -> None:
    model = GeminiRealtimeModel("gemini-live", api_key=KEY, websocket_url=server.url)
    async with connected(model) as receive:
        await model.send(_audio("Tell me a story?"))
        story = await until(receive, T.MODEL_RESPONSE_AUDIO_TRANSCRIPT_DELTA)
        interrupted = story[-1].response_id
        await model.send(_audio("Stop."))
        barge_in = await until(receive, T.MODEL_RESPONSE_DONE)
        await model.send(_audio(" Are you there?"))
        answer = await until(receive, T.MODEL_RESPONSE_DONE)
    # Gemini's "interrupted" is the user starting to speak; the cut response is done.
    started = [e for e in barge_in if e.type == T.MODEL_INPUT_STARTED]
    assert len(started) == 1
    assert barge_in[-1].response_id == interrupted
    assert barge_in.index(started[0]) < len(barge_in) - 1
    heard = [e.transcript for e in answer if e.type == T.MODEL_INPUT_TRANSCRIPTION_DONE]
    assert heard == ["Stop. Are you there?"]
    assert spoken(answer) == ("I heard you.", "I heard you.")
    assert answer[-1].response_id != interrupted
    assert (answer[-1].input_tokens, answer[-1].output_tokens) == (7, 3)


async def test_a_provider_error_is_an_event_and_the_closed_connection_a_clear_error(
    server: GeminiServer,
) -> None:
    model = GeminiRealtimeModel("gemini-live", api_key=KEY, websocket_url=server.url)
    async with connected(model) as receive:
        # The scripted server refuses text: it announces the end, then closes with a reason.
        await model.send(TextBlock(text="hello"))
        events = await until(receive, T.MODEL_WEBSOCKET_DISCONNECT)
        with pytest.raises(ModelAPIError, match="code 1008") as caught:
            await model.send(_audio("Anyone?"))
    assert server.received[-1]["clientContent"]["turns"][0]["parts"] == [{"text": "hello"}]
    ended = [e for e in events if isinstance(e, ModelEvents.ModelSessionEndedEvent)]
    assert "time left: 0s" in ended[0].reason
    error = events[-2]
    assert isinstance(error, ModelEvents.ModelErrorEvent)
    assert error.code == "1008" and "invalid argument" in error.message
    assert KEY not in error.message and KEY not in str(caught.value)
    assert not model.connected


async def test_media_by_url_and_a_missing_key_are_refused(
    monkeypatch: pytest.MonkeyPatch, server: GeminiServer
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(ValueError, match="GEMINI_API_KEY"):
        GeminiRealtimeModel("gemini-live")
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    model = GeminiRealtimeModel("gemini-live", websocket_url=server.url)
    with pytest.raises(RuntimeError, match="not connected"):
        await model.send(TextBlock(text="early"))
    async with connected(model) as receive:
        with pytest.raises(ValueError, match="base64 audio only"):
            await model.send(AudioBlock(source=URLSource(url="http://127.0.0.1:9/a.wav")))
        image = Base64Source(media_type="image/png", data=base64.b64encode(b"png").decode())
        await model.send(ImageBlock(source=image))
        await model.send(_audio("What is this?"))
        await until(receive, T.MODEL_RESPONSE_DONE)
    video = [m["realtimeInput"]["video"] for m in server.received if "video" in json.dumps(m)]
    assert video == [{"mimeType": "image/png", "data": image.data}]


async def test_thoughts_cancellations_and_error_messages() -> None:
    model = GeminiRealtimeModel("gemini-live", api_key=KEY)
    audio = {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": "AAA="}}
    thought = {"text": "The user wants a tool.", "thought": True}
    turn = json.dumps({"serverContent": {"modelTurn": {"parts": [thought, audio]}}})
    events = await model.parse_api_message(turn)
    assert isinstance(events, list)
    assert [e.type for e in events] == [T.MODEL_RESPONSE_CREATED, T.MODEL_RESPONSE_AUDIO_DELTA]
    cancelled = await model.parse_api_message(json.dumps({"toolCallCancellation": {"ids": ["c"]}}))
    assert isinstance(cancelled, list)
    assert [e.type for e in cancelled] == [T.MODEL_RESPONSE_AUDIO_DONE, T.MODEL_RESPONSE_DONE]
    assert cancelled[-1].response_id == events[0].response_id
    error = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota"}}
    refused = await model.parse_api_message(json.dumps(error))
    assert isinstance(refused, list)
    assert (refused[0].error_type, refused[0].code, refused[0].message) == (
        "RESOURCE_EXHAUSTED",
        "429",
        "quota",
    )
    assert await model.parse_api_message("not json") is None
    assert await model.parse_api_message("[1]") is None
    assert await model.parse_api_message(json.dumps({"sessionResumptionUpdate": {}})) is None
