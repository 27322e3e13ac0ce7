"""One scripted HTTP/1.1 server on 127.0.0.1 for every wire-level model test, and the payloads
of each provider's protocol.

The server runs in a background thread (started and stopped by a fixture), so it serves tests on
both anyio backends alike. Each request takes the next :class:`Reply` of the script, the one way
a test declares what the server answers: a JSON body (or one built from the request), bytes as
they are, a stream of events (chunked transfer encoding, one write per event: SSE for OpenAI,
Anthropic, DashScope and Gemini, NDJSON lines for Ollama), an error status with headers such as
``Retry-After``, a delay before the answer or between events, a pause until the test opens
``gate``, a reset connection. Every request is recorded (path, query, headers, body, peer;
``requested`` is set at the first), and the server notices when a client hangs up
(``disconnected``), even while a stream is paused.

Builders make the real payloads: OpenAI ``chat.completions`` objects and chunks, Anthropic
``messages`` objects and stream events, Ollama ``/api/chat`` chunks, Gemini
``GenerateContentResponse`` objects and errors.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import threading
import time
from collections import deque
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs

from .._local_http import LocalHTTPServer, QuietHandler, send_body


@attrs.define
class Reply:
    """One scripted answer.

    :ivar status: HTTP status.
    :ivar body: JSON body (for non-streaming answers and errors), or a function of the
        :class:`Recorded` request returning it.
    :ivar events: event texts (``"data: ...\\n\\n"``, NDJSON lines) sent one per write.
    :ivar headers: extra response headers.
    :ivar content_type: the body's type; a stream left at the default is ``text/event-stream``.
    :ivar delay: seconds to wait before answering (a provider that never answers: a delay
        longer than the test, which ends when the server stops).
    :ivar interval: seconds between two events.
    :ivar gate_after: after this many events, wait until the test sets ``server.gate`` (a
        client that hangs up meanwhile sets ``server.disconnected``).
    :ivar raw: a body sent byte for byte (with *content_type*) instead of JSON.
    :ivar echo: ``"json"`` or ``"text"``: answer with an error body that quotes every request
        header (keys and ``Authorization`` included), as careless servers and proxies do.
    :ivar reset: after the events, reset the connection (a TCP RST) instead of ending the body.
    """

    status: int = 200
    body: Any = None
    events: list[str | bytes] | None = None
    headers: dict[str, str] = attrs.field(factory=dict)
    content_type: str = "application/json"
    delay: float = 0.0
    interval: float = 0.0
    gate_after: int | None = None
    raw: bytes | None = None
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
    """The path, without the query."""
    headers: dict[str, str]
    body: Any
    """The JSON body decoded, or its text when it is not JSON."""
    peer: tuple[str, int] | None = None
    """The client's address: one peer for two requests means one reused connection."""
    query: dict[str, list[str]] = attrs.field(factory=dict)


def decoded(raw: bytes) -> Any:
    """A request body: its JSON value, its text when it is not JSON, ``None`` when empty."""
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode("utf-8", "replace")


def recorded(handler: QuietHandler, raw: bytes) -> Recorded:
    """What *handler*'s request was, its body being *raw*."""
    parts = urlsplit(handler.path)
    return Recorded(
        handler.command,
        parts.path,
        {k.lower(): v for k, v in handler.headers.items()},
        decoded(raw),
        handler.client_address[:2],
        parse_qs(parts.query),
    )


class WireServer(LocalHTTPServer):
    """The scripted server; use as a context manager (the fixture does)."""

    def __init__(self) -> None:
        self.script: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.disconnected = threading.Event()
        self.requested = threading.Event()
        self.gate = threading.Event()
        self.finished_streams = 0
        self._closing = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def handle(self) -> None:
                try:
                    super().handle()
                except OSError:
                    # A client dropping a kept-alive connection (a model left to the garbage
                    # collector resets it) is no fault of the server: nothing to report.
                    self.close_connection = True

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                request = recorded(self, self.rfile.read(length) if length else b"")
                with server._lock:
                    server.requests.append(request)
                    reply = server.script.popleft() if server.script else None
                server.requested.set()
                if reply is None:
                    reply = Reply(500, {"error": {"message": "script exhausted"}})
                # A delay ends early when the server stops: no thread outlives the test.
                server._closing.wait(reply.delay)
                try:
                    if reply.events is None:
                        self._send_whole(reply, request)
                    else:
                        self._send_events(reply)
                except OSError:
                    # The client hung up (a timeout, a cancelled call, a closed stream).
                    server.disconnected.set()
                    self.close_connection = True

            do_GET = do_POST

            def _send_whole(self, reply: Reply, request: Recorded) -> None:
                if reply.echo is not None:
                    data, kind = echo_body(dict(self.headers.items()), reply.echo)
                elif reply.raw is not None:
                    data, kind = reply.raw, reply.content_type
                else:
                    body = reply.body(request) if callable(reply.body) else reply.body
                    data, kind = json.dumps(body).encode(), reply.content_type
                send_body(self, reply.status, data, kind, reply.headers)

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
                for index, event in enumerate(reply.events or []):
                    if reply.gate_after is not None and index == reply.gate_after:
                        self._wait_for_gate()
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

            def _wait_for_gate(self) -> None:
                """Wait for ``gate``; notice (and report) a client that hangs up meanwhile."""
                while not server.gate.is_set():
                    readable, _, _ = select.select([self.connection], [], [], 0.02)
                    if readable and not self._peek():
                        raise ConnectionResetError("the client closed the stream")

            def _peek(self) -> bytes:
                try:
                    return self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    return b""

            def _reset(self) -> None:
                # A zero linger makes close() send RST: the peer sees its read fail
                # mid-body, as when a proxy or a crashed server drops the connection.
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.connection.close()
                self.close_connection = True

        super().__init__(Handler)

    def add(self, *replies: Reply) -> WireServer:
        """Append replies to the script; the server, for chaining."""
        self.script.extend(replies)
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
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


# -- OpenAI chat.completions and DashScope's native multimodal-generation ----------------------


def assistant_message(
    content: Any, reasoning: str | None = None, tool_calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """An assistant message as both APIs answer it: content, ``reasoning_content`` and
    ``tool_calls`` (OpenAI's format), each only when given."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return message


def openai_completion(
    content: str | None = None,
    tool_calls: list[tuple[str, str, str]] | None = None,
    reasoning: str | None = None,
    usage: tuple[int, int] = (10, 5),
    id: str = "chatcmpl-1",
) -> dict[str, Any]:
    """A ``chat.completion`` object; *tool_calls* are ``(id, name, arguments_text)``."""
    calls = [
        {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
        for i, n, a in tool_calls or ()
    ]
    message = assistant_message(content, reasoning, calls or None)
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


def dashscope_answer(
    content: Any,
    reasoning: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    usage: tuple[int, int] = (20, 4),
    request_id: str = "req-mm-1",
) -> dict[str, Any]:
    """A native ``multimodal-generation`` answer (``result_format="message"``)."""
    message = assistant_message(content, reasoning, tool_calls)
    return {
        "output": {"choices": [{"finish_reason": "stop", "message": message}]},
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1], "image_tokens": 12},
        "request_id": request_id,
    }


def dashscope_event(index: int, data: dict[str, Any], status: int = 200) -> str:
    """One native SSE event as DashScope sends it (no space after the colons)."""
    kind = "error" if status != 200 else "result"
    return f"id:{index}\nevent:{kind}\n:HTTP_STATUS/{status}\ndata:{json.dumps(data)}\n\n"


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


# -- Ollama /api/chat and Gemini generateContent -----------------------------------------------


def ndjson(*chunks: dict[str, Any]) -> list[str]:
    """Ollama stream events: one JSON object per line."""
    return [json.dumps(c) + "\n" for c in chunks]


def gemini_events(*responses: dict[str, Any]) -> list[str]:
    """Gemini stream events (``alt=sse``), with the CRLF line ends the API sends."""
    return [f"data: {json.dumps(r)}\r\n\r\n" for r in responses]


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
