"""Fixtures for the run-store tests: real PostgreSQL and Redis servers on 127.0.0.1, started
by the tests from the binaries of the dev dependencies (see ``tests/_servers.py``), and each
store on empty storage."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from agentscope_rt.durable import RunStore
from tests._servers import PostgresServer, RedisServer

from ._stores import KINDS, build_store


@pytest.fixture(scope="session")
def durable_redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def durable_postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer()
    yield server
    server.stop()


def _location(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store of *kind* keeps its runs, emptied for this test."""
    if kind == "sqlite":
        return str(tmp_path / "runs.db")
    if kind == "postgres":
        postgres: PostgresServer = request.getfixturevalue("durable_postgres_server")
        postgres.reset()
        return f"postgresql://postgres@127.0.0.1:{postgres.port}/postgres"
    redis: RedisServer = request.getfixturevalue("durable_redis_server")
    redis.flush()
    return f"redis://127.0.0.1:{redis.port}/0"


StoreFactory = Callable[..., RunStore]


@pytest.fixture(params=KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_location(store_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return _location(store_kind, request, tmp_path)


@pytest.fixture
async def make_store(store_kind: str, store_location: str) -> AsyncIterator[StoreFactory]:
    """Builds stores of one kind on the same (empty) storage: ``make(lease_seconds=None)``;
    every store built is closed after the test."""
    made: list[RunStore] = []

    def make(lease_seconds: float | None = None) -> RunStore:
        store = build_store(store_kind, store_location, lease_seconds)
        made.append(store)
        return store

    yield make
    for store in made:
        await store.aclose()
