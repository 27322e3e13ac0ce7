"""ReActAgent(tts_model=...): the reply is spoken as it streams, the speech goes with the
printed chunks, a SpeechPlayer plays it without holding up the agent, and interrupt() stops
synthesis and playback."""

from __future__ import annotations

import base64
import math
import sys
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.exception import ModelAPIError
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import AudioBlock, Base64Source, Msg
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.tts import (
    CommandSink,
    DashScopeRealtimeTTSModel,
    OpenAITTSModel,
    SpeechPlayer,
    TTSModelBase,
    WavFileSink,
    _player,
)

from ._tts_servers import TTSServer, pcm_of, text_of

KEY = "sk-agent-test-key"
REPLY = "The weather is fine today. Take a walk in the park!"


@pytest.fixture(scope="module")
def _server() -> Iterator[TTSServer]:
    with TTSServer() as server:
        yield server


@pytest.fixture
def server(_server: TTSServer, monkeypatch: pytest.MonkeyPatch) -> TTSServer:
    _server.reset()
    monkeypatch.setenv("DASHSCOPE_REALTIME_BASE_URL", f"{_server.ws_url}/api-ws/v1/realtime")
    return _server


class RecordingSink:
    """A sound card stand-in: records what it is given; with *hold* a write lasts until it
    is cancelled (audio playing for a long time)."""

    def __init__(self, hold: bool = False) -> None:
        self.hold = hold
        self.written: list[tuple[bytes, int]] = []
        self.discards = 0
        self.closed = False
        self.writing = anyio.Event()

    async def write(self, pcm: bytes, rate: int) -> None:
        self.written.append((pcm, rate))
        self.writing.set()
        if self.hold:
            await anyio.sleep_forever()

    async def discard(self) -> None:
        self.discards += 1

    async def aclose(self) -> None:
        self.closed = True

    def heard(self) -> str:
        return text_of(b"".join(pcm for pcm, _ in self.written))


def _agent(tts: TTSModelBase, *, stream: bool = True, **kwargs: Any) -> ReActAgent:
    agent = ReActAgent(
        "Friday",
        "You are helpful.",
        ScriptedChatModel([REPLY], stream=stream),
        OpenAIChatFormatter(),
        tts_model=tts,
        **kwargs,
    )
    agent.set_console_output_enabled(False)
    return agent


def _said(speech: Any) -> str:
    assert isinstance(speech, AudioBlock)
    return text_of(base64.b64decode(speech.source.data))  # type: ignore[union-attr]


async def _printed(agent: ReActAgent, msg: Msg) -> list[tuple[Msg, bool, Any]]:
    send, receive = anyio.create_memory_object_stream[Any](math.inf)
    agent.set_msg_queue_enabled(True, send)
    with anyio.fail_after(30):
        await agent(msg)
    send.close()
    return [item async for item in receive]


async def test_a_streaming_input_model_speaks_the_reply_as_it_streams(server: TTSServer) -> None:
    agent = _agent(DashScopeRealtimeTTSModel(api_key=KEY))
    printed = await _printed(agent, Msg("user", "How is the weather?", "user"))
    replies = [(m, last, speech) for m, last, speech in printed if m.name == "Friday"]
    final_msg, last, speech = replies[-1]
    assert last and final_msg.get_text_content() == REPLY
    assert _said(speech) == REPLY
    # Every printed speech is a beginning of the reply's speech.
    assert all(REPLY.startswith(_said(s)) for _, _, s in replies if s is not None)
    # The text went to the provider in pieces while the model streamed, not at the end.
    appends = [
        e["text"] for e in server.requests[0]["messages"] if e["type"] == "input_text_buffer.append"
    ]
    assert len(appends) > 1 and "".join(appends) == REPLY
    # The reply in memory is the text; the speech is not kept there.
    assert (await agent.memory.get_memory())[-1].get_text_content() == REPLY


async def test_a_whole_text_model_speaks_after_the_reply(server: TTSServer) -> None:
    tts = OpenAITTSModel(api_key=KEY, client_kwargs={"base_url": f"{server.url}/v1"})
    agent = _agent(tts, stream=False)
    printed = await _printed(agent, Msg("user", "Weather?", "user"))
    await tts.aclose()
    speeches = [speech for m, _, speech in printed if m.name == "Friday" and speech is not None]
    assert _said(speeches[-1]) == REPLY
    assert printed[-1][1] is True and _said(printed[-1][2]) == REPLY
    assert server.requests[0]["json"]["input"] == REPLY


async def test_the_player_plays_the_speech_without_holding_up_the_agent(
    server: TTSServer,
) -> None:
    sink = RecordingSink()
    async with SpeechPlayer(sink) as player:
        agent = _agent(DashScopeRealtimeTTSModel(api_key=KEY), speech_player=player)
        with anyio.fail_after(30):
            await agent(Msg("user", "Weather?", "user"))
    # Played once, in order, each piece of audio once.
    assert sink.heard() == REPLY
    assert {rate for _, rate in sink.written} == {24000}
    assert sink.closed


async def test_interrupt_stops_synthesis_and_playback(server: TTSServer) -> None:
    server.hold = True  # the provider never finishes speaking
    sink = RecordingSink(hold=True)  # the first audio plays "for ever"
    async with SpeechPlayer(sink) as player:
        agent = _agent(DashScopeRealtimeTTSModel(api_key=KEY), speech_player=player)
        result: list[Msg] = []

        async def ask() -> None:
            result.append(await agent(Msg("user", "Weather?", "user")))

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                assert await anyio.to_thread.run_sync(server.ws_input_done.wait, 10.0)
                await sink.writing.wait()
                agent.interrupt()
        # The reply ended as interrupted, its connection closed, its audio cut off.
        assert result[0].metadata == {"_is_interrupted": True}
        assert await anyio.to_thread.run_sync(server.ws_closed.wait, 10.0)
        assert player.stops == 1
        await anyio.wait_all_tasks_blocked()
        assert sink.discards == 1
        # Audio queued before the interrupt is not played after it.
        assert len(sink.written) == 1


async def test_feed_queues_only_what_is_new_and_a_new_message_starts_afresh() -> None:
    sink = RecordingSink()

    def block(text: str) -> AudioBlock:
        data = base64.b64encode(pcm_of(text)).decode()
        return AudioBlock(source=Base64Source(media_type="audio/pcm;rate=16000", data=data))

    async with SpeechPlayer(sink) as player:
        player.feed("m1", block("abc"))
        player.feed("m1", block("abc"))  # nothing new
        player.feed("m1", block("abcdefg"))
        player.feed("m1", None)
        player.feed("m2", [block("xyz")])
    assert sink.heard() == "abcdefgxyz"
    assert {rate for _, rate in sink.written} == {16000}
    with pytest.raises(TypeError, match="sink must have"):
        SpeechPlayer(object())  # type: ignore[arg-type]


async def test_wav_file_sink_writes_a_playable_file(tmp_path: Path) -> None:
    path = tmp_path / "speech.wav"
    sink = WavFileSink(path)
    await sink.write(pcm_of("hello"), 22050)
    await sink.write(pcm_of(" you"), 22050)
    with pytest.raises(ValueError, match="16000 Hz"):
        await sink.write(b"\0\0", 16000)
    await sink.aclose()
    with wave.open(str(path)) as file:
        assert (file.getframerate(), file.getnchannels(), file.getsampwidth()) == (22050, 1, 2)
        assert text_of(file.readframes(file.getnframes())) == "hello you"


def test_tts_model_must_be_a_tts_model() -> None:
    with pytest.raises(TypeError, match="tts_model"):
        ReActAgent(
            "a",
            "s",
            ScriptedChatModel([]),
            OpenAIChatFormatter(),
            tts_model="espeak",  # type: ignore[arg-type]
        )


async def test_a_silent_provider_does_not_hang_the_speaking_agent(server: TTSServer) -> None:
    server.silent = True  # accepts, then never answers
    agent = _agent(DashScopeRealtimeTTSModel(api_key=KEY, read_timeout=0.5))
    with anyio.fail_after(30), pytest.raises(ModelAPIError, match=r"sent nothing for 0\.5 s"):
        await agent(Msg("user", "Weather?", "user"))
    assert await anyio.to_thread.run_sync(server.ws_closed.wait, 10.0)


async def test_a_stuck_player_program_is_killed_on_close(monkeypatch: pytest.MonkeyPatch) -> None:
    # A program that neither reads its input nor exits: a sound server that does not answer.
    monkeypatch.setattr(_player, "PLAY_OUT_TIMEOUT", 0.5)
    sink = CommandSink([sys.executable, "-c", "import time; time.sleep(120)"])
    await sink.write(pcm_of("hi"), 24000)
    process = sink._process
    assert process is not None
    with anyio.fail_after(60):  # the close is shielded: without a bound it waited 120 s
        await sink.aclose()
    assert process.returncode is not None and process.returncode != 0
