"""Gemini's and DashScope's realtime models on recorded sessions, offline.

Two small local servers (Starlette on hypercorn, in this program's own event loop) stand in for
Gemini's Live API and DashScope's Qwen-Omni realtime API: when the user's audio arrives each
replays a recorded answer in its own protocol — Gemini's ``serverContent`` with inline audio,
transcriptions and a ``toolCall``, DashScope's OpenAI-like ``response.audio.delta`` events. The
models connect to them exactly as they would to the providers, and the program prints the
provider-neutral model events both produce (the same names for both), with their sample rates.
The "audio" is a tone, so nothing needs a voice.

Needs the ``studio`` extra (Starlette, hypercorn) and ``dashscope`` (wsproto).
Run with ``python examples/98_realtime_gemini_dashscope.py`` (add ``trio`` to run on trio).

What to look for: one block per provider, each starting with its sample rates (Gemini takes
16 kHz and answers at 24 kHz); within it the same event names for both providers — the user's
transcription, the agent's transcript as it speaks, the seconds of audio received, the tool
call (Gemini only: DashScope's realtime model takes no tools) and the token counts.
"""

from __future__ import annotations

import base64
import json
import math
import struct
import sys
from typing import Any

import anyio
from _serve import serve_local
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from agentscope_rt.message import AudioBlock, Base64Source, ToolResultBlock
from agentscope_rt.realtime import (
    DashScopeRealtimeModel,
    GeminiRealtimeModel,
    ModelEventType,
    RealtimeModelBase,
)

GEMINI_PATH = "/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContent"
DASHSCOPE_PATH = "/api-ws/v1/realtime"
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


def tone(seconds: float, rate: int) -> str:
    """A 440 Hz tone as base64 16-bit mono PCM."""
    samples = (
        int(8000 * math.sin(2 * math.pi * 440 * n / rate)) for n in range(int(seconds * rate))
    )
    return base64.b64encode(b"".join(struct.pack("<h", s) for s in samples)).decode()


async def gemini_session(websocket: WebSocket) -> None:
    await websocket.accept()

    async def send(**message: Any) -> None:
        await websocket.send_bytes(json.dumps(message).encode())  # Gemini sends binary frames

    async def speak(text: str) -> None:
        audio = {"mimeType": "audio/pcm;rate=24000", "data": tone(0.2, 24000)}
        await send(serverContent={"modelTurn": {"parts": [{"inlineData": audio}]}})
        await send(serverContent={"outputTranscription": {"text": text}})

    try:
        while True:
            message = json.loads(await websocket.receive_text())
            if "setup" in message:
                await send(setupComplete={})
            elif "realtimeInput" in message:
                await send(serverContent={"inputTranscription": {"text": "What's the weather?"}})
                await speak("Let me check. ")
                call = {"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}}
                await send(toolCall={"functionCalls": [call]})
            elif "toolResponse" in message:
                result = message["toolResponse"]["functionResponses"][0]["response"]["result"]
                await speak(f"It is {result}.")
                await send(serverContent={"generationComplete": True})
                usage = {"promptTokenCount": 12, "responseTokenCount": 8}
                await send(serverContent={"turnComplete": True}, usageMetadata=usage)
    except WebSocketDisconnect:
        return


async def dashscope_session(websocket: WebSocket) -> None:
    await websocket.accept()

    async def send(**event: Any) -> None:
        await websocket.send_text(json.dumps(event))

    await send(type="session.created", session={"id": "sess_replay"})
    try:
        while True:
            event = json.loads(await websocket.receive_text())
            if event["type"] != "input_audio_buffer.append":
                continue
            await send(type="input_audio_buffer.speech_started", item_id="in_1", audio_start_ms=0)
            await send(type="input_audio_buffer.speech_stopped", item_id="in_1", audio_end_ms=900)
            await send(type="conversation.item.input_audio_transcription.completed",
                       item_id="in_1", transcript="Tell me a joke.")  # fmt: skip
            await send(type="response.created", response={"id": "resp_1"})
            await send(type="response.audio.delta", item_id="out_1", delta=tone(0.2, 24000))
            await send(type="response.audio_transcript.delta", item_id="out_1",
                       delta="Why did the chicken cross the road?")  # fmt: skip
            await send(type="response.audio.done", item_id="out_1")
            await send(type="response.audio_transcript.done", item_id="out_1")
            usage = {"input_tokens": 20, "output_tokens": 9}
            await send(type="response.done", response={"id": "resp_1", "usage": usage})
    except WebSocketDisconnect:
        return


async def converse(model: RealtimeModelBase, tools: list[dict[str, Any]] | None) -> None:
    """One spoken question to *model*; prints its events until its answer is done."""
    print(f"--- {type(model).__name__}: {model.input_sample_rate} Hz in, "
          f"{model.output_sample_rate} Hz out")  # fmt: skip
    send, receive = anyio.create_memory_object_stream[Any](math.inf)
    await model.connect(send, "You are a helpful voice assistant.", tools)
    try:
        audio = tone(0.5, model.input_sample_rate)
        media = f"audio/pcm;rate={model.input_sample_rate}"
        await model.send(AudioBlock(source=Base64Source(media_type=media, data=audio)))
        with anyio.fail_after(30):
            async for event in receive:
                kind = event.type
                if kind == ModelEventType.MODEL_INPUT_TRANSCRIPTION_DONE:
                    print(f"user (transcribed): {event.transcript}")
                elif kind == ModelEventType.MODEL_RESPONSE_AUDIO_TRANSCRIPT_DELTA:
                    print(f"agent (speaking): {event.delta}")
                elif kind == ModelEventType.MODEL_RESPONSE_AUDIO_DELTA:
                    seconds = len(base64.b64decode(event.delta)) / 2 / event.format.rate
                    print(f"agent audio: {seconds:.1f} s at {event.format.rate} Hz")
                elif kind == ModelEventType.MODEL_RESPONSE_TOOL_USE_DONE:
                    call = event.tool_use
                    print(f"agent calls {call.name}({call.input})")
                    await model.send(ToolResultBlock(id=call.id, name=call.name, output="sunny"))
                elif kind == ModelEventType.MODEL_RESPONSE_DONE:
                    print(f"done: {event.input_tokens} tokens in, {event.output_tokens} out")
                    break
    finally:
        await model.disconnect()
        send.close()
        receive.close()


async def main() -> None:
    app = Starlette(
        routes=[
            WebSocketRoute(GEMINI_PATH, gemini_session),
            WebSocketRoute(DASHSCOPE_PATH, dashscope_session),
        ]
    )
    async with anyio.create_task_group() as group:
        base = f"ws://{await group.start(serve_local, app)}"
        gemini = GeminiRealtimeModel(
            "gemini-2.5-flash-native-audio-preview-09-2025",
            api_key="replay",
            websocket_url=base + GEMINI_PATH,
        )
        await converse(gemini, TOOLS)
        qwen = DashScopeRealtimeModel(
            "qwen3-omni-flash-realtime", api_key="replay", websocket_url=base + DASHSCOPE_PATH
        )
        await converse(qwen, None)
        group.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main, backend="trio" if "trio" in sys.argv[1:] else "asyncio")
