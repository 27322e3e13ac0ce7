"""A2AAgent against servers that answer badly: whatever a2a-sdk or httpx raise for it, the
caller gets a2a-sdk's A2AClientError (the documented contract), never a raw UnicodeDecodeError
or parse error. The servers are raw HTTP/1.1 answers on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest
from a2a.client import A2AClientError, ClientConfig
from anyio.abc import SocketStream

from agentscope_rt.a2a import A2AAgent, build_agent_card
from agentscope_rt.message import Msg

TIMEOUT_S = 30


async def _answering(answer: bytes) -> AsyncIterator[str]:
    """A server on 127.0.0.1 that reads one request's head and sends *answer*."""

    async def handle(stream: SocketStream) -> None:
        async with stream:
            seen = b""
            with anyio.move_on_after(TIMEOUT_S):
                while b"\r\n\r\n" not in seen:
                    seen += await stream.receive()
            await stream.send(answer)

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, handle)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        yield f"http://127.0.0.1:{port}/"
        group.cancel_scope.cancel()


def _http(status: str, content_type: str, body: bytes) -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


@pytest.mark.parametrize(
    ("streaming", "answer"),
    [
        (True, _http("200 OK", "text/event-stream", b"data: \xff\xfe{\n\n")),
        (True, _http("200 OK", "text/event-stream", b"data: {not json\n\n")),
        (True, _http("200 OK", "text/event-stream", b'data: {"jsonrpc": "2.0", "result": 5}\n\n')),
        (False, _http("200 OK", "application/json", b"\xff\xfe\x00")),
        (False, _http("200 OK", "application/json", b"[1, 2")),
        (False, _http("500 Internal Server Error", "text/html", b"<h1>\xffoops</h1>")),
        (False, b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"),
    ],
    ids=[
        "sse-not-utf8",
        "sse-not-json",
        "sse-not-a2a",
        "json-not-utf8",
        "json-cut-short",
        "500-html",
        "body-cut-short",
    ],
)
async def test_a_bad_answer_is_an_a2a_client_error(streaming: bool, answer: bytes) -> None:
    async for url in _answering(answer):
        agent = A2AAgent(build_agent_card("Bad", url), ClientConfig(streaming=streaming))
        with anyio.fail_after(TIMEOUT_S), pytest.raises(A2AClientError):
            await agent(Msg("user", "hi", "user"))
