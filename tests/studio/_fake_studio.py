"""A stand-in for AgentScope Studio's server: the tRPC POST routes AgentScope's client uses and
a real Socket.IO server (python-socketio) with the ``/python`` namespace.

It runs on 127.0.0.1 in a background thread with its own asyncio loop (python-socketio's server
is asyncio-only), so the runtime under test may run on asyncio or trio.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.from_thread
import socketio
from hypercorn.asyncio import serve
from hypercorn.config import Config
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


class FakeStudio:
    """What the fake received: ``posts`` as ``(path, json)``, ``auths`` of socket clients."""

    def __init__(self, *, slow: bool = False) -> None:
        self.posts: list[tuple[str, Any]] = []
        self.auths: list[Any] = []
        self.eio_sids: list[str] = []
        self.slow = slow
        self._lock = threading.Lock()
        self.sio = socketio.AsyncServer(async_mode="asgi", cors_allowed_origins="*")
        self.sio.on("connect", self._on_connect, namespace="/python")
        self.url = ""
        self._release: Any = None

    async def _on_connect(self, sid: str, environ: Any, auth: Any = None) -> None:
        with self._lock:
            self.auths.append(auth)
            self.eio_sids.append(self.sio.manager.eio_sid_from_sid(sid, "/python"))

    async def _trpc(self, request: Request) -> JSONResponse:
        body = await request.json()
        if self.slow:
            await self._release.wait()
        with self._lock:
            self.posts.append((request.url.path, body))
        return JSONResponse({"result": {"data": None}})

    def posted(self, path: str) -> list[Any]:
        """The bodies posted to *path*, in arrival order."""
        with self._lock:
            return [body for p, body in self.posts if p == path]

    def forward_user_input(
        self, request_id: str, blocks: list[dict[str, Any]], structured: dict[str, Any] | None
    ) -> None:
        """Send ``forwardUserInput`` to every client of ``/python``, as Studio does."""
        self._portal.call(
            lambda: self.sio.emit(
                "forwardUserInput", (request_id, blocks, structured), namespace="/python"
            )
        )

    def send_raw(self, packet: str) -> None:
        """Send *packet* as an Engine.IO message (``4`` + *packet*) to every client as it is,
        malformed or not (``2/python,[...]`` is an event of ``/python``)."""
        with self._lock:
            sids = list(self.eio_sids)
        for sid in sids:
            self._portal.call(self.sio.eio.send, sid, packet)

    @contextlib.contextmanager
    def running(self) -> Iterator[FakeStudio]:
        app = Starlette(
            routes=[
                Route(f"/trpc/{name}", self._trpc, methods=["POST"])
                for name in ("registerRun", "pushMessage", "requestUserInput")
            ]
        )
        asgi = socketio.ASGIApp(self.sio, other_asgi_app=app)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = Config()
        config.bind = [f"fd://{sock.detach()}"]
        config.accesslog = None
        config.errorlog = logging.getLogger("tests.fake_studio")
        config.graceful_timeout = 0.5
        with anyio.from_thread.start_blocking_portal() as portal:
            self._portal = portal
            stop = portal.call(anyio.Event)
            self._release = portal.call(anyio.Event)
            future = portal.start_task_soon(
                lambda: serve(asgi, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]
            )
            try:
                yield self
            finally:
                portal.call(self._release.set)
                portal.call(stop.set)
                future.result(timeout=30)
