"""A scripted HTTP/1.1 server on 127.0.0.1 for wire-level model tests.

The server runs in a background thread (started and stopped by a fixture), so it serves tests on
both anyio backends alike. Each request pops the next :class:`Reply` from the script: a JSON
body, an SSE stream (chunked transfer encoding, one event per write), or an error status with
headers such as ``Retry-After``. Every request is recorded (path, headers, JSON body) and the
server notices when a client closes a stream early (``disconnected``).

Helpers build the real payloads: OpenAI ``chat.completions`` objects and chunks, and Anthropic
``messages`` objects and stream events.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections import deque
from typing import Any

import attrs

from .._local_http import LocalHTTPServer, QuietHandler, send_body, send_json


@attrs.define
class Reply:
    """One scripted answer.

    :ivar status: HTTP status.
    :ivar body: JSON body (for non-streaming answers and errors).
    :ivar events: SSE event texts (``"data: ...\\n\\n"``) sent one per write.
    :ivar headers: extra response headers.
    :ivar interval: seconds between two events.
    :ivar gate_after: after this many events, wait until the test sets ``server.gate``.
    :ivar raw: a body sent byte for byte (with *content_type*) instead of JSON.
    :ivar echo: ``"json"`` or ``"text"``: answer with an error body that quotes every request
        header (keys and ``Authorization`` included), as careless servers and proxies do.
    :ivar reset: after the events, reset the connection (a TCP RST) instead of ending the body.
    """

    status: int = 200
    body: Any = None
    events: list[str | bytes] | None = None
    headers: dict[str, str] = attrs.field(factory=dict)
    interval: float = 0.0
    gate_after: int | None = None
    raw: bytes | None = None
    content_type: str = "application/json"
    echo: str | None = None
    reset: bool = False


def echo_body(headers: dict[str, str], kind: str) -> tuple[bytes, str]:
    """An error body quoting *headers*: JSON in the providers' error shape, or plain text."""
    quoted = "; ".join(f"{k}: {v}" for k, v in headers.items())
    if kind == "text":
        return f"Bad request. You sent {quoted}".encode(), "text/plain"
    body = {"error": {"message": f"Invalid request with {quoted}", "type": "invalid_request"}}
    return json.dumps(body).encode(), "application/json"


@attrs.define
class Recorded:
    """A request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    peer: tuple[str, int] | None = None
    """The client's address: one peer for two requests means one reused connection."""


class WireServer(LocalHTTPServer):
    """The scripted server; use as a context manager (the fixture does)."""

    def __init__(self) -> None:
        self.script: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.disconnected = threading.Event()
        self.gate = threading.Event()
        self.finished_streams = 0
        self._lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                with server._lock:
                    server.requests.append(
                        Recorded(
                            "POST",
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                            self.client_address[:2],
                        )
                    )
                    reply = server.script.popleft() if server.script else None
                if reply is None:
                    self._send_json(500, {"error": {"message": "script exhausted"}})
                    return
                if reply.echo is not None:
                    raw, kind = echo_body(dict(self.headers.items()), reply.echo)
                    self._send_raw(reply.status, raw, kind, reply.headers)
                elif reply.raw is not None:
                    self._send_raw(reply.status, reply.raw, reply.content_type, reply.headers)
                elif reply.events is None:
                    self._send_json(reply.status, reply.body, reply.headers)
                else:
                    self._send_events(reply)

            do_GET = do_POST

            def _send_json(
                self, status: int, body: Any, headers: dict[str, str] | None = None
            ) -> None:
                send_json(self, status, body, headers)

            def _send_raw(
                self, status: int, data: bytes, content_type: str, headers: dict[str, str]
            ) -> None:
                send_body(self, status, data, content_type, headers)

            def _send_events(self, reply: Reply) -> None:
                self.send_response(reply.status)
                self.send_header(
                    "content-type",
                    "text/event-stream"
                    if reply.content_type == "application/json"
                    else reply.content_type,
                )
                self.send_header("transfer-encoding", "chunked")
                self.send_header("cache-control", "no-cache")
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                try:
                    for index, event in enumerate(reply.events or []):
                        if reply.gate_after is not None and index == reply.gate_after:
                            server.gate.wait(10)
                        elif index and reply.interval:
                            time.sleep(reply.interval)
                        data = event if isinstance(event, bytes) else event.encode()
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                        self.wfile.flush()
                    if reply.reset:
                        self._reset()
                        return
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    with server._lock:
                        server.finished_streams += 1
                except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                    server.disconnected.set()
                    self.close_connection = True

            def _reset(self) -> None:
                # A zero linger makes close() send RST: the peer sees its read fail
                # mid-body, as when a proxy or a crashed server drops the connection.
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.connection.close()
                self.close_connection = True

        super().__init__(Handler)

    def add(self, *replies: Reply) -> None:
        """Append replies to the script."""
        self.script.extend(replies)

    def __exit__(self, *exc: object) -> None:
        self.gate.set()
        super().__exit__(*exc)


def free_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (for connection-error tests)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def sse(data: Any, event: str | None = None) -> str:
    """One SSE event; *data* is JSON-encoded unless it is a string."""
    text = data if isinstance(data, str) else json.dumps(data)
    prefix = f"event: {event}\n" if event else ""
    return f"{prefix}data: {text}\n\n"


# -- OpenAI chat.completions ------------------------------------------------------------------


def openai_completion(
    content: str | None = None,
    tool_calls: list[tuple[str, str, str]] | None = None,
    reasoning: str | None = None,
    usage: tuple[int, int] = (10, 5),
    id: str = "chatcmpl-1",
) -> dict[str, Any]:
    """A ``chat.completion`` object; *tool_calls* are ``(id, name, arguments_text)``."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if tool_calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in tool_calls
        ]
    return {
        "id": id,
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        },
    }


def openai_chunk(
    delta: dict[str, Any] | None = None,
    usage: tuple[int, int] | None = None,
    finish_reason: str | None = None,
    id: str = "chatcmpl-s1",
) -> str:
    """One ``chat.completion.chunk`` SSE event (``delta=None`` gives a usage-only chunk)."""
    chunk: dict[str, Any] = {
        "id": id,
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-test",
        "choices": []
        if delta is None
        else [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    if usage is not None:
        chunk["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    return sse(chunk)


def openai_text_stream(pieces: list[str], usage: tuple[int, int] = (7, 3)) -> list[str]:
    """Events streaming *pieces* of text, a usage chunk and ``[DONE]``."""
    events = [openai_chunk({"role": "assistant", "content": ""})]
    events += [openai_chunk({"content": p}) for p in pieces]
    events.append(openai_chunk({}, finish_reason="stop"))
    events.append(openai_chunk(None, usage=usage))
    events.append(sse("[DONE]"))
    return events


def openai_tool_delta(
    index: int, arguments: str, id: str | None = None, name: str | None = None
) -> str:
    """A chunk carrying part of tool call *index*."""
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if id is not None:
        call["id"] = id
        call["type"] = "function"
        call["function"]["name"] = name
    return openai_chunk({"tool_calls": [call]})


# -- Anthropic messages -----------------------------------------------------------------------


def anthropic_message(
    content: list[dict[str, Any]], usage: tuple[int, int] = (12, 6), id: str = "msg_1"
) -> dict[str, Any]:
    """A ``message`` object."""
    return {
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def anthropic_event(kind: str, **fields: Any) -> str:
    """One Anthropic SSE event (``event:`` line plus JSON data with the same ``type``)."""
    return sse({"type": kind, **fields}, event=kind)


def anthropic_stream(
    blocks: list[tuple[str, list[str]] | tuple[str, list[str], dict[str, Any]]],
    usage: tuple[int, int] = (12, 6),
    id: str = "msg_s1",
) -> list[str]:
    """Events for a streamed message.

    Each block is ``(kind, deltas)`` or ``(kind, deltas, start_fields)`` with kind ``text``,
    ``thinking`` or ``tool_use`` (deltas are text pieces, thinking pieces or partial JSON).
    """
    events = [
        anthropic_event(
            "message_start",
            message={
                "id": id,
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": usage[0], "output_tokens": 1},
            },
        )
    ]
    for index, spec in enumerate(blocks):
        kind, deltas = spec[0], spec[1]
        extra: dict[str, Any] = spec[2] if len(spec) > 2 else {}  # type: ignore[misc]
        if kind == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
        elif kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
        else:
            start = {"type": "tool_use", "input": {}, **extra}
        events.append(anthropic_event("content_block_start", index=index, content_block=start))
        for piece in deltas:
            if kind == "text":
                delta = {"type": "text_delta", "text": piece}
            elif kind == "thinking":
                delta = {"type": "thinking_delta", "thinking": piece}
            else:
                delta = {"type": "input_json_delta", "partial_json": piece}
            events.append(anthropic_event("content_block_delta", index=index, delta=delta))
        if kind == "thinking":
            events.append(
                anthropic_event(
                    "content_block_delta",
                    index=index,
                    delta={"type": "signature_delta", "signature": "sig-1"},
                )
            )
        events.append(anthropic_event("content_block_stop", index=index))
    events.append(
        anthropic_event(
            "message_delta",
            delta={"stop_reason": "end_turn", "stop_sequence": None},
            usage={"output_tokens": usage[1]},
        )
    )
    events.append(anthropic_event("message_stop"))
    return events
