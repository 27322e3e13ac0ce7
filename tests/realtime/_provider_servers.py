"""Local WebSocket servers playing scripted Gemini Live and DashScope (Qwen-Omni) realtime
sessions, for wire tests; served like :class:`RealtimeServer` (uvicorn, 127.0.0.1).

Both hear the test voice (``tests/tts``: one sample per character) until a sentence ends in
``?``, then answer: a question naming the weather gets a function call (Gemini) whose result
starts the spoken answer; a question asking for a story gets an answer that never ends by
itself, so the user's next words interrupt it (the barge-in); any other question gets
"I heard you.". Provider errors follow each protocol: Gemini closes the connection with a code
and a reason (and may announce it with ``goAway``), DashScope sends an ``error`` event.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream
from starlette.websockets import WebSocket, WebSocketDisconnect

from agentscope_rt.message import AudioBlock, Base64Source
from agentscope_rt.realtime import ModelEventType, RealtimeModelBase

from ..tts._tts_servers import pcm_of, text_of
from ._realtime_server import RealtimeServer, b64


def _pieces(text: str) -> list[str]:
    return [text[start : start + 6] for start in range(0, len(text), 6)]


class GeminiServer(RealtimeServer):
    path = "/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContent"

    async def _session(self, websocket: WebSocket) -> None:
        await self._accept(websocket)

        async def send(**message: Any) -> None:
            # Gemini sends its JSON in binary frames.
            await websocket.send_bytes(json.dumps(message).encode())

        async def speak(text: str) -> None:
            for piece in _pieces(text):
                audio = {"mimeType": "audio/pcm;rate=24000", "data": b64(piece)}
                await send(serverContent={"modelTurn": {"parts": [{"inlineData": audio}]}})
                await send(serverContent={"outputTranscription": {"text": piece}})

        async def finish(prompt: int, output: int) -> None:
            await send(serverContent={"generationComplete": True})
            usage = {"promptTokenCount": prompt, "responseTokenCount": output}
            await send(serverContent={"turnComplete": True}, usageMetadata=usage)

        heard, speaking = "", False
        try:
            while True:
                message = json.loads(await websocket.receive_text())
                self.received.append(message)
                if "setup" in message:
                    await send(setupComplete={})
                elif "video" in message.get("realtimeInput", {}):
                    continue  # an image: seen, kept for the next answer
                elif "realtimeInput" in message:
                    piece = text_of(base64.b64decode(message["realtimeInput"]["audio"]["data"]))
                    if speaking:
                        await send(serverContent={"interrupted": True})
                        speaking = False
                    heard += piece
                    await send(serverContent={"inputTranscription": {"text": piece}})
                    if not heard.endswith("?"):
                        continue
                    question, heard = heard, ""
                    if "weather" in question:
                        await speak("Let me check.")
                        call = {"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}}
                        await send(toolCall={"functionCalls": [call]})
                    elif "story" in question:
                        await speak("Once upon a time")
                        speaking = True
                    else:
                        await speak("I heard you.")
                        await finish(7, 3)
                elif "toolResponse" in message:
                    answer = message["toolResponse"]["functionResponses"][0]["response"]
                    await speak(f"It is {answer['result']}.")
                    await finish(9, 4)
                elif "clientContent" in message:
                    await send(goAway={"timeLeft": "0s"})
                    await websocket.close(code=1008, reason="Request contains an invalid argument.")
                    return
        except WebSocketDisconnect:
            self.closed.set()


class DashScopeServer(RealtimeServer):
    path = "/api-ws/v1/realtime"

    async def _session(self, websocket: WebSocket) -> None:
        self.query = dict(websocket.query_params)
        await self._accept(websocket)

        async def send(**event: Any) -> None:
            await websocket.send_text(json.dumps(event))

        async def speak(number: int, text: str) -> None:
            item = f"item_out_{number}"
            for piece in _pieces(text):
                await send(type="response.audio.delta", item_id=item, delta=b64(piece))
                await send(type="response.audio_transcript.delta", item_id=item, delta=piece)

        async def finish(number: int, usage: dict[str, int]) -> None:
            item = f"item_out_{number}"
            await send(type="response.audio.done", item_id=item)
            await send(type="response.audio_transcript.done", item_id=item)
            await send(type="response.done", response={"id": f"resp_{number}", "usage": usage})

        await send(type="session.created", session={"id": "sess_ds"})
        heard, turn, speaking = "", 0, False
        try:
            while True:
                event = json.loads(await websocket.receive_text())
                self.received.append(event)
                kind = event["type"]
                if kind == "session.update":
                    await send(type="session.updated", session=event["session"])
                elif kind == "input_audio_buffer.append":
                    item = f"in_{turn + 1}"
                    if not heard:
                        await send(type="input_audio_buffer.speech_started", item_id=item,
                                   audio_start_ms=turn * 1000)  # fmt: skip
                    if speaking:  # the server VAD cancels the answer in progress
                        cancelled = {"id": f"resp_{turn}", "status": "cancelled"}
                        await send(type="response.done", response=cancelled)
                        speaking = False
                    heard += text_of(base64.b64decode(event["audio"]))
                    if not heard.endswith("?"):
                        continue
                    turn += 1
                    await send(type="input_audio_buffer.speech_stopped", item_id=item,
                               audio_end_ms=len(heard))  # fmt: skip
                    await send(type="conversation.item.input_audio_transcription.completed",
                               item_id=item, transcript=heard)  # fmt: skip
                    await send(type="response.created", response={"id": f"resp_{turn}"})
                    if "story" in heard:
                        await speak(turn, "Once upon a time")
                        speaking = True
                    else:
                        await speak(turn, "I heard you.")
                        await finish(turn, {"input_tokens": 7, "output_tokens": 3})
                    heard = ""
                elif kind == "response.create":
                    await send(type="error", error={"type": "invalid_request_error",
                               "code": "InvalidParameter",
                               "message": "text input is not supported"})  # fmt: skip
                elif kind == "input_image_buffer.append":
                    await websocket.close(code=1011, reason="Internal server error")
                    return
        except WebSocketDisconnect:
            self.closed.set()


WEATHER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather of a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
"""One tool, in the schema the agent hands its realtime model."""


def serving(cls: type[RealtimeServer]) -> Any:
    """A ``server`` fixture: a *cls* server running for the test."""

    @pytest.fixture
    def server() -> Iterator[RealtimeServer]:
        with cls() as running:
            yield running

    return server


def audio_block(text: str, rate: int) -> AudioBlock:
    """*text* said by the test voice, as a base64 PCM block at *rate* Hz."""
    data = base64.b64encode(pcm_of(text)).decode()
    return AudioBlock(source=Base64Source(media_type=f"audio/pcm;rate={rate}", data=data))


async def until(receive: Any, kind: Any) -> list[Any]:
    """The events received up to and including the first of type *kind*."""
    events = []
    with anyio.fail_after(15):
        async for event in receive:
            events.append(event)
            if event.type == kind:
                return events
    raise AssertionError(f"the stream ended before {kind}")


@asynccontextmanager
async def connected(
    model: RealtimeModelBase, instructions: str = "", tools: list[dict[str, Any]] | None = None
) -> AsyncIterator[MemoryObjectReceiveStream[Any]]:
    """*model* connected for the block: what it reports arrives on the stream yielded.
    Leaving the block disconnects it and closes the stream."""
    send, receive = anyio.create_memory_object_stream[Any](math.inf)
    await model.connect(send, instructions, tools)
    try:
        yield receive
    finally:
        await model.disconnect()
        send.close()
        receive.close()


def spoken(events: list[Any]) -> tuple[str, str]:
    """The answer's audio in *events* (decoded by the test voice) and its transcript."""
    audio = b"".join(
        base64.b64decode(e.delta)
        for e in events
        if e.type == ModelEventType.MODEL_RESPONSE_AUDIO_DELTA
    )
    words = "".join(
        e.delta for e in events if e.type == ModelEventType.MODEL_RESPONSE_AUDIO_TRANSCRIPT_DELTA
    )
    return text_of(audio), words
