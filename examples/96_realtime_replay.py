"""A realtime voice session replayed from a recorded script, offline.

A small local server (Starlette on hypercorn, in this program's own event loop) stands in for
OpenAI's Realtime API: when the user's audio arrives it replays a recorded session — the user's
speech detected and transcribed, the model's spoken answer with its transcript, a tool call, and
a second answer once the tool's result is sent back. The answer's audio is made by the offline
voice (eSpeak NG), so the replay really speaks. ``OpenAIRealtimeModel`` connects to it exactly
as it would to OpenAI, the tool runs from a ``Toolkit``, and the agent's audio is written to a
WAV file.

Needs the ``studio`` extra (Starlette, hypercorn), ``dashscope`` (wsproto) and ``voice``.
Run: ``python examples/96_realtime_replay.py`` (asyncio) or
``python examples/96_realtime_replay.py trio``.

What to look for: the user's transcribed question, the agent's spoken answer as text, its
``get_weather`` call, the second spoken answer using the tool's result, and the seconds of
agent audio written to the WAV file.
"""

from __future__ import annotations

import base64
import json
import math
import sys
import tempfile
import wave
from pathlib import Path
from typing import Any

import anyio
from _serve import serve_local
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from agentscope_rt.message import AudioBlock, Base64Source, Msg, TextBlock, ToolResultBlock
from agentscope_rt.realtime import ModelEventType, OpenAIRealtimeModel
from agentscope_rt.tool import Toolkit, ToolResponse
from agentscope_rt.tts import EspeakTTSModel

# What the provider sent in the recorded session; "speak" stands for the audio of that text.
RECORDED_FIRST = [
    {"type": "input_audio_buffer.speech_started", "item_id": "in_1", "audio_start_ms": 0},
    {"type": "input_audio_buffer.speech_stopped", "item_id": "in_1", "audio_end_ms": 1400},
    {
        "type": "conversation.item.input_audio_transcription.completed",
        "item_id": "in_1",
        "transcript": "What is the weather in Paris?",
    },
    {"type": "response.created", "response": {"id": "resp_1"}},
    {"speak": "Let me check the weather.", "item_id": "out_1"},
    {
        "type": "response.function_call_arguments.done",
        "item_id": "fc_1",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    },
    {"type": "response.done", "response": {"id": "resp_1", "usage": {"input_tokens": 12}}},
]


def get_weather(city: str) -> ToolResponse:
    """The weather of a city.

    Args:
        city: the city's name.
    """
    return ToolResponse(content=[TextBlock(text=f"sunny and 21 degrees in {city}")])


async def spoken(voice: EspeakTTSModel, text: str) -> str:
    """*text* said by the offline voice, as base64 PCM."""
    response = await voice.synthesize(Msg("assistant", text, "assistant"))
    return response.content.source.data  # type: ignore[union-attr]


def replay_app(voice: EspeakTTSModel) -> Starlette:
    async def session(websocket: WebSocket) -> None:
        await websocket.accept()

        async def send(event: dict[str, Any]) -> None:
            if "speak" in event:
                item, text = event["item_id"], event["speak"]
                audio = await spoken(voice, text)
                for kind, delta in (("output_audio", audio), ("output_audio_transcript", text)):
                    delta_event = {
                        "type": f"response.{kind}.delta",
                        "item_id": item,
                        "delta": delta,
                    }
                    await websocket.send_text(json.dumps(delta_event))
                return
            await websocket.send_text(json.dumps(event))

        await send({"type": "session.created", "session": {"id": "sess_replay"}})
        try:
            while True:
                event = json.loads(await websocket.receive_text())
                if event["type"] == "input_audio_buffer.append":
                    for recorded in RECORDED_FIRST:
                        await send(recorded)
                elif event["type"] == "conversation.item.create":
                    output = event["item"]["output"]
                    await send({"type": "response.created", "response": {"id": "resp_2"}})
                    await send({"speak": f"It is {output}.", "item_id": "out_2"})
                    await send({"type": "response.done", "response": {"id": "resp_2"}})
        except WebSocketDisconnect:
            return

    return Starlette(routes=[WebSocketRoute("/v1/realtime", session)])


async def main() -> None:
    voice = EspeakTTSModel(stream=False)
    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    with tempfile.TemporaryDirectory() as folder:
        wav_path = Path(folder) / "agent.wav"
        async with anyio.create_task_group() as group:
            url = f"ws://{await group.start(serve_local, replay_app(voice))}/v1/realtime"
            model = OpenAIRealtimeModel("gpt-realtime", api_key="replay", websocket_url=url)
            send, receive = anyio.create_memory_object_stream[Any](math.inf)
            await model.connect(
                send, "You are a helpful voice assistant.", toolkit.get_json_schemas()
            )
            audio = bytearray()
            try:
                # The user's utterance (here: the offline voice asking the question).
                question = await spoken(voice, "What is the weather in Paris?")
                source = Base64Source(media_type="audio/pcm;rate=22050", data=question)
                await model.send(AudioBlock(source=source))
                responses = 0
                with anyio.fail_after(30):
                    async for event in receive:
                        kind = event.type
                        if kind == ModelEventType.MODEL_INPUT_TRANSCRIPTION_DONE:
                            print(f"user (transcribed): {event.transcript}")
                        elif kind == ModelEventType.MODEL_RESPONSE_AUDIO_TRANSCRIPT_DELTA:
                            print(f"agent (speaking): {event.delta}")
                        elif kind == ModelEventType.MODEL_RESPONSE_AUDIO_DELTA:
                            audio += base64.b64decode(event.delta)
                        elif kind == ModelEventType.MODEL_RESPONSE_TOOL_USE_DONE:
                            call = event.tool_use
                            print(f"agent calls {call.name}({call.input})")
                            async for result in toolkit.call_tool_function(call):
                                output = result.content[0].text  # type: ignore[union-attr]
                            result_block = ToolResultBlock(
                                id=call.id, name=call.name, output=output
                            )
                            await model.send(result_block)
                        elif kind == ModelEventType.MODEL_RESPONSE_DONE:
                            responses += 1
                            if responses == 2:
                                break
            finally:
                await model.disconnect()
                group.cancel_scope.cancel()
        with wave.open(str(wav_path), "wb") as file:
            file.setnchannels(1)
            file.setsampwidth(2)
            file.setframerate(22050)  # the offline voice's rate
            file.writeframes(bytes(audio))
        print(f"agent audio: {len(audio) / 2 / 22050:.1f} s written to a WAV file")


if __name__ == "__main__":
    anyio.run(main, backend="trio" if "trio" in sys.argv[1:] else "asyncio")
