"""Fixtures for the MCP tests: real MCP servers written with the SDK's server API.

The stdio server is spawned by the client under test. The HTTP servers (streamable HTTP and
SSE) run as separate processes on 127.0.0.1, so they are independent of the event loop the
test itself runs on (asyncio or trio).

Starting a server process costs seconds (it imports the SDK), so tests that only read from a
server share one: ``anyio_backend`` is module-scoped here, which lets a module share one
connected stdio client per backend (``shared_stdio``). Tests about lifecycle, state or
crashes use their own clients and servers.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from agentscope_rt.mcp import StdIOStatefulClient

from .helpers import stdio_client

SERVER_SCRIPT = Path(__file__).parent / "servers" / "demo_server.py"
AUTH_SERVER_SCRIPT = Path(__file__).parent / "servers" / "auth_server.py"
# Generous: the server imports the whole SDK before it listens.
STARTUP_TIMEOUT = 30.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"MCP test server exited early with code {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"MCP test server did not listen on port {port} in time")


class HttpServer:
    """A test server process (the demo server unless *script* says otherwise) listening on
    127.0.0.1."""

    def __init__(self, transport: str, script: Path = SERVER_SCRIPT) -> None:
        self.transport = transport
        self.port = _free_port()
        self.process = subprocess.Popen(
            [sys.executable, str(script), transport, str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_for_port(self.port, self.process)
        except BaseException:
            self.stop()
            raise

    @property
    def client_transport(self) -> str:
        return "sse" if self.transport == "sse" else "streamable_http"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        path = "/sse" if self.transport == "sse" else "/mcp"
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="module", params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Module-scoped (unlike the project-wide one) so module-scoped clients can be shared."""
    return str(request.param)


@pytest.fixture(scope="module")
async def shared_stdio(anyio_backend: str) -> AsyncIterator[StdIOStatefulClient]:
    """One connected stdio client per module and backend, for tests that only read."""
    async with stdio_client("demo") as client:
        yield client


@pytest.fixture(scope="session", params=["streamable-http", "sse"])
def http_server(request: pytest.FixtureRequest) -> Iterator[HttpServer]:
    """One server per transport, shared by all tests (tests must not crash it)."""
    server = HttpServer(str(request.param))
    yield server
    server.stop()


@pytest.fixture(scope="session", params=["streamable-http", "sse"])
def auth_server(request: pytest.FixtureRequest) -> Iterator[HttpServer]:
    """One bearer-token protected server per transport (``servers/auth_server.py``)."""
    server = HttpServer(str(request.param), AUTH_SERVER_SCRIPT)
    yield server
    server.stop()


@pytest.fixture
def fresh_http_server() -> Iterator[Callable[[str], HttpServer]]:
    """Start private servers, for tests that kill them."""
    started: list[HttpServer] = []

    def start(transport: str) -> HttpServer:
        server = HttpServer(transport)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
