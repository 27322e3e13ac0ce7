"""A local server speaking each text-to-speech protocol, for wire tests.

uvicorn serves a Starlette app on 127.0.0.1 from a background thread (its own event loop), so
it answers tests on both anyio backends alike. Its "voice" is exact: each character of the
text becomes one 16-bit sample holding the character's code point (:func:`pcm_of`,
:func:`text_of`), so a test can read back which text the audio it received speaks.

* OpenAI ``POST /v1/audio/speech`` (raw PCM, sent in pieces);
* Gemini ``POST /v1beta/models/<model>:generateContent`` and ``:streamGenerateContent?alt=sse``;
* DashScope ``POST /api/v1/services/aigc/multimodal-generation/generation`` (SSE);
* DashScope realtime ``WS /api-ws/v1/realtime?model=...`` (Qwen TTS realtime events);
* DashScope ``WS /api-ws/v1/inference`` (CosyVoice's duplex run/continue/finish-task).

``fail`` holds scripted HTTP failures (status, JSON body), popped one per request;
``ws_fail`` an error event sent instead of audio; ``hold`` makes the WebSocket endpoints wait
(sending nothing more) after the input ends, until the client goes; ``silent`` makes them
accept and then send nothing at all; ``binary`` makes them answer every message with a binary
frame only (the test voice of its text); ``close_reason`` makes them close (code 1008, that
reason) on the client's first message. Everything received is recorded.
"""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import threading
from collections import deque
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from .._local_http import ThreadedASGIServer


def pcm_of(text: str) -> bytes:
    """The test voice: one little-endian 16-bit sample per character (its code point)."""
    return b"".join(struct.pack("<H", ord(c) & 0xFFFF) for c in text)


def text_of(pcm: bytes) -> str:
    """What :func:`pcm_of` audio says."""
    return "".join(chr(v) for (v,) in struct.iter_unpack("<H", pcm[: len(pcm) // 2 * 2]))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class TTSServer:
    """The scripted server; a context manager."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail: deque[tuple[int, Any]] = deque()
        self.ws_fail: dict[str, Any] | None = None
        self.hold = False
        self.silent = False
        self.binary = False
        self.close_reason: str | None = None
        self.ws_closed = threading.Event()
        self.ws_input_done = threading.Event()
        self._lock = threading.Lock()
        app = Starlette(
            routes=[
                WebSocketRoute("/api-ws/v1/realtime", self._realtime),
                WebSocketRoute("/api-ws/v1/inference", self._cosyvoice),
                Route("/v1/audio/speech", self._openai, methods=["POST"]),
                Route("/v1beta/models/{call:path}", self._gemini, methods=["POST"]),
                Route(
                    "/api/v1/services/aigc/multimodal-generation/generation",
                    self._dashscope,
                    methods=["POST"],
                ),
            ]
        )
        self._asgi = ThreadedASGIServer(app, "the TTS test server")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._asgi.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self._asgi.port}"

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.fail.clear()
            self.ws_fail = None
            self.hold = False
            self.silent = False
            self.binary = False
            self.close_reason = None
            self.ws_closed.clear()
            self.ws_input_done.clear()

    def __enter__(self) -> TTSServer:
        self._asgi.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._asgi.__exit__(*exc)

    def _record(self, request: Request | WebSocket, body: Any) -> dict[str, Any]:
        record = {
            "path": request.url.path,
            "query": request.url.query,
            "headers": {k.lower(): v for k, v in request.headers.items()},
            "json": body,
            "messages": [],
        }
        with self._lock:
            self.requests.append(record)
        return record

    def _failure(self) -> Response | None:
        with self._lock:
            if not self.fail:
                return None
            status, body = self.fail.popleft()
        return JSONResponse(body, status_code=status)

    # -- HTTP ------------------------------------------------------------------------------

    async def _openai(self, request: Request) -> Response:
        body = await request.json()
        self._record(request, body)
        if (failure := self._failure()) is not None:
            return failure
        pcm = pcm_of(body["input"])

        async def pieces() -> Any:
            for start in range(0, len(pcm), 5):  # odd sizes: the client must realign
                yield pcm[start : start + 5]
                await asyncio.sleep(0)

        return StreamingResponse(pieces(), media_type="application/octet-stream")

    async def _gemini(self, request: Request) -> Response:
        body = await request.json()
        self._record(request, body)
        if (failure := self._failure()) is not None:
            return failure
        text = body["contents"][0]["parts"][0]["text"]
        mime = "audio/L16;codec=pcm;rate=24000"

        def answer(part: str) -> dict[str, Any]:
            inline = {"mimeType": mime, "data": b64(pcm_of(part))}
            return {"candidates": [{"content": {"parts": [{"inlineData": inline}]}}]}

        if request.path_params["call"].endswith(":generateContent"):
            return JSONResponse(answer(text))

        async def events() -> Any:
            for start in range(0, len(text), 4):
                yield f"data: {json.dumps(answer(text[start : start + 4]))}\r\n\r\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    async def _dashscope(self, request: Request) -> Response:
        body = await request.json()
        self._record(request, body)
        if (failure := self._failure()) is not None:
            return failure
        text = body["input"]["text"]
        with self._lock:
            error = self.ws_fail

        async def events() -> Any:
            for start in range(0, len(text), 3):
                audio = {"data": b64(pcm_of(text[start : start + 3])), "id": "a1"}
                event = {"output": {"audio": audio, "finish_reason": "null"}, "request_id": "r"}
                yield f"id:{start}\nevent:result\n:HTTP_STATUS/200\ndata:{json.dumps(event)}\n\n"
                if error is not None:
                    yield f"event:error\n:HTTP_STATUS/400\ndata:{json.dumps(error)}\n\n"
                    return
            final = {"output": {"audio": {"data": "", "url": "u"}, "finish_reason": "stop"}}
            yield f"event:result\n:HTTP_STATUS/200\ndata:{json.dumps(final)}\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    # -- WebSocket -------------------------------------------------------------------------

    async def _misbehave(self, websocket: WebSocket, record: dict[str, Any]) -> bool:
        """Play ``silent``, ``binary`` or ``close_reason`` (whichever is set) until the client
        goes: whether one was."""
        if not (self.silent or self.binary or self.close_reason):
            return False
        try:
            while True:
                message = json.loads(await websocket.receive_text())
                record["messages"].append(message)
                if self.close_reason is not None:
                    await websocket.close(code=1008, reason=self.close_reason)
                    return True
                if self.binary:
                    await websocket.send_bytes(pcm_of(json.dumps(message)))
        except WebSocketDisconnect:
            self.ws_closed.set()
        return True

    async def _realtime(self, websocket: WebSocket) -> None:
        record = self._record(websocket, None)
        if (failure := self._failure()) is not None:
            await websocket.send_denial_response(failure)
            return
        await websocket.accept()
        if await self._misbehave(websocket, record):
            return
        await websocket.send_text(json.dumps({"type": "session.created", "session": {}}))
        try:
            while True:
                event = json.loads(await websocket.receive_text())
                record["messages"].append(event)
                kind = event["type"]
                if kind == "input_text_buffer.append":
                    if self.ws_fail is not None:
                        await websocket.send_text(json.dumps(self.ws_fail))
                        continue
                    delta = {"type": "response.audio.delta", "delta": b64(pcm_of(event["text"]))}
                    await websocket.send_text(json.dumps(delta))
                elif kind == "session.finish":
                    self.ws_input_done.set()
                    if self.hold:
                        await websocket.receive_text()  # until the client goes
                    for done in ("response.audio.done", "response.done", "session.finished"):
                        await websocket.send_text(json.dumps({"type": done}))
                    await websocket.close()
                    return
        except WebSocketDisconnect:
            self.ws_closed.set()

    async def _cosyvoice(self, websocket: WebSocket) -> None:
        record = self._record(websocket, None)
        if (failure := self._failure()) is not None:
            await websocket.send_denial_response(failure)
            return
        await websocket.accept()
        if await self._misbehave(websocket, record):
            return

        def event(name: str, task_id: str, **header: Any) -> str:
            head = {"event": name, "task_id": task_id, "attributes": {}, **header}
            return json.dumps({"header": head, "payload": {}})

        try:
            while True:
                message = json.loads(await websocket.receive_text())
                record["messages"].append(message)
                header = message["header"]
                task_id, action = header["task_id"], header["action"]
                if action == "run-task":
                    await websocket.send_text(event("task-started", task_id))
                elif action == "continue-task":
                    if self.ws_fail is not None:
                        await websocket.send_text(event("task-failed", task_id, **self.ws_fail))
                        continue
                    await websocket.send_bytes(pcm_of(message["payload"]["input"]["text"]))
                    await websocket.send_text(event("result-generated", task_id))
                elif action == "finish-task":
                    self.ws_input_done.set()
                    if self.hold:
                        await websocket.receive_text()
                    await websocket.send_text(event("task-finished", task_id))
                    await websocket.close()
                    return
        except WebSocketDisconnect:
            self.ws_closed.set()
