"""A voice assistant that speaks its answers offline, as they are written.

The agent is a ``ReActAgent`` with ``tts_model=EspeakTTSModel()``: eSpeak NG shipped in a
wheel (the ``voice`` extra), no key, no network. The offline voice takes streaming input, so
each sentence is spoken as soon as the model has finished writing it, while the rest of the
answer is still being generated; the audio goes with every printed chunk
(``print(msg, last, speech=...)``) and a ``SpeechPlayer`` plays it in the background.

The chat model is SmolLM2-135M in-process (the ``local`` extra) unless ``OPENAI_API_KEY`` is set.
Playback goes to ``aplay``/``paplay``/``ffplay`` when one is installed; otherwise, and always
when ``AGENTSCOPE_RT_EXAMPLES=1`` (unattended runs), the speech is written to a WAV file in a
temporary folder instead.

Run: ``python examples/95_voice_assistant.py`` (asyncio) or
``python examples/95_voice_assistant.py trio``.

What to look for: ``Friday:`` streams the answer on the console while the speech is made; the
count of printed chunks that carried speech before the text was complete (more than zero: the
first sentence was spoken early), and the length of the WAV file. The words are SmolLM2-135M's
own and may be odd; the speech follows them as written.
"""

from __future__ import annotations

import math
import os
import pathlib
import sys
import tempfile
import wave
from typing import Any

import anyio

import agentscope_rt.formatter
from agentscope_rt.agent import ReActAgent
from agentscope_rt.message import Msg
from agentscope_rt.tts import AudioSink, EspeakTTSModel, SpeechPlayer, WavFileSink, default_sink

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _models import pick_chat_model

QUESTIONS = ["Say hello and tell me one fact about the Moon in two short sentences."]


def pick_sink(folder: str) -> tuple[AudioSink, pathlib.Path | None]:
    """The sound player, or a WAV file when there is none or the run is unattended."""
    sink = None if os.environ.get("AGENTSCOPE_RT_EXAMPLES") == "1" else default_sink()
    if sink is not None:
        return sink, None
    path = pathlib.Path(folder) / "answer.wav"
    return WavFileSink(path), path


async def main() -> None:
    model, formatter_name = pick_chat_model(
        stream=True, generate_kwargs={"temperature": 0.0, "seed": 7, "max_tokens": 60}
    )
    with tempfile.TemporaryDirectory() as folder:
        sink, wav_path = pick_sink(folder)
        async with SpeechPlayer(sink) as player:
            agent = ReActAgent(
                "Friday",
                "You are a friendly voice assistant. Answer in one or two short sentences.",
                model,
                getattr(agentscope_rt.formatter, formatter_name)(),
                tts_model=EspeakTTSModel(voice="en-us", speed=170),
                speech_player=player,
            )
            send, receive = anyio.create_memory_object_stream[Any](math.inf)
            agent.set_msg_queue_enabled(True, send)
            for question in QUESTIONS:
                print(f"user: {question}")
                await agent(Msg("user", question, "user"))
            send.close()
            chunks = [item async for item in receive]
        # How much of the speech was ready before the text was complete.
        spoken_early = sum(1 for _, last, speech in chunks if speech is not None and not last)
        print(f"{len(chunks)} printed chunks, {spoken_early} carried speech before the end")
        if wav_path is not None:
            with wave.open(str(wav_path)) as file:
                seconds = file.getnframes() / file.getframerate()
            print(f"speech written to a WAV file: {seconds:.1f} s at {file.getframerate()} Hz")
        else:
            print("speech played through the sound player")


if __name__ == "__main__":
    anyio.run(main, backend="trio" if "trio" in sys.argv[1:] else "asyncio")
