"""Local HTTP servers for tests: a ``ThreadingHTTPServer`` on 127.0.0.1 served from a background
thread (so it answers tests on both anyio backends alike), and the body-sending code every
protocol fake shares.
"""

from __future__ import annotations

import json
import threading
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
