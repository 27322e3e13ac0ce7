"""The tables of the SQL run stores (SQLite, PostgreSQL) and the statements both run on them.

Two tables: ``agentscope_runs`` (one row per run) and ``agentscope_run_steps`` (one row per
step record, keyed ``(user_id, run_id, key)``, its payload as JSON text). The statements are
written with ``?`` placeholders (sqlite3's); :func:`pyformat` gives psycopg's ``%s`` form.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..exception import DurableRunError
from ._store import RunInfo, StepRecord

__all__ = [
    "DELETE_RUN",
    "DELETE_STEPS",
    "RUNS",
    "SCHEMA",
    "SELECT_RUN",
    "SELECT_RUNS",
    "SELECT_STEPS",
    "SET_STATUS",
    "STEPS",
    "STEP_EXISTS",
    "UPDATE_RUN_AFTER_STEP",
    "UPDATE_RUN_AFTER_STEPS",
    "UPSERT_RUN",
    "UPSERT_STEP",
    "pyformat",
    "run_info",
    "step_row",
    "steps_from_rows",
]

RUNS = "agentscope_runs"
STEPS = "agentscope_run_steps"

SCHEMA = (
    f"""CREATE TABLE IF NOT EXISTS {RUNS} (
        user_id TEXT NOT NULL, run_id TEXT NOT NULL, status TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        steps INTEGER NOT NULL DEFAULT 0, last_step TEXT,
        PRIMARY KEY (user_id, run_id))""",
    f"""CREATE TABLE IF NOT EXISTS {STEPS} (
        user_id TEXT NOT NULL, run_id TEXT NOT NULL, key TEXT NOT NULL,
        seq INTEGER NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,
        fingerprint TEXT NOT NULL, payload TEXT NOT NULL, at TEXT NOT NULL,
        PRIMARY KEY (user_id, run_id, key))""",
)

UPSERT_RUN = (
    f"INSERT INTO {RUNS} (user_id, run_id, status, created_at, updated_at) "
    "VALUES (?, ?, 'running', ?, ?) ON CONFLICT (user_id, run_id) DO UPDATE SET "
    "status = 'running', updated_at = excluded.updated_at"
)
"""Parameters: user_id, run_id, now, now."""

SET_STATUS = f"UPDATE {RUNS} SET status = ?, updated_at = ? WHERE user_id = ? AND run_id = ?"
"""Parameters: status, now, user_id, run_id."""

UPSERT_STEP = (
    f"INSERT INTO {STEPS} (user_id, run_id, key, seq, kind, status, fingerprint, payload, at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (user_id, run_id, key) DO UPDATE SET seq = excluded.seq, "
    "kind = excluded.kind, status = excluded.status, "
    "fingerprint = excluded.fingerprint, payload = excluded.payload, at = excluded.at"
)
"""Parameters: :func:`step_row`."""

UPDATE_RUN_AFTER_STEP = (
    f"UPDATE {RUNS} SET updated_at = ?, last_step = ?, steps = "
    f"(SELECT COUNT(*) FROM {STEPS} WHERE user_id = ? AND run_id = ?) "
    "WHERE user_id = ? AND run_id = ?"
)
"""Parameters: at, key, user_id, run_id, user_id, run_id."""

UPDATE_RUN_AFTER_STEPS = (
    f"UPDATE {RUNS} SET updated_at = ?, last_step = ?, steps = steps + ? "
    "WHERE user_id = ? AND run_id = ?"
)
"""Parameters: at, key, how many of the records written have new keys, user_id, run_id (no
count over the run's records at each write: a long run's writes would grow with it)."""

STEP_EXISTS = f"SELECT 1 FROM {STEPS} WHERE user_id = ? AND run_id = ? AND key = ?"
"""Parameters: user_id, run_id, key."""

SELECT_STEPS = (
    f"SELECT key, seq, kind, status, fingerprint, payload, at FROM {STEPS} "
    "WHERE user_id = ? AND run_id = ? ORDER BY seq"
)
_RUN_COLUMNS = "user_id, run_id, status, created_at, updated_at, steps, last_step"
SELECT_RUN = f"SELECT {_RUN_COLUMNS} FROM {RUNS} WHERE user_id = ? AND run_id = ?"
SELECT_RUNS = f"SELECT {_RUN_COLUMNS} FROM {RUNS}"
"""Followed by ``WHERE user_id = ?`` or nothing, then ``ORDER BY updated_at DESC``."""
DELETE_STEPS = f"DELETE FROM {STEPS} WHERE user_id = ? AND run_id = ?"
DELETE_RUN = f"DELETE FROM {RUNS} WHERE user_id = ? AND run_id = ?"


def pyformat(statement: str) -> str:
    """*statement* with psycopg's ``%s`` placeholders (the statements hold no other ``?``)."""
    return statement.replace("?", "%s")


def step_row(
    user_id: str, run_id: str, record: StepRecord, payload: str, at: str
) -> tuple[Any, ...]:
    """The parameters of :data:`UPSERT_STEP` for *record* (its payload as JSON text)."""
    return (
        user_id,
        run_id,
        record.key,
        record.seq,
        record.kind,
        record.status,
        record.fingerprint,
        payload,
        at,
    )


def run_info(row: Iterable[Any] | None) -> RunInfo | None:
    """The run of a row of :data:`SELECT_RUN` / :data:`SELECT_RUNS` (``None`` for none)."""
    return None if row is None else RunInfo(*row)


def steps_from_rows(rows: Iterable[Iterable[Any]], where: str) -> list[StepRecord]:
    """The records of the rows of :data:`SELECT_STEPS`.

    :param where: the run and its store, for the error message.
    :raises DurableRunError: when a record's payload is not JSON text (the table was edited
        by hand or damaged).
    """
    records = []
    for key, seq, kind, status, fingerprint, payload, at in rows:
        try:
            data = json.loads(payload)
        except ValueError as exc:
            raise DurableRunError(
                f"{where}: the record of step {key!r} is corrupted ({exc})"
            ) from exc
        records.append(StepRecord(key, kind, status, fingerprint, data, seq, at))
    return records
