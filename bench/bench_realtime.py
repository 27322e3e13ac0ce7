"""Realtime latency the runtime adds: from the end of the user's audio to the first agent audio
event, against a local scripted provider that answers at once.

The provider (uvicorn in a thread, over wsproto) answers the last ``input_audio_buffer.append``
of an utterance with ``speech_stopped``, ``response.created`` and an audio delta. Measured per
turn, median of ``--turns``: (a) ``OpenAIRealtimeModel``: ``send(audio)`` until the
``ModelResponseAudioDeltaEvent`` comes out of the model's event stream; (b) the same exchange
on the bare WebSocket client (send the JSON, read frames until the audio delta). (a) - (b) is
what the realtime layer adds (JSON parsing into events, the reader task, the memory stream).

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
from agentscope_rt.realtime import ModelEventType, OpenAIRealtimeModel
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


if __name__ == "__main__":
    main()
