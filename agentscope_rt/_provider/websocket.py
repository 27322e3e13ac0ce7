"""A small WebSocket client on anyio, for providers that speak only WebSocket.

The framing is done by ``wsproto`` (sans-IO, an optional dependency: this module is imported
only by the modules that need it — the speech tools, the streaming text-to-speech models, the
AgentScope Studio link — never by ``agentscope_rt._provider`` itself), the bytes travel over an
anyio TCP (or TLS) stream, so the client runs on asyncio and trio alike. It covers what the
providers' protocols need: connect with extra headers, send text or binary messages, receive
whole text or binary messages (fragments are joined, pings answered), and close. One task may
send while another receives (sends are serialised by a lock).

Guarantees: :func:`connect` is an async context manager that always closes the TCP stream on
exit — after a close handshake when the connection is still open, bounded by
:data:`CLOSE_TIMEOUT` and shielded, so a cancelled caller does not leave a socket behind.
Header values (which carry API keys) never appear in an exception message. Once connected,
every failure of the connection is a :class:`WebSocketClosed` (code 1006 for a reset or lost
TCP stream), never the transport's own exception. :meth:`WebSocketConnection.receive` waits
for the server as long as the caller lets it: callers bound it (``anyio.fail_after``) or cancel
it.
"""

from __future__ import annotations

import contextlib
import urllib.parse
from collections import deque
from collections.abc import AsyncIterator, Mapping

import anyio
import anyio.abc
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)

from .._urls import redact_url

__all__ = [
    "CLOSE_TIMEOUT",
    "WebSocketClosed",
    "WebSocketConnection",
    "WebSocketHandshakeError",
    "connect",
]

CLOSE_TIMEOUT = 5.0
"""Seconds the close handshake may take before the TCP stream is closed anyway."""

_RECEIVE_SIZE = 65536
_MAX_REJECT_BODY = 4096
_NORMAL_CLOSURE = 1000


class WebSocketHandshakeError(Exception):
    """The server answered the upgrade request with an HTTP status instead of switching.

    :ivar status_code: the HTTP status.
    :ivar body: the start of the response body (the provider's error text), decoded.
    """

    def __init__(self, status_code: int, body: str) -> None:
        super().__init__(f"WebSocket handshake rejected with HTTP {status_code}: {body}")
        self.status_code = status_code
        self.body = body


class WebSocketClosed(Exception):
    """The connection closed before the expected message arrived.

    :ivar code: the close code the server sent (1006 when the TCP stream simply ended).
    :ivar reason: the server's close reason, if any.
    """

    def __init__(self, code: int, reason: str | None) -> None:
        detail = f": {reason}" if reason else ""
        super().__init__(f"WebSocket connection closed (code {code}){detail}")
        self.code = code
        self.reason = reason


class WebSocketConnection:
    """An open client connection; made by :func:`connect`."""

    def __init__(self, stream: anyio.abc.ByteStream, ws: WSConnection) -> None:
        self._stream = stream
        self._ws = ws
        self._messages: deque[str | bytes] = deque()
        self._text_parts: list[str] = []
        self._bytes_parts: list[bytes] = []
        self._closed: WebSocketClosed | None = None
        self._send_lock = anyio.Lock()

    async def _send(self, data: bytes) -> None:
        # The reader answers pings and close frames while another task may be sending.
        async with self._send_lock:
            try:
                await self._stream.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                # A reset or closed TCP stream is the connection's end, in this module's
                # terms: callers handle one error type, whichever backend raised.
                lost = WebSocketClosed(1006, f"the connection was lost ({type(exc).__name__})")
                self._closed = self._closed or lost
                raise self._closed from None

    async def send_bytes(self, data: bytes) -> None:
        """Send one binary message.

        :raises WebSocketClosed: when the connection is no longer open.
        """
        if self._ws.state is not ConnectionState.OPEN:
            raise self._closed or WebSocketClosed(1006, "the connection is not open")
        await self._send(self._ws.send(BytesMessage(data=data)))

    async def send_text(self, text: str) -> None:
        """Send one text message.

        :raises WebSocketClosed: when the connection is no longer open.
        """
        if self._ws.state is not ConnectionState.OPEN:
            raise self._closed or WebSocketClosed(1006, "the connection is not open")
        await self._send(self._ws.send(TextMessage(data=text)))

    async def receive(self) -> str | bytes:
        """The next whole message: ``str`` for text, ``bytes`` for binary.

        :raises WebSocketClosed: when the server closes the connection (or the TCP stream
            ends) before another message arrives.
        """
        while not self._messages:
            if self._closed is not None:
                raise self._closed
            await self._pump()
        return self._messages.popleft()

    async def _pump(self) -> None:
        """Read from the stream once and handle the events it completes."""
        data = await _receive_or_none(self._stream)
        self._ws.receive_data(data)
        await self._handle_events()
        if data is None and self._closed is None:
            self._closed = WebSocketClosed(1006, "the server ended the TCP stream")

    async def _handle_events(self) -> None:
        for event in self._ws.events():
            if isinstance(event, TextMessage):
                self._text_parts.append(event.data)
                if event.message_finished:
                    self._messages.append("".join(self._text_parts))
                    self._text_parts.clear()
            elif isinstance(event, BytesMessage):
                self._bytes_parts.append(bytes(event.data))
                if event.message_finished:
                    self._messages.append(b"".join(self._bytes_parts))
                    self._bytes_parts.clear()
            elif isinstance(event, Ping):
                await self._send(self._ws.send(event.response()))
            elif isinstance(event, CloseConnection):
                self._closed = WebSocketClosed(event.code, event.reason)
                with contextlib.suppress(WebSocketClosed):
                    if self._ws.state is ConnectionState.REMOTE_CLOSING:
                        await self._send(self._ws.send(event.response()))
                    elif self._ws.state is ConnectionState.OPEN:
                        # wsproto could not parse a frame (1002, 1007 for text that is not
                        # UTF-8, ...): the connection is failed, and the server told why.
                        await self._send(self._ws.send(CloseConnection(code=event.code)))

    async def aclose(self) -> None:
        """Close handshake (when still open), then close the stream; shielded, bounded by
        :data:`CLOSE_TIMEOUT`. Closing twice is harmless."""
        with anyio.CancelScope(shield=True):
            # The connection is being given up: a failure while saying goodbye changes
            # nothing for the caller, so it is not reported.
            with anyio.move_on_after(CLOSE_TIMEOUT), contextlib.suppress(Exception):
                if self._ws.state is ConnectionState.OPEN:
                    await self._send(self._ws.send(CloseConnection(code=_NORMAL_CLOSURE)))
                    # Wait for the server's close frame so it sees an orderly shutdown.
                    while self._ws.state is not ConnectionState.CLOSED and self._closed is None:
                        await self._pump()
            await anyio.aclose_forcefully(self._stream)


def _endpoint(url: str) -> tuple[str, int, bool, str, str]:
    """``(host, port, tls, host header, request target)`` of a ``ws://`` / ``wss://`` URL.

    :raises ValueError: for another scheme or a URL without a host.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ValueError(f"not a WebSocket URL (ws:// or wss://): {redact_url(url)!r}")
    tls = parts.scheme == "wss"
    default_port = 443 if tls else 80
    port = parts.port or default_port
    host_header = parts.hostname if port == default_port else f"{parts.hostname}:{port}"
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return parts.hostname, port, tls, host_header, target


@contextlib.asynccontextmanager
async def connect(
    url: str, headers: Mapping[str, str], *, connect_timeout: float = 30.0
) -> AsyncIterator[WebSocketConnection]:
    """Open a WebSocket connection to *url*, sending *headers* with the upgrade request.

    :param url: a ``ws://`` or ``wss://`` URL.
    :param headers: extra request headers (e.g. ``Authorization``).
    :param connect_timeout: seconds for the TCP connection and the handshake together.
    :raises ValueError: for a URL that is not a WebSocket URL.
    :raises WebSocketHandshakeError: when the server refuses the upgrade (e.g. HTTP 401).
    :raises WebSocketClosed: when the connection ends during the handshake.
    :raises OSError: when the server cannot be reached or the TLS handshake fails.
    :raises TimeoutError: when connecting takes longer than *connect_timeout*.
    """
    host, port, tls, host_header, target = _endpoint(url)
    ws = WSConnection(ConnectionType.CLIENT)
    with anyio.fail_after(connect_timeout):
        stream = await _connect_tcp(host, port, tls)
    connection = WebSocketConnection(stream, ws)
    try:
        with anyio.fail_after(connect_timeout):
            extra = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
            await connection._send(
                ws.send(Request(host=host_header, target=target, extra_headers=extra))
            )
            await _handshake(stream, ws)
        # Messages that arrived together with the handshake response.
        await connection._handle_events()
        yield connection
    finally:
        await connection.aclose()


async def _connect_tcp(host: str, port: int, tls: bool) -> anyio.abc.ByteStream:
    """A TCP (or TLS) stream to *host*.

    :raises OSError: when it cannot be opened; a failed TLS handshake (anyio's
        ``BrokenResourceError``) is a ``ConnectionError`` naming the cause.
    """
    if not tls:
        return await anyio.connect_tcp(host, port)
    try:
        return await anyio.connect_tcp(host, port, tls=True, tls_hostname=host)
    except anyio.BrokenResourceError as exc:
        cause = exc.__cause__ or exc
        raise ConnectionError(f"TLS handshake with {host}:{port} failed: {cause}") from None


async def _receive_or_none(stream: anyio.abc.ByteStream) -> bytes | None:
    """The next bytes of *stream*, or ``None`` once it has ended."""
    try:
        return await stream.receive(_RECEIVE_SIZE)
    except (anyio.EndOfStream, anyio.BrokenResourceError):
        return None


async def _handshake(stream: anyio.abc.ByteStream, ws: WSConnection) -> None:
    """Read the server's answer to the upgrade request until it accepts.

    :raises WebSocketHandshakeError: when it answers with an HTTP status instead.
    :raises WebSocketClosed: when the stream ends first.
    """
    status: int | None = None
    body = bytearray()
    while True:
        data = await _receive_or_none(stream)
        ws.receive_data(data)
        for event in ws.events():
            if isinstance(event, AcceptConnection):
                return
            if isinstance(event, RejectConnection):
                status = event.status_code
                if not event.has_body:
                    raise WebSocketHandshakeError(status, "")
            elif isinstance(event, RejectData):
                body += event.data[: _MAX_REJECT_BODY - len(body)]
                if event.body_finished:
                    raise WebSocketHandshakeError(status or 0, body.decode("utf-8", "replace"))
        if data is None:
            if status is not None:
                raise WebSocketHandshakeError(status, body.decode("utf-8", "replace"))
            raise WebSocketClosed(1006, "the server closed the connection during the handshake")
