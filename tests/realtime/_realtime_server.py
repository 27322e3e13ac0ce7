"""A local WebSocket server playing a scripted OpenAI Realtime session, for wire tests.

uvicorn serves it on 127.0.0.1 from a background thread. The session: the client's
``session.update`` is recorded; the user's audio (the test voice of ``tests/tts``: one sample
per character) is collected until it says a full sentence ending in ``?``; then the server
answers as the API does — speech started/stopped, the input transcription, a response with
audio and transcript deltas, and, when the question names the weather, a function call whose
result (``function_call_output``) starts a second spoken response.

Each utterance starts afresh (speech started, what was heard reset once it is answered). A
session whose instructions read ``You are <Name>...`` answers only utterances that begin with
that name, with ``replies[utterance]`` (for rooms of agents that hear each other). A question
naming a story is answered with :data:`STORY` in 100 ms pieces of audio, held after
``barge_after`` pieces until the user speaks again: then the user's speech is reported started,
the rest of the story (already on its way, as from the real API) follows, and the response ends
cancelled (``truncated`` is set when a truncate arrives). Everything a session receives is
recorded in ``received`` and per session in ``sessions``; :meth:`log` waits until a session
has ended, so that everything its client sent before closing is in it. ``preamble`` holds raw
frames (text or binary) every server sends first, right after accepting: messages a client
cannot read; ``close_with`` (a code and a reason) makes the OpenAI session close on the first
message after the session's configuration.
"""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from .._local_http import ThreadedASGIServer
from ..tts._tts_servers import pcm_of, text_of


def b64(text: str) -> str:
    return base64.b64encode(pcm_of(text)).decode()


# Ten characters a piece; each piece is spoken as 100 ms of audio at 24 kHz (the piece repeated).
STORY = ("Once upon ", "a time the", "re was a d", "ragon. End")
STORY_REPEAT = 240


def story_audio(piece: str) -> str:
    return b64(piece * STORY_REPEAT)


class RealtimeServer:
    """The OpenAI session; a subclass plays another provider by overriding ``path`` and
    ``_session``."""

    path = "/v1/realtime"

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.sessions: list[list[dict[str, Any]]] = []
        self._ended: list[threading.Event] = []
        self.replies: dict[str, str] = {}
        self.barge_after = 2
        self.truncated = threading.Event()
        self.headers: dict[str, str] = {}
        self.closed = threading.Event()
        self.preamble: list[str | bytes] = []
        self.close_with: tuple[int, str] | None = None
        app = Starlette(routes=[WebSocketRoute(self.path, self._session)])
        self._asgi = ThreadedASGIServer(app, "the realtime test server")

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self._asgi.port}{self.path}"

    def __enter__(self) -> RealtimeServer:
        self._asgi.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._asgi.__exit__(*exc)

    async def log(self, session: int = 0) -> list[dict[str, Any]]:
        """What *session* (in the order they connected) received, once its client has closed
        it (10 s at most): a message the client sent just before closing may still be on its
        way before."""
        if not await anyio.to_thread.run_sync(self._ended[session].wait, 10.0):
            raise AssertionError(f"session {session} did not end within 10 s")
        return self.sessions[session]

    async def _accept(self, websocket: WebSocket) -> None:
        self.headers = {k.lower(): v for k, v in websocket.headers.items()}
        await websocket.accept()
        for frame in self.preamble:
            if isinstance(frame, bytes):
                await websocket.send_bytes(frame)
            else:
                await websocket.send_text(frame)

    async def _session(self, websocket: WebSocket) -> None:
        received: list[dict[str, Any]] = []
        ended = threading.Event()
        self.sessions.append(received)
        self._ended.append(ended)
        try:
            await self._play(websocket, received)
        finally:
            ended.set()

    async def _play(self, websocket: WebSocket, received: list[dict[str, Any]]) -> None:
        await self._accept(websocket)

        async def send(**event: Any) -> None:
            await websocket.send_text(json.dumps(event))

        async def respond(number: int, text: str) -> None:
            rid, item = f"resp_{number}", f"item_out_{number}"
            await send(type="response.created", response={"id": rid})
            for start in range(0, len(text), 6):
                piece = text[start : start + 6]
                await send(type="response.output_audio.delta", item_id=item, delta=b64(piece))
                await send(type="response.output_audio_transcript.delta", item_id=item, delta=piece)
            await send(type="response.output_audio.done", item_id=item)
            await send(type="response.output_audio_transcript.done", item_id=item)

        async def tell(pieces: tuple[str, ...] | list[str], item: str) -> None:
            for piece in pieces:
                await send(type="response.output_audio.delta", item_id=item,
                           delta=story_audio(piece))  # fmt: skip
                await send(type="response.output_audio_transcript.delta", item_id=item,
                           delta=piece)  # fmt: skip

        await send(type="session.created", session={"id": "sess_1"})
        heard, name, turn = "", "", 0
        held_rest: list[str] = []
        try:
            while True:
                event = json.loads(await websocket.receive_text())
                self.received.append(event)
                received.append(event)
                kind = event["type"]
                if self.close_with is not None and kind != "session.update":
                    await websocket.close(*self.close_with)
                    return
                if kind == "conversation.item.truncate":
                    self.truncated.set()
                elif kind == "session.update":
                    instructions = event["session"].get("instructions", "")
                    if instructions.startswith("You are "):
                        name = instructions[8:].split()[0].strip(".,")
                elif kind == "input_audio_buffer.append":
                    if not heard:
                        turn += 1
                        await send(type="input_audio_buffer.speech_started",
                                   item_id=f"in_{turn}", audio_start_ms=0)  # fmt: skip
                    if held_rest:  # the user speaks over the story
                        await tell(held_rest, "item_story")
                        held_rest = []
                        await send(type="response.done", response={
                            "id": "resp_story", "status": "cancelled"})  # fmt: skip
                    heard += text_of(base64.b64decode(event["audio"]))
                    if not heard.endswith("?"):
                        continue
                    utterance, heard = heard, ""
                    await send(type="input_audio_buffer.speech_stopped", item_id=f"in_{turn}",
                               audio_end_ms=len(utterance))  # fmt: skip
                    await send(type="conversation.item.input_audio_transcription.delta",
                               item_id=f"in_{turn}", delta=utterance[:5])  # fmt: skip
                    await send(type="conversation.item.input_audio_transcription.completed",
                               item_id=f"in_{turn}", transcript=utterance)  # fmt: skip
                    if name and not utterance.startswith(name):
                        continue  # said to another agent of the room
                    if "story" in utterance:
                        await send(type="response.created", response={"id": "resp_story"})
                        await tell(STORY[: self.barge_after], "item_story")
                        held_rest = list(STORY[self.barge_after :])
                        continue
                    if "weather" not in utterance:
                        await respond(1, self.replies.get(utterance, "I heard you."))
                        await send(type="response.done", response={"id": "resp_1", "usage": {
                            "input_tokens": 7, "output_tokens": 3}})  # fmt: skip
                        continue
                    await respond(1, "Let me check.")
                    args = json.dumps({"city": "Paris"})
                    for part in (args[:6], args[6:]):
                        await send(type="response.function_call_arguments.delta",
                                   item_id="fc_1", call_id="call_1", name="get_weather",
                                   delta=part)  # fmt: skip
                    await send(type="response.function_call_arguments.done", item_id="fc_1",
                               call_id="call_1", name="get_weather", arguments=args)  # fmt: skip
                    await send(type="response.done", response={"id": "resp_1", "usage": {
                        "input_tokens": 9, "output_tokens": 4}})  # fmt: skip
                elif kind == "conversation.item.create":
                    item = event["item"]
                    if item["type"] == "function_call_output":
                        await respond(2, f"It is {item['output']}.")
                        await send(type="response.done", response={"id": "resp_2"})
                    else:
                        await send(type="error", error={"type": "invalid_request_error",
                                   "code": "unsupported", "message": "no text here"})  # fmt: skip
        except WebSocketDisconnect:
            self.closed.set()
