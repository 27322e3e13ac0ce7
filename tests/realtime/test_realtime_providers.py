"""What every realtime model does alike, written once and run for each provider against its
local server: a frame it cannot read is reported and skipped, a refused connection is a
:class:`ModelAPIError`, its reader closes the connection when nobody listens, and a response id
sent as a number does not fail the response's later events.

Each provider is a row of :data:`PROVIDERS`: its model class, its server, the rate it hears
audio at, and the frames of its protocol the tests send. Test ids start with the provider.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import attrs
import pytest

from agentscope_rt.exception import ModelAPIError
from agentscope_rt.message import AudioBlock, TextBlock
from agentscope_rt.realtime import (
    DashScopeRealtimeModel,
    GeminiRealtimeModel,
    ModelEventType,
    OpenAIRealtimeModel,
    RealtimeModelBase,
)

from ._provider_servers import DashScopeServer, GeminiServer, audio_block, connected, spoken, until
from ._realtime_server import RealtimeServer

T = ModelEventType


@attrs.frozen
class Provider:
    """One realtime provider's differences, as the tests below need them.

    :ivar key: the API key the model is given (which must show in no event).
    :ivar build: builds the model on a WebSocket URL with a key.
    :ivar server: the local server playing the provider's sessions.
    :ivar rate: the sample rate the model hears audio at.
    :ivar audio_delta: the event type of a piece of the answer's audio, in the protocols made
        of typed events (OpenAI's, DashScope's); ``None`` in Gemini's, which has no response
        ids.
    """

    name: str
    key: str
    build: Callable[[str, str], RealtimeModelBase]
    server: type[RealtimeServer]
    rate: int
    audio_delta: str | None = None

    def model(self, url: str) -> RealtimeModelBase:
        return self.build(url, self.key)

    def audio(self, text: str) -> AudioBlock:
        return audio_block(text, self.rate)

    def bad_frames(self) -> dict[str, str | bytes]:
        """Frames of the protocol the model cannot read, by name."""
        frames: dict[str, str | bytes] = {"binary-not-utf8": b"\xff\xfe not UTF-8"}
        if self.audio_delta is not None:
            frames["error-string"] = json.dumps({"type": "error", "error": f"bad key {self.key}"})
            number = {"type": self.audio_delta, "item_id": "i", "delta": 5}
            frames["audio-delta-number"] = json.dumps(number)
            return frames
        # Gemini sends its JSON in binary frames: so do these.
        audio = {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": 5}}
        frames["error-string"] = json.dumps({"error": f"bad key {self.key}"}).encode()
        frames["audio-delta-number"] = _gemini_frame({"modelTurn": {"parts": [audio]}})
        # Kept by the model until the turn ends, it would have failed every later turn.
        frames["transcription-number"] = _gemini_frame({"inputTranscription": {"text": 5}})
        return frames


def _gemini_frame(content: dict[str, Any]) -> bytes:
    return json.dumps({"serverContent": content}).encode()


PROVIDERS = [
    Provider(
        "openai",
        "sk-realtime-secret-42",
        lambda url, key: OpenAIRealtimeModel("gpt-realtime", api_key=key, websocket_url=url),
        RealtimeServer,
        24000,
        "response.output_audio.delta",
    ),
    Provider(
        "dashscope",
        "sk-dashscope-secret-42",
        lambda url, key: DashScopeRealtimeModel(
            "qwen3-omni-flash-realtime", api_key=key, voice="Ethan", websocket_url=url
        ),
        DashScopeServer,
        16000,
        "response.audio.delta",
    ),
    Provider(
        "gemini",
        "AIza-gemini-secret-42",
        lambda url, key: GeminiRealtimeModel("gemini-live", api_key=key, websocket_url=url),
        GeminiServer,
        16000,
    ),
]
WITH_RESPONSE_IDS = [p for p in PROVIDERS if p.audio_delta is not None]


def _ids(providers: list[Provider]) -> list[str]:
    return [p.name for p in providers]


@pytest.fixture(params=PROVIDERS, ids=_ids(PROVIDERS))
def provider(request: pytest.FixtureRequest) -> Provider:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def server(provider: Provider) -> Iterator[RealtimeServer]:
    with provider.server() as server:
        yield server


async def answer_after_preamble(
    model: RealtimeModelBase, question: AudioBlock
) -> tuple[list[Any], list[Any]]:
    """Connect *model* to a server that first sends its ``preamble`` frames, then ask
    *question*: the events up to the session's creation, and those of the answer. The model
    is connected (and read) all along, or this fails."""
    async with connected(model) as receive:
        opening = await until(receive, T.MODEL_SESSION_CREATED)
        assert model.connected
        await model.send(question)
        answer = await until(receive, T.MODEL_RESPONSE_DONE)
        assert model.connected
    return opening, answer


# One frame the parser cannot take, each kind: it is reported once and skipped.
BAD_FRAMES = [
    pytest.param(p, frame, id=f"{p.name}-{kind}")
    for p in PROVIDERS
    for kind, frame in p.bad_frames().items()
]


@pytest.mark.parametrize(("provider", "frame"), BAD_FRAMES)
async def test_a_bad_frame_is_reported_and_skipped(
    provider: Provider, server: RealtimeServer, frame: str | bytes
) -> None:
    server.preamble = [frame]
    model = provider.model(server.url)
    opening, answer = await answer_after_preamble(model, provider.audio("Can you hear me?"))
    errors = [e for e in opening if e.type == T.MODEL_ERROR]
    assert len(errors) == 1 and provider.key not in errors[0].message
    # The skipped frame started no response: the answer is the first one, whole.
    assert [e.type for e in answer].count(T.MODEL_RESPONSE_CREATED) == 1
    assert spoken(answer) == ("I heard you.", "I heard you.")


async def test_a_refused_connection_is_a_model_api_error(provider: Provider) -> None:
    model = provider.model(f"ws://127.0.0.1:9{provider.server.path}")
    send, receive = anyio.create_memory_object_stream[Any](1)
    with send, receive, pytest.raises(ModelAPIError):
        await model.connect(send, "", None)
    assert not model.connected


async def test_the_reader_closes_the_connection_when_nobody_listens(
    provider: Provider, server: RealtimeServer
) -> None:
    # When nobody reads the model's events any more, its reader ends and closes the
    # connection: ``connected`` turns false and the server sees the close, before
    # ``disconnect``.
    model = provider.model(server.url)
    send, receive = anyio.create_memory_object_stream[Any](math.inf)
    receive.close()  # the session's first event finds no listener
    await model.connect(send, "", None)
    try:
        assert await anyio.to_thread.run_sync(server.closed.wait, 10.0)
        assert not model.connected
        with pytest.raises(ModelAPIError, match="closed"):
            await model.send(TextBlock(text="anyone?"))
    finally:
        await model.disconnect()
        send.close()


@pytest.mark.parametrize("provider", WITH_RESPONSE_IDS, ids=_ids(WITH_RESPONSE_IDS))
async def test_a_numeric_response_id_does_not_fail_the_response_s_events(
    provider: Provider, server: RealtimeServer
) -> None:
    # Kept for the response's later events: as a number it failed each of them.
    delta = {"type": provider.audio_delta, "item_id": "i", "delta": "AAA="}
    created = {"type": "response.created", "response": {"id": 5}}
    server.preamble = [json.dumps(created), json.dumps(delta)]
    model = provider.model(server.url)
    opening, _ = await answer_after_preamble(model, provider.audio("Can you hear me?"))
    kinds = [e.type for e in opening]
    assert kinds[:2] == [T.MODEL_RESPONSE_CREATED, T.MODEL_RESPONSE_AUDIO_DELTA]
    assert opening[1].response_id == "5"
    assert T.MODEL_ERROR not in kinds
