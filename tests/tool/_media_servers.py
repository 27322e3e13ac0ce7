"""A scripted local server speaking the OpenAI and DashScope media protocols, for wire tests.

uvicorn serves a starlette app on 127.0.0.1 from a background thread (its own event loop), so
it serves tests on both anyio backends alike. It speaks:

* HTTP: each request pops the next :class:`Reply` from ``script`` (JSON or raw bytes, any
  status); when the script is empty, ``default`` answers (or a 500 saying so). Multipart
  bodies (OpenAI image edits, variations, transcriptions) are parsed into form fields and
  files. ``GET /files/<name>`` serves ``files[name]`` without touching the script, for
  downloads.
* WebSocket at ``/api-ws/v1/inference`` (DashScope's duplex protocol, served by uvicorn over
  ``wsproto``): each connection pops the next :class:`WsScript`, which either refuses the
  upgrade with an HTTP status or, after the client's ``run-task``, sends its messages (JSON
  events get the client's ``task_id`` filled in) and closes.

Every request is recorded (:class:`Recorded`).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import anyio
import attrs
import pytest
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from .._local_http import ThreadedASGIServer

WS_PATH = "/api-ws/v1/inference"


@attrs.define
class Reply:
    """One scripted HTTP answer: *json* (any JSON value) or raw *content*."""

    status: int = 200
    json: Any = None
    content: bytes | None = None
    content_type: str = "application/octet-stream"
    headers: dict[str, str] = attrs.field(factory=dict)


@attrs.define
class WsScript:
    """One scripted WebSocket session.

    :ivar reject: refuse the upgrade with this HTTP status (and *reject_body* as JSON).
    :ivar messages: sent after ``run-task``; a dict is a JSON event (``header.task_id`` set to
        the client's), bytes are a binary message.
    :ivar close_code: close with this code after the messages.
    :ivar hold_open: instead of closing, wait for the client to close (``ws_closed_by_client``).
    """

    reject: int | None = None
    reject_body: Any = None
    messages: list[dict[str, Any] | bytes] = attrs.field(factory=list)
    close_code: int = 1000
    hold_open: bool = False


@attrs.define
class Recorded:
    """A request the server received."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    json: Any = None
    form: dict[str, str] = attrs.field(factory=dict)
    files: dict[str, tuple[str | None, str | None, bytes]] = attrs.field(factory=dict)
    ws_messages: list[Any] = attrs.field(factory=list)


def ws_event(event: str, payload: dict[str, Any] | None = None, **header: Any) -> dict[str, Any]:
    """A DashScope WebSocket event (``task_id`` is filled in by the server)."""
    return {"header": {"event": event, "attributes": {}, **header}, "payload": payload or {}}


async def _trickle() -> AsyncIterator[bytes]:
    """A body that never ends, one byte every 0.2 s (each read is quick, the whole is not)."""
    for _ in range(600):
        yield b"x"
        await anyio.sleep(0.2)


class MediaServer:
    """The scripted server (``/files/<name>`` serves :attr:`files`, ``/trickle/<name>`` a
    body that never ends); use as a context manager."""

    def __init__(self) -> None:
        self.script: deque[Reply] = deque()
        self.ws_script: deque[WsScript] = deque()
        self.default: Reply | None = None
        self.files: dict[str, tuple[bytes, str]] = {}
        self.requests: list[Recorded] = []
        self.ws_closed_by_client = threading.Event()
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        app = Starlette(
            routes=[
                WebSocketRoute(WS_PATH, self._websocket),
                Route("/{path:path}", self._http, methods=["GET", "POST"]),
            ]
        )
        self._asgi = ThreadedASGIServer(app, "the media test server")

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._asgi.port}"

    @property
    def ws_url(self) -> str:
        """The WebSocket endpoint, ``ws://127.0.0.1:<port>/api-ws/v1/inference``."""
        return f"ws://127.0.0.1:{self._asgi.port}{WS_PATH}"

    def reset(self) -> None:
        """Forget the scripts, files and recorded requests."""
        with self._lock:
            self.script.clear()
            self.ws_script.clear()
            self.default = None
            self.files.clear()
            self.requests.clear()
            self.ws_closed_by_client.clear()

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> bool:
        """Block until *count* requests have arrived (run it in a worker thread)."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.requests) >= count, timeout)

    def wait_for_ws_message(self, timeout: float = 10.0) -> bool:
        """Block until a WebSocket client has sent its first message."""
        with self._arrived:
            return self._arrived.wait_for(
                lambda: any(r.ws_messages for r in self.requests), timeout
            )

    def add(self, *replies: Reply) -> None:
        """Append HTTP replies to the script."""
        self.script.extend(replies)

    def __enter__(self) -> MediaServer:
        self._asgi.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._asgi.__exit__(*exc)

    # -- HTTP -------------------------------------------------------------------------------

    async def _http(self, request: Request) -> Response:
        record = Recorded(
            request.method,
            request.url.path,
            request.url.query,
            {k.lower(): v for k, v in request.headers.items()},
        )
        content_type = request.headers.get("content-type", "")
        if content_type.startswith("multipart/form-data"):
            async with request.form() as form:
                for name, value in form.multi_items():
                    if isinstance(value, UploadFile):
                        record.files[name] = (
                            value.filename,
                            value.content_type,
                            await value.read(),
                        )
                    else:
                        record.form[name] = value
        else:
            raw = await request.body()
            if raw:
                record.json = json.loads(raw)
        with self._lock:
            self.requests.append(record)
            self._arrived.notify_all()
            if request.url.path.startswith("/trickle/"):
                return StreamingResponse(_trickle(), media_type="audio/mpeg")
            if request.url.path.startswith("/files/"):
                name = request.url.path.removeprefix("/files/")
                if name not in self.files:
                    return JSONResponse({"message": "no such file"}, status_code=404)
                data, media_type = self.files[name]
                return Response(data, media_type=media_type)
            reply = self.script.popleft() if self.script else self.default
        if reply is None:
            return JSONResponse({"error": {"message": "script exhausted"}}, status_code=500)
        if reply.content is not None:
            return Response(
                reply.content, reply.status, reply.headers, media_type=reply.content_type
            )
        return JSONResponse(reply.json, reply.status, reply.headers)

    # -- WebSocket --------------------------------------------------------------------------

    async def _websocket(self, websocket: WebSocket) -> None:
        record = Recorded(
            "WS",
            websocket.url.path,
            websocket.url.query,
            {k.lower(): v for k, v in websocket.headers.items()},
        )
        with self._lock:
            self.requests.append(record)
            script = self.ws_script.popleft() if self.ws_script else WsScript(reject=500)
        if script.reject is not None:
            await websocket.send_denial_response(
                JSONResponse(script.reject_body, status_code=script.reject)
            )
            return
        await websocket.accept()
        try:
            run_task = json.loads(await websocket.receive_text())
            with self._lock:
                record.ws_messages.append(run_task)
                self._arrived.notify_all()
            task_id = run_task["header"]["task_id"]
            for message in script.messages:
                if isinstance(message, bytes):
                    await websocket.send_bytes(message)
                else:
                    event = {**message, "header": {**message["header"], "task_id": task_id}}
                    await websocket.send_text(json.dumps(event))
            if script.hold_open:
                await websocket.receive_text()  # until the client closes
            await websocket.close(script.close_code)
        except WebSocketDisconnect:
            self.ws_closed_by_client.set()


def serve_http(server: MediaServer, monkeypatch: pytest.MonkeyPatch) -> MediaServer:
    """*server*, reset, with the OpenAI and DashScope HTTP clients pointed at it for the test."""
    server.reset()
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    monkeypatch.setenv("DASHSCOPE_HTTP_BASE_URL", f"{server.url}/api/v1")
    return server


def chat_completion(content: str) -> Reply:
    """OpenAI's chat completion answering *content* (what ``openai_image_to_text`` reads)."""
    return Reply(
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
    )
