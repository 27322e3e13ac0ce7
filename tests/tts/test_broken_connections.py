"""Providers that break the WebSocket itself: a TLS handshake that fails (a ModelAPIError
naming it, not anyio's bare BrokenResourceError), a reset TCP connection after the upgrade
(the shared WebSocket client reports WebSocketClosed 1006, never the transport's own error;
the speech and realtime models ModelAPIError) and a text frame that is not UTF-8 (the client
fails the connection with close code 1007 and sends nothing more on it).

The server is a raw anyio TCP listener on 127.0.0.1 answering the upgrade with wsproto; a
reset is a close with SO_LINGER 0, which makes the kernel send a reset instead of a FIN."""

from __future__ import annotations

import contextlib
import math
import socket
import struct
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.abc
import pytest
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, Request

from agentscope_rt._provider import websocket
from agentscope_rt.exception import ModelAPIError
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.realtime import OpenAIRealtimeModel
from agentscope_rt.tts import DashScopeRealtimeTTSModel

KEY = "sk-reset-secret-42"


# An unmasked text frame (FIN, opcode 1) of two bytes that are not UTF-8.
BAD_TEXT_FRAME = b"\x81\x02\xff\xfe"


async def _accept(stream: anyio.abc.SocketStream) -> WSConnection:
    ws = WSConnection(ConnectionType.SERVER)
    while True:
        ws.receive_data(await stream.receive())
        for event in ws.events():
            if isinstance(event, Request):
                await stream.send(ws.send(AcceptConnection()))
                return ws


async def _accept_then_reset(stream: anyio.abc.SocketStream) -> None:
    await _accept(stream)
    raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    await stream.aclose()


class _BadTextPeer:
    """Sends BAD_TEXT_FRAME after the upgrade, then records what the client sends until it
    goes (``gone`` is set then)."""

    def __init__(self) -> None:
        self.received = bytearray()
        self.gone = anyio.Event()

    async def __call__(self, stream: anyio.abc.SocketStream) -> None:
        try:
            await _accept(stream)
            await stream.send(BAD_TEXT_FRAME)
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                while True:
                    self.received += await stream.receive()
        finally:
            self.gone.set()


@contextlib.asynccontextmanager
async def _serving(handler: Any) -> AsyncIterator[str]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handler)
        yield f"ws://127.0.0.1:{port}/api-ws/v1/realtime"
        tg.cancel_scope.cancel()


@pytest.fixture
async def reset_url() -> AsyncIterator[str]:
    async with _serving(_accept_then_reset) as url:
        yield url


@pytest.fixture
async def bad_text() -> AsyncIterator[tuple[str, _BadTextPeer]]:
    peer = _BadTextPeer()
    async with _serving(peer) as url:
        yield url, peer


async def test_a_send_after_a_reset_is_websocket_closed(reset_url: str) -> None:
    async with websocket.connect(reset_url, {}) as connection:
        with anyio.fail_after(10), pytest.raises(websocket.WebSocketClosed) as caught:
            while True:  # the first sends may still find room in the kernel's buffer
                await connection.send_text("x" * 1024)
                await anyio.sleep(0.01)
    assert caught.value.code == 1006


async def test_a_reset_fails_a_synthesis_with_model_api_error(reset_url: str) -> None:
    model = DashScopeRealtimeTTSModel(api_key=KEY, client_kwargs={"url": reset_url})
    msg = Msg("a", "Hello there.", "assistant")
    with anyio.fail_after(20), pytest.raises(ModelAPIError) as caught:
        async with model:
            await model.push(msg)
            await model.synthesize(msg)
    assert KEY not in str(caught.value)
    assert not model.connected


async def test_a_reset_ends_a_realtime_session_visibly(reset_url: str) -> None:
    model = OpenAIRealtimeModel("gpt-realtime", api_key=KEY, websocket_url=reset_url)
    send, receive = anyio.create_memory_object_stream[Any](math.inf)
    with send, receive:
        try:
            await model.connect(send, "", None)
        except ModelAPIError:
            return  # the reset came before the session's configuration went out
        try:
            with anyio.fail_after(20):
                events = [await receive.receive(), await receive.receive()]
            assert [e.type for e in events] == ["model_error", "model_websocket_disconnect"]
            assert not model.connected
            with pytest.raises(ModelAPIError):
                await model.send(TextBlock(text="anyone?"))
        finally:
            await model.disconnect()


async def test_a_text_frame_that_is_not_utf8_fails_the_connection(
    bad_text: tuple[str, _BadTextPeer],
) -> None:
    url, peer = bad_text
    async with websocket.connect(url, {}) as connection:
        with anyio.fail_after(10), pytest.raises(websocket.WebSocketClosed) as caught:
            await connection.receive()
        assert caught.value.code == 1007
        # Failed, not open: nothing more goes out on it.
        with pytest.raises(websocket.WebSocketClosed):
            await connection.send_text("still there?")
    with anyio.fail_after(10):
        await peer.gone.wait()
    # A close frame (FIN, opcode 8; the client masks the rest), and nothing after it.
    assert peer.received[:1] == b"\x88" and len(peer.received) == 2 + 4 + 2


async def test_a_text_frame_that_is_not_utf8_ends_a_realtime_session(
    bad_text: tuple[str, _BadTextPeer],
) -> None:
    model = OpenAIRealtimeModel("gpt-realtime", api_key=KEY, websocket_url=bad_text[0])
    send, receive = anyio.create_memory_object_stream[Any](math.inf)
    with send, receive:
        try:
            await model.connect(send, "", None)
        except ModelAPIError:
            return  # the frame came before the session's configuration went out
        try:
            with anyio.fail_after(20):
                events = [await receive.receive(), await receive.receive()]
            assert [e.type for e in events] == ["model_error", "model_websocket_disconnect"]
            assert events[0].code == "1007"
            assert not model.connected
        finally:
            await model.disconnect()


async def _plain_http(stream: anyio.abc.SocketStream) -> None:
    # What a wss:// URL pointing at a plain HTTP port meets: no TLS at all.
    with contextlib.suppress(anyio.BrokenResourceError):
        await stream.send(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
    await stream.aclose()


async def _hang_up(stream: anyio.abc.SocketStream) -> None:
    await stream.aclose()  # during the TLS handshake: anyio says BrokenResourceError


@pytest.mark.parametrize(
    ("peer", "reason"),
    [(_plain_http, "wrong version number"), (_hang_up, "TLS handshake with 127.0.0.1")],
    ids=["plain-http", "hang-up"],
)
async def test_a_failed_tls_handshake_is_a_model_api_error(peer: Any, reason: str) -> None:
    async with _serving(peer) as url:
        url = url.replace("ws://", "wss://")
        model = OpenAIRealtimeModel("gpt-realtime", api_key=KEY, websocket_url=url)
        send, receive = anyio.create_memory_object_stream[Any](1)
        with send, receive, anyio.fail_after(20), pytest.raises(ModelAPIError, match=reason):
            await model.connect(send, "", None)
        tts = DashScopeRealtimeTTSModel(api_key=KEY, client_kwargs={"url": url}, max_retries=0)
        with anyio.fail_after(20), pytest.raises(ModelAPIError, match=reason):
            async with tts:
                pass
