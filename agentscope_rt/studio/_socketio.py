"""The part of the Socket.IO 5 / Engine.IO 4 client protocol AgentScope Studio needs.

One namespace, events from the server, no acknowledgements, no binary packets, WebSocket
transport only (Engine.IO 4 servers accept it without the polling handshake). It runs on
anyio (asyncio or trio) over the package's WebSocket client:

* the server opens with ``0{"sid", "pingInterval", "pingTimeout", ...}``;
* the client joins the namespace with ``40/python,{auth}`` and is answered ``40/python,{...}``
  (or ``44/python,{"message"}`` when refused);
* the server pings (``2``) and the client answers ``3``; silence longer than
  ``pingInterval + pingTimeout`` means the connection is dead;
* an event is ``42/python,["name", arg, ...]`` (an ack id may sit before the ``[``).

Every wait on the server has a limit (the open packet: the connect timeout; then the ping
silence; a send: the same silence), and a malformed event is logged and skipped: it never ends
the session, so an answer sent after it still arrives.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from .._provider.websocket import WebSocketConnection, connect

__all__ = ["SocketIOError", "run_namespace", "socketio_url"]

EventHandler = Callable[[str, list[Any]], Awaitable[None]]

logger = logging.getLogger("agentscope_rt.studio")

_DEFAULT_SILENCE_MS = 25000 + 20000
"""Engine.IO's default ping interval plus ping timeout, for a server that names neither."""


class SocketIOError(Exception):
    """The server refused the namespace, closed it, or spoke something else."""


def socketio_url(base_url: str) -> str:
    """The Engine.IO WebSocket address of a server at *base_url* (``http(s)://host:port``)."""
    parts = urllib.parse.urlsplit(base_url)
    scheme = "wss" if parts.scheme == "https" else "ws"
    path = parts.path.rstrip("/") + "/socket.io/"
    return urllib.parse.urlunsplit((scheme, parts.netloc, path, "EIO=4&transport=websocket", ""))


async def run_namespace(
    base_url: str,
    namespace: str,
    auth: dict[str, Any],
    on_event: EventHandler,
    on_connect: Callable[[], None] | None = None,
    *,
    connect_timeout: float = 10.0,
) -> None:
    """Connect, join *namespace* with *auth*, and call ``await on_event(name, args)`` for every
    event until the connection ends.

    :raises SocketIOError: when the namespace is refused or closed by the server, or the
        server stops answering.
    :raises OSError: when the server cannot be reached.
    :raises TimeoutError: when connecting takes longer than *connect_timeout*.
    """
    async with connect(socketio_url(base_url), {}, connect_timeout=connect_timeout) as ws:
        with anyio.fail_after(connect_timeout):
            opening = await ws.receive()
        silence = _silence(opening)
        with anyio.fail_after(silence):
            await ws.send_text(f"40{namespace},{json.dumps(auth)}")
        await _session(ws, namespace, on_event, on_connect, silence)


def _silence(opening: str | bytes) -> float:
    """How long the server of the Engine.IO open packet *opening* may stay silent (seconds).

    :raises SocketIOError: for anything but an open packet with a JSON object.
    """
    if not isinstance(opening, str) or not opening.startswith("0"):
        raise SocketIOError(f"expected the Engine.IO open packet, got {opening!r:.80}")
    try:
        handshake = json.loads(opening[1:])
        interval, timeout = handshake.get("pingInterval", 0), handshake.get("pingTimeout", 0)
        total = float(interval) + float(timeout)
    except (ValueError, TypeError, AttributeError, RecursionError):
        raise SocketIOError(f"malformed Engine.IO open packet: {opening!r:.80}") from None
    return (total if total > 0 else _DEFAULT_SILENCE_MS) / 1000


def _event(body: str) -> tuple[str, list[Any]] | None:
    """``(name, args)`` of an event packet's *body* (after ``42/ns,``), or None if malformed."""
    start = body.find("[")
    if start < 0:
        return None
    try:
        message = json.loads(body[start:])
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, list) or not message or not isinstance(message[0], str):
        return None
    return message[0], message[1:]


async def _session(
    ws: WebSocketConnection,
    namespace: str,
    on_event: EventHandler,
    on_connect: Callable[[], None] | None,
    silence: float,
) -> None:
    prefix = f"4{{}}{namespace},"
    while True:
        packet: str | bytes | None = None
        with anyio.move_on_after(silence):
            packet = await ws.receive()
        if packet is None:
            raise SocketIOError(f"no packet (not even a ping) for {silence:.0f} s")
        if not isinstance(packet, str):
            continue  # binary attachments are not used by Studio
        if packet == "2":
            with anyio.fail_after(silence):
                await ws.send_text("3")
        elif packet == "1":
            raise SocketIOError("the server closed the Engine.IO session")
        elif packet.startswith(prefix.format(0)):
            if on_connect is not None:
                on_connect()
        elif packet.startswith(prefix.format(4)):
            raise SocketIOError(f"the server refused {namespace}: {packet[len(prefix) - 1 :]}")
        elif packet.startswith(prefix.format(1)):
            raise SocketIOError(f"the server closed {namespace}")
        elif packet.startswith(prefix.format(2)):
            event = _event(packet[len(prefix) - 1 :])
            if event is None:
                logger.warning("AgentScope Studio sent a malformed event (ignored): %.80r", packet)
            else:
                await on_event(*event)
