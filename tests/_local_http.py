"""Local HTTP servers for tests: a ``ThreadingHTTPServer`` on 127.0.0.1 served from a background
thread (so it answers tests on both anyio backends alike), and the body-sending code every
protocol fake shares.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that keeps the test output clean: it logs no requests."""

    def log_message(self, format: str, *args: Any) -> None:
        return


class LocalHTTPServer:
    """Serves *handler* on a free port of 127.0.0.1 while the ``with`` block runs.

    :param handler: the request handler class.
    :param poll_interval: how often ``serve_forever`` checks for shutdown, in seconds.
    """

    def __init__(
        self, handler: type[BaseHTTPRequestHandler], *, poll_interval: float = 0.01
    ) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": poll_interval}, daemon=True
        )

    @property
    def url(self) -> str:
        """The server's base URL, e.g. ``http://127.0.0.1:54321``."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


def send_body(
    handler: BaseHTTPRequestHandler,
    status: int,
    data: bytes,
    content_type: str,
    headers: dict[str, str] | None = None,
) -> None:
    """Answer the handler's request with *data* (a ``content-length`` body) and *headers*."""
    handler.send_response(status)
    handler.send_header("content-type", content_type)
    handler.send_header("content-length", str(len(data)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(data)
    handler.wfile.flush()


def send_json(
    handler: BaseHTTPRequestHandler,
    status: int,
    body: Any,
    headers: dict[str, str] | None = None,
) -> None:
    """Answer the handler's request with *body* as JSON."""
    send_body(handler, status, json.dumps(body).encode(), "application/json", headers)


class ThreadedASGIServer:
    """Serves an ASGI *app* with uvicorn (wsproto WebSockets) on a free port of 127.0.0.1 from
    a background thread while the ``with`` block runs: the protocol fakes that need
    WebSockets or Starlette routing answer both anyio backends alike this way.

    :param name: what the server is, for the error when it does not start.
    """

    def __init__(self, app: Any, name: str) -> None:
        import uvicorn

        self.name = name
        self._sock = socket.socket()
        # Accepted connections inherit this: without it every keep-alive answer waits ~40 ms
        # for a delayed ACK.
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock.bind(("127.0.0.1", 0))
        config = uvicorn.Config(
            app, ws="wsproto", lifespan="off", log_level="critical", access_log=False
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    def __enter__(self) -> Self:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._sock.close()
