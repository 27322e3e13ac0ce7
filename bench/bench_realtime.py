"""Realtime latency the runtime adds: from the end of the user's audio to the first agent audio
event, against a local scripted provider that answers at once.

The provider (uvicorn in a thread, over wsproto) answers the last ``input_audio_buffer.append``
of an utterance with ``speech_stopped``, ``response.created`` and an audio delta. Measured per
turn, median of ``--turns``: (a) ``OpenAIRealtimeModel``: ``send(audio)`` until the
``ModelResponseAudioDeltaEvent`` comes out of the model's event stream; (b) the same exchange
on the bare WebSocket client (send the JSON, read frames until the audio delta). (a) - (b) is
what the realtime layer adds (JSON parsing into events, the reader task, the memory stream).

Through ``RealtimeAgent`` (c): the user's audio given to ``handle_input`` until the first
``AgentResponseAudioDeltaEvent`` comes out of the agent's (unbuffered) outgoing stream, median
and p99. Barge-in (d), 100 trials at most: the provider tells a story, sends three 100 ms
pieces at once and holds the fourth until the user speaks; a player takes the first chunk, the
user speaks, the player plays that chunk before taking more; the provider reports
``speech_started`` and sends the last piece. Measured from the moment the model parsed
``speech_started`` to the moment ``conversation.item.truncate`` was sent, and to the agent's
last story audio chunk out (0 when none went out after it).

Usage: ``python bench/bench_realtime.py [--turns 300]`` (runs asyncio and trio).
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import pathlib
import statistics
import sys
import time
from typing import Any

import anyio

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from agentscope_rt._provider import websocket
from agentscope_rt.message import AudioBlock, Base64Source
from agentscope_rt.realtime import (
    AudioFormat,
    ClientEvents,
    ModelEvents,
    ModelEventType,
    OpenAIRealtimeModel,
    RealtimeAgent,
    ServerEventType,
)
from tests.realtime._realtime_server import RealtimeServer

AUDIO = base64.b64encode("I heard you?".encode("utf-16-le")).decode()


async def _model_turns(url: str, turns: int) -> list[float]:
    model = OpenAIRealtimeModel("bench", api_key="k", websocket_url=url)
    send, receive = anyio.create_memory_object_stream[Any](math.inf)
    await model.connect(send, "", None)
    block = AudioBlock(source=Base64Source(media_type="audio/pcm;rate=24000", data=AUDIO))
    times = []
    try:
        for _ in range(turns):
            start = time.perf_counter()
            await model.send(block)
            async for event in receive:
                if event.type == ModelEventType.MODEL_RESPONSE_AUDIO_DELTA:
                    times.append(time.perf_counter() - start)
                if event.type == ModelEventType.MODEL_RESPONSE_DONE:
                    break
    finally:
        await model.disconnect()
    return times


async def _raw_turns(url: str, turns: int) -> list[float]:
    times = []
    message = json.dumps({"type": "input_audio_buffer.append", "audio": AUDIO})
    async with websocket.connect(url, {"Authorization": "Bearer k"}) as connection:
        await connection.send_text(json.dumps({"type": "session.update", "session": {}}))
        for _ in range(turns):
            start = time.perf_counter()
            await connection.send_text(message)
            while True:
                kind = json.loads(await connection.receive())["type"]
                if kind == "response.output_audio.delta" and len(times) < _ + 1:
                    times.append(time.perf_counter() - start)
                if kind == "response.done":
                    break
    return times


def _said(text: str) -> ClientEvents.ClientAudioAppendEvent:
    audio = base64.b64encode(text.encode("utf-16-le")).decode()
    return ClientEvents.ClientAudioAppendEvent(
        session_id="bench", audio=audio, format=AudioFormat(type="audio/pcm", rate=24000)
    )


class _TimedModel(OpenAIRealtimeModel):
    """Records when speech_started is parsed and when a truncate has been sent."""

    def __init__(self, url: str) -> None:
        super().__init__("bench", api_key="k", websocket_url=url)
        self.speech_started: list[float] = []
        self.truncated: list[float] = []

    async def parse_api_message(self, message: str) -> Any:
        events = await super().parse_api_message(message)
        if isinstance(events, ModelEvents.ModelInputStartedEvent):
            self.speech_started.append(time.perf_counter())
        return events

    async def truncate(self, item_id: str, audio_end_ms: int) -> bool:
        sent = await super().truncate(item_id, audio_end_ms)
        self.truncated.append(time.perf_counter())
        return sent


async def _until_done(receive: Any, done: Any) -> list[tuple[float, Any]]:
    events = []
    async for event in receive:
        events.append((time.perf_counter(), event))
        if done(event):
            return events
    raise RuntimeError("the agent's stream ended")


def _response_done(event: Any) -> bool:
    return event.type == ServerEventType.AGENT_RESPONSE_DONE


async def _agent_turns(url: str, turns: int) -> list[float]:
    agent = RealtimeAgent("bench", "", _TimedModel(url))
    send, receive = anyio.create_memory_object_stream[Any](0)
    times = []
    with send, receive:
        await agent.start(send)
        try:
            for _ in range(turns):
                start = time.perf_counter()
                await agent.handle_input(_said("I heard you?"))
                events = await _until_done(receive, _response_done)
                first = next(
                    t for t, e in events if e.type == ServerEventType.AGENT_RESPONSE_AUDIO_DELTA
                )
                times.append(first - start)
        finally:
            await agent.stop()
    return times


async def _barge_ins(url: str, turns: int) -> tuple[list[float], list[float], int]:
    """(speech_started -> truncate sent, speech_started -> last story chunk out, how many
    story chunks went out after speech_started).

    The provider sends three pieces of the story at once; a player takes the first chunk, the
    user starts speaking, and the player plays that chunk (100 ms) before it takes the next:
    the other two pieces wait in the agent when speech_started arrives.
    """
    model = _TimedModel(url)
    agent = RealtimeAgent("bench", "", model)
    send, receive = anyio.create_memory_object_stream[Any](0)
    to_truncate, to_last_chunk, late_chunks = [], [], 0
    with send, receive:
        await agent.start(send)
        try:
            for _ in range(turns):
                await agent.handle_input(_said("Tell me a story?"))
                chunks = [
                    at
                    for at, _event in await _until_done(
                        receive, lambda e: e.type == ServerEventType.AGENT_RESPONSE_AUDIO_DELTA
                    )
                ][-1:]
                seen = len(model.speech_started)
                await agent.handle_input(_said("Stop?"))
                await anyio.sleep(0.1)  # the player plays the chunk it took
                for at, event in await _until_done(receive, _response_done):
                    if event.type == ServerEventType.AGENT_RESPONSE_AUDIO_DELTA and (
                        event.item_id == "item_story"
                    ):
                        chunks.append(at)
                await _until_done(receive, _response_done)  # the answer to "Stop?"
                started = model.speech_started[seen]
                to_truncate.append(model.truncated[-1] - started)
                late = [at for at in chunks if at > started]
                late_chunks += len(late)
                to_last_chunk.append(max(0.0, (late[-1] if late else started) - started))
        finally:
            await agent.stop()
    return to_truncate, to_last_chunk, late_chunks


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=300)
    args = parser.parse_args()
    with RealtimeServer() as server:
        # The scripted provider answers "?"-terminated utterances; reset what it heard per turn.
        for backend in ("asyncio", "trio"):
            model = anyio.run(_model_turns, server.url, args.turns, backend=backend)
            raw = anyio.run(_raw_turns, server.url, args.turns, backend=backend)
            m, r = statistics.median(model) * 1e3, statistics.median(raw) * 1e3
            print(
                f"{backend}: end of user audio -> first agent audio event: "
                f"model {m:.3f} ms, bare WebSocket {r:.3f} ms, added {m - r:.3f} ms (median of "
                f"{args.turns})"
            )
            agent = anyio.run(_agent_turns, server.url, args.turns, backend=backend)
            print(
                f"{backend}: end of user audio -> first audio chunk out of RealtimeAgent: "
                f"median {statistics.median(agent) * 1e3:.3f} ms, p99 {_p99(agent) * 1e3:.3f} ms"
                f" (model alone: p99 {_p99(model) * 1e3:.3f} ms)"
            )
            server.barge_after = 3
            trials = min(args.turns, 100)
            cut, last, late = anyio.run(_barge_ins, server.url, trials, backend=backend)
            server.barge_after = 2
            print(
                f"{backend}: barge-in, speech_started parsed -> truncate sent: median "
                f"{statistics.median(cut) * 1e3:.3f} ms, p99 {_p99(cut) * 1e3:.3f} ms; -> last "
                f"agent audio chunk out: median {statistics.median(last) * 1e3:.3f} ms, p99 "
                f"{_p99(last) * 1e3:.3f} ms ({late} story chunks out after speech_started in "
                f"{trials} barge-ins)"
            )


if __name__ == "__main__":
    main()
