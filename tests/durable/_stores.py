"""The three run stores, built from a kind and a location the tests and their child processes
share: a SQLite file, a PostgreSQL URL, a Redis URL."""

from __future__ import annotations

from typing import Any

from agentscope_rt.durable import PostgresRunStore, RedisRunStore, RunStore, SQLiteRunStore

KINDS = ("sqlite", "postgres", "redis")


def build_store(kind: str, location: str, lease_seconds: float | None = None) -> RunStore:
    """A store of *kind* at *location* (*lease_seconds* is Redis's lease, ignored otherwise)."""
    if kind == "sqlite":
        return SQLiteRunStore(location)
    if kind == "postgres":
        return PostgresRunStore(location)
    options: dict[str, Any] = {} if lease_seconds is None else {"lease_seconds": lease_seconds}
    return RedisRunStore(location, **options)
