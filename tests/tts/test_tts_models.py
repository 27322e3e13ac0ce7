"""The TTS models against a local server speaking each provider's protocol (HTTP and
WebSocket), and the offline eSpeak NG voice."""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import anyio
import pytest

from agentscope_rt._provider import RetryConfig, Secrets
from agentscope_rt.exception import ModelAPIError
from agentscope_rt.message import AudioBlock, Msg
from agentscope_rt.tts import (
    DashScopeCosyVoiceRealtimeTTSModel,
    DashScopeCosyVoiceTTSModel,
    DashScopeRealtimeTTSModel,
    DashScopeTTSModel,
    EspeakTTSModel,
    GeminiTTSModel,
    OpenAITTSModel,
    TTSModelBase,
    TTSResponse,
)
from agentscope_rt.tts._websocket_tts import Session, open_websocket

from ._tts_servers import TTSServer, text_of

KEY = "sk-test-secret-0123456789"
NO_WAIT = RetryConfig(max_retries=2, initial_delay=0, max_delay=0)
TEXT = "Hello, wire world!"


@pytest.fixture(scope="module")
def _server() -> Iterator[TTSServer]:
    with TTSServer() as server:
        yield server


@pytest.fixture
def server(_server: TTSServer, monkeypatch: pytest.MonkeyPatch) -> TTSServer:
    _server.reset()
    monkeypatch.setenv("DASHSCOPE_HTTP_BASE_URL", f"{_server.url}/api/v1")
    monkeypatch.setenv("DASHSCOPE_REALTIME_BASE_URL", f"{_server.ws_url}/api-ws/v1/realtime")
    monkeypatch.setenv("DASHSCOPE_WEBSOCKET_BASE_URL", f"{_server.ws_url}/api-ws/v1/inference")
    return _server


def _said(block: AudioBlock | None) -> str:
    assert block is not None
    return text_of(base64.b64decode(block.source.data))  # type: ignore[union-attr]


async def _collect(result: TTSResponse | AsyncGenerator[TTSResponse, None]) -> list[TTSResponse]:
    assert not isinstance(result, TTSResponse)
    return [chunk async for chunk in result]


def _check_growing(chunks: list[TTSResponse], text: str) -> None:
    """Each chunk's audio is a prefix of the next one's; only the last is last; all of it
    says *text*."""
    data = [c.content.source.data for c in chunks if c.content is not None]  # type: ignore[union-attr]
    assert all(b.startswith(a) for a, b in itertools.pairwise(data))
    assert [c.is_last for c in chunks] == [False] * (len(chunks) - 1) + [True]
    assert _said(chunks[-1].content) == text


def _openai(server: TTSServer, **kwargs: Any) -> OpenAITTSModel:
    return OpenAITTSModel(
        api_key=KEY,
        client_kwargs={"base_url": f"{server.url}/v1"},
        retry_config=NO_WAIT,
        **kwargs,
    )


# -- OpenAI ------------------------------------------------------------------------------------


async def test_openai_streams_growing_pcm_chunks(server: TTSServer) -> None:
    model = _openai(server, voice="coral", generate_kwargs={"speed": 1.5})
    try:
        chunks = await _collect(await model.synthesize(Msg("a", TEXT, "assistant")))
    finally:
        await model.aclose()
    assert len(chunks) > 2
    _check_growing(chunks, TEXT)
    assert chunks[-1].content.source.media_type == "audio/pcm;rate=24000"  # type: ignore[union-attr]
    request = server.requests[0]
    assert request["json"] == {
        "model": "gpt-4o-mini-tts",
        "voice": "coral",
        "input": TEXT,
        "response_format": "pcm",
        "speed": 1.5,
    }
    assert request["headers"]["authorization"] == f"Bearer {KEY}"


async def test_openai_without_stream_returns_one_response(server: TTSServer) -> None:
    model = _openai(server, stream=False)
    response = await model.synthesize(Msg("a", TEXT, "assistant"), instructions="calm")
    await model.aclose()
    assert isinstance(response, TTSResponse) and response.is_last
    assert _said(response.content) == TEXT
    assert response.usage is not None and response.usage.time >= 0
    assert server.requests[0]["json"]["instructions"] == "calm"


async def test_openai_no_text_makes_no_request(server: TTSServer) -> None:
    model = _openai(server)
    assert (await model.synthesize(None)).content is None  # type: ignore[union-attr]
    empty = await model.synthesize(Msg("a", [], "assistant"))
    assert isinstance(empty, TTSResponse) and empty.content is None
    assert server.requests == []


async def test_openai_error_names_status_without_the_key(server: TTSServer) -> None:
    server.fail.append((400, {"error": {"message": f"bad voice for key {KEY}"}}))
    model = _openai(server, stream=False)
    with pytest.raises(ModelAPIError) as caught:
        await model.synthesize(Msg("a", TEXT, "assistant"))
    await model.aclose()
    assert caught.value.status_code == 400
    assert "bad voice" in str(caught.value) and KEY not in str(caught.value)
    assert KEY not in repr(model) and KEY not in repr(vars(model))


async def test_openai_stream_retries_a_server_error_before_the_first_chunk(
    server: TTSServer,
) -> None:
    server.fail.append((503, {"error": {"message": "busy"}}))
    model = _openai(server)
    chunks = await _collect(await model.synthesize(Msg("a", TEXT, "assistant")))
    await model.aclose()
    assert _said(chunks[-1].content) == TEXT
    assert len(server.requests) == 2


# -- Gemini ------------------------------------------------------------------------------------


def _gemini(server: TTSServer, **kwargs: Any) -> GeminiTTSModel:
    return GeminiTTSModel(
        api_key=KEY, client_kwargs={"base_url": server.url}, retry_config=NO_WAIT, **kwargs
    )


async def test_gemini_streams_over_sse(server: TTSServer) -> None:
    model = _gemini(server, voice="Orus", generate_kwargs={"temperature": 0.5})
    chunks = await _collect(await model.synthesize(Msg("a", TEXT, "assistant")))
    await model.aclose()
    _check_growing(chunks, TEXT)
    assert chunks[-1].content.source.media_type == "audio/L16;codec=pcm;rate=24000"  # type: ignore[union-attr]
    request = server.requests[0]
    assert request["path"] == "/v1beta/models/gemini-2.5-flash-preview-tts:streamGenerateContent"
    assert request["query"] == "alt=sse"
    assert request["headers"]["x-goog-api-key"] == KEY and KEY not in request["query"]
    config = request["json"]["generationConfig"]
    assert config["responseModalities"] == ["AUDIO"]
    assert config["speechConfig"]["voiceConfig"]["prebuiltVoiceConfig"]["voiceName"] == "Orus"
    assert config["temperature"] == 0.5


async def test_gemini_without_stream_calls_generate_content(server: TTSServer) -> None:
    model = _gemini(server, stream=False)
    response = await model.synthesize(Msg("a", TEXT, "assistant"))
    await model.aclose()
    assert isinstance(response, TTSResponse)
    assert _said(response.content) == TEXT
    assert server.requests[0]["path"].endswith(":generateContent")


@pytest.mark.parametrize("data", ["!!not-base64", 5], ids=["not-base64", "a-number"])
async def test_gemini_audio_that_cannot_be_decoded_is_a_model_api_error(
    server: TTSServer, data: Any
) -> None:
    inline = {"mimeType": "audio/pcm", "data": data}
    answer = {"candidates": [{"content": {"parts": [{"inlineData": inline}]}}]}
    server.fail.extend([(200, answer)] * 3)  # each attempt of NO_WAIT's three
    model = _gemini(server, stream=False)
    with pytest.raises(ModelAPIError, match="could not be read") as caught:
        await model.synthesize(Msg("a", TEXT, "assistant"))
    await model.aclose()
    assert caught.value.status_code == 200 and caught.value.attempts == 3


# -- DashScope over HTTP -----------------------------------------------------------------------


async def test_dashscope_streams_sse_audio(server: TTSServer) -> None:
    model = DashScopeTTSModel(
        api_key=KEY, voice="Ethan", language_type="English", retry_config=NO_WAIT
    )
    chunks = await _collect(await model.synthesize(Msg("a", TEXT, "assistant")))
    await model.aclose()
    _check_growing(chunks, TEXT)
    request = server.requests[0]
    assert request["json"]["input"] == {"text": TEXT, "voice": "Ethan", "language_type": "English"}
    assert request["json"]["model"] == "qwen3-tts-flash"
    assert request["headers"]["x-dashscope-sse"] == "enable"


async def test_dashscope_error_event_fails_the_stream(server: TTSServer) -> None:
    server.ws_fail = {"code": "InvalidParameter", "message": "text too long"}
    model = DashScopeTTSModel(api_key=KEY, stream=False, retry_config=NO_WAIT)
    with pytest.raises(ModelAPIError, match="InvalidParameter: text too long") as caught:
        await model.synthesize(Msg("a", TEXT, "assistant"))
    await model.aclose()
    assert caught.value.status_code == 400
    assert len(server.requests) == 1  # not retried


# -- DashScope realtime (WebSocket, streaming input) ---------------------------------------------


def _chunks_of(text: str, msg_id: str, size: int = 5) -> list[Msg]:
    msgs = []
    for end in range(size, len(text) + size, size):
        msg = Msg("a", text[:end], "assistant")
        msg.id = msg_id
        msgs.append(msg)
    return msgs


STREAMING_INPUT = [
    pytest.param(lambda **kw: DashScopeRealtimeTTSModel(api_key=KEY, **kw), id="qwen"),
    pytest.param(
        lambda **kw: DashScopeCosyVoiceRealtimeTTSModel(api_key=KEY, **kw), id="cosyvoice"
    ),
]


@pytest.mark.parametrize("make", STREAMING_INPUT)
async def test_realtime_models_take_text_as_it_streams(server: TTSServer, make: Any) -> None:
    model: TTSModelBase = make()
    assert model.supports_streaming_input
    msgs = _chunks_of(TEXT, "m1")
    async with model:
        heard: list[str] = []
        for msg in msgs:
            response = await model.push(msg)
            if response.content is not None:
                heard.append(_said(response.content))
        chunks = await _collect(await model.synthesize(msgs[-1]))
    _check_growing(chunks, TEXT)
    # What push returned was always a beginning of the text.
    assert all(TEXT.startswith(h) for h in heard)
    sent = server.requests[0]["messages"]
    if isinstance(model, DashScopeRealtimeTTSModel):
        assert server.requests[0]["query"] == "model=qwen3-tts-flash-realtime"
        assert sent[0]["type"] == "session.update"
        assert sent[0]["session"]["voice"] == "Cherry"
        assert sent[0]["session"]["mode"] == "server_commit"
        texts = [e["text"] for e in sent if e["type"] == "input_text_buffer.append"]
        assert [e["type"] for e in sent[-2:]] == ["input_text_buffer.commit", "session.finish"]
    else:
        assert sent[0]["header"]["action"] == "run-task"
        assert sent[0]["header"]["streaming"] == "duplex"
        assert sent[0]["payload"]["parameters"]["format"] == "pcm"
        texts = [
            e["payload"]["input"]["text"] for e in sent if e["header"]["action"] == "continue-task"
        ]
        assert sent[-1]["header"]["action"] == "finish-task"
    # Each piece of text went out once, in order.
    assert "".join(texts) == TEXT


async def test_realtime_cold_start_holds_back_the_first_text(server: TTSServer) -> None:
    model = DashScopeRealtimeTTSModel(api_key=KEY, cold_start_length=12, cold_start_words=2)
    msgs = _chunks_of(TEXT, "m1")
    async with model:
        for msg in msgs[:2]:  # "Hello", "Hello, wir": under 12 characters
            assert (await model.push(msg)).content is None
        await model.push(msgs[2])
        response = await model.synthesize(msgs[-1])
        chunks = await _collect(response)
    texts = [
        e["text"] for e in server.requests[0]["messages"] if e["type"] == "input_text_buffer.append"
    ]
    assert texts[0] == msgs[2].content
    assert "".join(texts) == TEXT
    assert _said(chunks[-1].content) == TEXT


async def test_realtime_refuses_misuse_clearly(server: TTSServer) -> None:
    model = DashScopeRealtimeTTSModel(api_key=KEY)
    with pytest.raises(RuntimeError, match="not connected"):
        await model.push(Msg("a", "hi", "assistant"))
    async with model:
        await model.push(Msg("a", "one", "assistant"))
        with pytest.raises(RuntimeError, match="one streaming input request at a time"):
            await model.push(Msg("a", "two", "assistant"))


async def test_realtime_without_stream_waits_for_all_audio(server: TTSServer) -> None:
    model = DashScopeCosyVoiceRealtimeTTSModel(api_key=KEY, stream=False)
    async with model:
        msg = Msg("a", TEXT, "assistant")
        await model.push(msg)
        response = await model.synthesize(msg)
        # Another message on the same model: a new synthesis on a new connection.
        again = await model.synthesize(Msg("a", "Twice.", "assistant"))
    assert isinstance(response, TTSResponse) and _said(response.content) == TEXT
    assert isinstance(again, TTSResponse) and _said(again.content) == "Twice."
    assert len(server.requests) == 2


async def test_realtime_provider_error_is_raised_without_the_key(server: TTSServer) -> None:
    server.ws_fail = {"type": "error", "error": {"code": "InvalidVoice", "message": f"k={KEY}"}}
    model = DashScopeRealtimeTTSModel(api_key=KEY)
    msg = Msg("a", TEXT, "assistant")
    with pytest.raises(ModelAPIError, match="InvalidVoice") as caught:
        async with model:
            await model.push(msg)
            with anyio.fail_after(10):
                await _collect(await model.synthesize(msg))
    assert KEY not in str(caught.value)


async def test_cosyvoice_task_failed_is_a_model_api_error(server: TTSServer) -> None:
    server.ws_fail = {"error_code": "InvalidText", "error_message": "no"}
    model = DashScopeCosyVoiceTTSModel(api_key=KEY)
    with pytest.raises(ModelAPIError, match="InvalidText: no"):
        await model.synthesize(Msg("a", TEXT, "assistant"))


async def test_handshake_refusal_is_a_model_api_error(server: TTSServer) -> None:
    server.fail.append((401, {"code": "InvalidApiKey", "message": f"bad key {KEY}"}))
    model = DashScopeRealtimeTTSModel(api_key=KEY, max_retries=0)
    with pytest.raises(ModelAPIError) as caught:
        async with model:
            pass
    assert caught.value.status_code == 401
    assert "InvalidApiKey" in str(caught.value) and KEY not in str(caught.value)
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"


async def test_handshake_server_error_is_retried(server: TTSServer) -> None:
    server.fail.append((503, {"message": "busy"}))
    model = DashScopeCosyVoiceRealtimeTTSModel(api_key=KEY, retry_delay=0)
    async with model:
        msg = Msg("a", TEXT, "assistant")
        chunks = await _collect(await model.synthesize(msg))
    assert _said(chunks[-1].content) == TEXT
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    "model_class", [DashScopeRealtimeTTSModel, DashScopeCosyVoiceRealtimeTTSModel]
)
async def test_cancelling_a_synthesis_closes_the_connection(
    server: TTSServer, model_class: Any
) -> None:
    server.hold = True  # the provider never finishes
    model = model_class(api_key=KEY)
    msg = Msg("a", TEXT, "assistant")
    with anyio.move_on_after(30) as scope:
        async with anyio.create_task_group() as tg:

            async def speak() -> None:
                async with model:
                    await model.push(msg)
                    await _collect(await model.synthesize(msg))

            tg.start_soon(speak)
            assert await anyio.to_thread.run_sync(server.ws_input_done.wait, 10.0)
            tg.cancel_scope.cancel()
    assert not scope.cancelled_caught
    assert not model.connected
    # The client said goodbye on its way out.
    assert await anyio.to_thread.run_sync(server.ws_closed.wait, 10.0)


# -- CosyVoice, whole text ---------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_cosyvoice_speaks_a_whole_text(server: TTSServer, stream: bool) -> None:
    model = DashScopeCosyVoiceTTSModel(api_key=KEY, voice="longanhuan", stream=stream)
    assert not model.supports_streaming_input
    assert (await model.push(Msg("a", TEXT, "assistant"))).content is None
    result = await model.synthesize(Msg("a", TEXT, "assistant"))
    if stream:
        _check_growing(await _collect(result), TEXT)
    else:
        assert isinstance(result, TTSResponse) and _said(result.content) == TEXT
    sent = server.requests[0]["messages"]
    assert [m["header"]["action"] for m in sent] == ["run-task", "continue-task", "finish-task"]
    assert sent[0]["payload"]["parameters"]["voice"] == "longanhuan"
    assert sent[0]["payload"]["model"] == "cosyvoice-v3-plus"


async def test_models_need_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "DASHSCOPE_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for cls in (OpenAITTSModel, GeminiTTSModel, DashScopeTTSModel, DashScopeRealtimeTTSModel):
        with pytest.raises(ValueError, match="needs an API key"):
            cls()
    with pytest.raises(TypeError, match=r"httpx\.AsyncClient"):
        OpenAITTSModel(api_key=KEY, client_kwargs={"no_such_option": 1})


# -- the offline voice -------------------------------------------------------------------------


async def test_espeak_speaks_sentences_as_the_text_completes_them() -> None:
    model = EspeakTTSModel()
    first = Msg("a", "Hello there. How a", "assistant")
    whole = Msg("a", "Hello there. How are you?", "assistant")
    whole.id = first.id
    async with model:
        assert (await model.push(Msg("a", "Hello the", "assistant"))).content is None
        pushed = await model.push(first)
        assert pushed.content is not None
        assert pushed.content.source.media_type == "audio/pcm;rate=22050"  # type: ignore[union-attr]
        chunks = await _collect(await model.synthesize(whole))
    data = [c.content.source.data for c in chunks]  # type: ignore[union-attr]
    assert data[0].startswith(pushed.content.source.data)  # type: ignore[union-attr]
    assert chunks[-1].is_last
    pcm = base64.b64decode(data[-1])
    # Real speech: about a second of 22,050 Hz samples, not silence.
    assert len(pcm) > 22050 and any(pcm)


async def test_espeak_whole_text_and_bad_settings() -> None:
    model = EspeakTTSModel(stream=False, voice="en")
    response = await model.synthesize(Msg("a", "One. Two.", "assistant"))
    assert isinstance(response, TTSResponse) and response.content is not None
    with pytest.raises(ValueError, match="no voice named"):
        await EspeakTTSModel(voice="xx-nonexistent", stream=False).synthesize(
            Msg("a", "hi", "assistant")
        )
    with pytest.raises(ValueError, match="speed"):
        EspeakTTSModel(speed=10)


def test_repr_shows_no_key() -> None:
    model = DashScopeRealtimeTTSModel(api_key=KEY)
    assert KEY not in repr(model)
    assert KEY not in json.dumps({k: repr(v) for k, v in vars(model).items()})


# -- providers that misbehave: every wait ends, every error is a ModelAPIError without the key --


async def _speak_through(model: TTSModelBase, stream: bool = True) -> None:
    """Speak TEXT with a streaming-input *model*, as an agent does."""
    msg = Msg("a", TEXT, "assistant")
    async with model:
        await model.push(msg)
        result = await model.synthesize(msg)
        if stream:
            await _collect(result)


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("when", ["from the start", "after the input"])
@pytest.mark.parametrize("make", STREAMING_INPUT)
async def test_a_silent_provider_fails_after_the_read_timeout(
    server: TTSServer, make: Any, when: str, stream: bool
) -> None:
    server.silent = when == "from the start"
    server.hold = when == "after the input"
    model = make(read_timeout=0.5, stream=stream)
    with anyio.fail_after(30), pytest.raises(ModelAPIError, match=r"sent nothing for 0\.5 s"):
        await _speak_through(model, stream)
    assert not model.connected
    assert await anyio.to_thread.run_sync(server.ws_closed.wait, 10.0)


@pytest.mark.parametrize("stream", [True, False])
async def test_a_silent_provider_fails_a_whole_text_synthesis(
    server: TTSServer, stream: bool
) -> None:
    server.silent = True
    model = DashScopeCosyVoiceTTSModel(api_key=KEY, stream=stream, read_timeout=0.5)
    with anyio.fail_after(30), pytest.raises(ModelAPIError, match=r"sent nothing for 0\.5 s"):
        result = await model.synthesize(Msg("a", TEXT, "assistant"))
        if stream:
            await _collect(result)
    assert await anyio.to_thread.run_sync(server.ws_closed.wait, 10.0)


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        pytest.param(STREAMING_INPUT[0].values[0], "binary message", id="qwen"),
        pytest.param(STREAMING_INPUT[1].values[0], "audio before task-started", id="cosyvoice"),
    ],
)
async def test_a_provider_sending_only_binary_frames_fails_clearly(
    server: TTSServer, make: Any, reason: str
) -> None:
    server.binary = True
    model = make()  # the default read timeout: the frames themselves are refused
    with anyio.fail_after(20), pytest.raises(ModelAPIError, match=reason):
        await _speak_through(model)
    assert not model.connected


@pytest.mark.parametrize("make", STREAMING_INPUT)
async def test_a_close_reason_with_the_key_is_a_model_api_error_without_it(
    server: TTSServer, make: Any
) -> None:
    server.close_reason = f"invalid api key {KEY}"
    model = make()
    with anyio.fail_after(20), pytest.raises(ModelAPIError, match="1008") as caught:
        await _speak_through(model)
    assert KEY not in str(caught.value)


async def test_a_send_after_the_provider_closed_is_a_model_api_error_without_the_key(
    server: TTSServer,
) -> None:
    server.close_reason = f"invalid api key {KEY}"
    url = f"{server.ws_url}/api-ws/v1/realtime"
    async with open_websocket("dashscope", url, {}, Secrets((KEY,)), NO_WAIT) as connection:
        session = Session(connection, provider="dashscope", secrets=(KEY,))
        await session.send_json({"type": "session.update"})
        with anyio.fail_after(10), pytest.raises(ModelAPIError, match="1008") as closed:
            await session.receive()  # the close, its reason scrubbed
        with pytest.raises(ModelAPIError, match="1008") as caught:
            await session.send_json({"type": "input_text_buffer.append", "text": "hi"})
    assert KEY not in str(closed.value) and KEY not in str(caught.value)
