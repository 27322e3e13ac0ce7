"""A scripted HTTP/1.1 server on 127.0.0.1 speaking Ollama's and Gemini's wire protocols.

The server runs in a thread (so it serves tests on both anyio backends alike) and answers each
request with the next scripted :class:`Answer`: a JSON body with a status and headers, or a
stream sent with chunked transfer encoding, one write per event — NDJSON lines for Ollama,
``data: ...`` SSE events for Gemini. A stream can pause after some events until the test opens
``gate``; while paused the server watches the socket and sets ``disconnected`` when the client
hangs up. Every request is recorded with its path, query, headers and JSON body.
"""

from __future__ import annotations

import json
import select
import socket
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs

from .._local_http import LocalHTTPServer, QuietHandler
from ._wire_servers import echo_body


@attrs.define
class Answer:
    """One scripted answer: ``body`` (JSON) or ``events`` (raw texts, one write each)."""

    status: int = 200
    body: Any = None
    events: list[str] | None = None
    content_type: str = "application/json"
    headers: dict[str, str] = attrs.field(factory=dict)
    pause_after: int | None = None
    raw: bytes | None = None
    """A body sent byte for byte (with ``content_type``) instead of JSON."""
    echo: str | None = None
    """``"json"`` or ``"text"``: an error body quoting every request header."""


@attrs.define
class Request:
    """A request the server received."""

    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    peer: tuple[str, int] | None = None
    """The client's address: one peer for two requests means one reused connection."""


class ScriptedServer:
    """Serves scripted answers in order; use through :func:`running_server`."""

    def __init__(self) -> None:
        self.script: deque[Answer] = deque()
        self.requests: list[Request] = []
        self.gate = threading.Event()
        self.disconnected = threading.Event()
        self.completed_streams = 0
        self._http: LocalHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._http is not None
        return self._http.url

    def add(self, *answers: Answer) -> None:
        self.script.extend(answers)

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        parts = urlsplit(handler.path)
        self.requests.append(
            Request(
                parts.path,
                parse_qs(parts.query),
                {k.lower(): v for k, v in handler.headers.items()},
                json.loads(raw) if raw else None,
                handler.client_address[:2],
            )
        )
        answer = self.script.popleft() if self.script else Answer(500, {"error": "no script"})
        content_type = answer.content_type
        data = b""
        if answer.echo is not None:
            data, content_type = echo_body(dict(handler.headers.items()), answer.echo)
        elif answer.raw is not None:
            data = answer.raw
        elif answer.events is None:
            data = json.dumps(answer.body).encode()
        handler.send_response(answer.status)
        handler.send_header("content-type", content_type)
        for key, value in answer.headers.items():
            handler.send_header(key, value)
        if answer.events is None:
            handler.send_header("content-length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            return
        handler.send_header("transfer-encoding", "chunked")
        handler.end_headers()
        try:
            for index, event in enumerate(answer.events):
                if answer.pause_after is not None and index == answer.pause_after:
                    self._pause(handler.connection)
                data = event.encode()
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                handler.wfile.flush()
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
            self.completed_streams += 1
        except OSError:
            self.disconnected.set()
        handler.close_connection = True

    def _pause(self, connection: socket.socket) -> None:
        """Wait for ``gate``; notice (and report) a client that hangs up meanwhile."""
        while not self.gate.is_set():
            readable, _, _ = select.select([connection], [], [], 0.02)
            if readable:
                try:
                    peek = connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    peek = b""
                if not peek:
                    self.disconnected.set()
                    raise ConnectionResetError("client closed the stream")


@contextmanager
def running_server() -> Iterator[ScriptedServer]:
    """Start a :class:`ScriptedServer` on a free port of 127.0.0.1 and stop it afterwards."""
    server = ScriptedServer()

    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            server._answer(self)

    server._http = LocalHTTPServer(Handler, poll_interval=0.05)
    with server._http:
        try:
            yield server
        finally:
            server.gate.set()


# -- payload builders ---------------------------------------------------------------------------


def ndjson(*chunks: dict[str, Any]) -> list[str]:
    """Ollama stream events: one JSON object per line."""
    return [json.dumps(c) + "\n" for c in chunks]


def sse(*events: dict[str, Any]) -> list[str]:
    """Gemini stream events (``alt=sse``)."""
    return [f"data: {json.dumps(e)}\r\n\r\n" for e in events]


def ollama_chunk(
    content: str = "",
    *,
    thinking: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    done: bool = False,
    prompt_eval_count: int = 0,
    eval_count: int = 0,
) -> dict[str, Any]:
    """An ``/api/chat`` response object (a whole answer, or one NDJSON chunk)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    chunk: dict[str, Any] = {
        "model": "qwen3:0.6b",
        "created_at": "2025-01-01T00:00:00Z",
        "message": message,
        "done": done,
    }
    if done:
        chunk.update(
            done_reason="stop",
            total_duration=1_000_000,
            prompt_eval_count=prompt_eval_count,
            eval_count=eval_count,
        )
    return chunk


def gemini_response(
    *parts: dict[str, Any],
    prompt_tokens: int | None = None,
    output_tokens: int = 0,
    thoughts_tokens: int = 0,
    response_id: str = "resp-1",
) -> dict[str, Any]:
    """A ``GenerateContentResponse`` (a whole answer, or one stream event)."""
    data: dict[str, Any] = {
        "candidates": [{"content": {"role": "model", "parts": list(parts)}, "index": 0}],
        "modelVersion": "gemini-2.5-flash",
        "responseId": response_id,
    }
    if prompt_tokens is not None:
        data["candidates"][0]["finishReason"] = "STOP"
        data["usageMetadata"] = {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": output_tokens,
            "thoughtsTokenCount": thoughts_tokens,
            "totalTokenCount": prompt_tokens + output_tokens + thoughts_tokens,
        }
    return data


def gemini_error(code: int, message: str, status: str) -> dict[str, Any]:
    """Gemini's error body."""
    return {"error": {"code": code, "message": message, "status": status}}
