"""SQLiteRunStore: durable runs in one SQLite file, the embedded default.

Two tables: ``agentscope_runs`` (one row per run) and ``agentscope_run_steps`` (one row per
step record, keyed ``(user_id, run_id, key)``). Each record is written in its own transaction
with the run's row, in WAL mode with ``synchronous=FULL``: when :meth:`put_step` returns, the
record is on disk (fsync'd) and survives the death of the process or of the machine.

A process owns a run through an exclusive lock on one byte of a lock file beside the
database (``<file>.runs.lock``), at an offset derived from the run's ids: the operating system
drops the lock when the process dies, however it dies, so a killed run can be resumed at once
and a live one is never opened twice. On systems without POSIX locks only the current process
is checked.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread

from ..exception import DurableRunError
from ._store import RunInfo, RunStatus, StepRecord, check_run_ids

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["SQLiteRunStore"]

RUNS = "agentscope_runs"
STEPS = "agentscope_run_steps"
BUSY_TIMEOUT_S = 30.0

_SCHEMA = (
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


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()


def _lock_offset(user_id: str, run_id: str) -> int:
    digest = hashlib.sha256(json.dumps([user_id, run_id]).encode("utf-8", "surrogatepass"))
    return int.from_bytes(digest.digest()[:7], "big")  # 56 bits: within any off_t


class SQLiteRunStore:
    """Durable runs stored in the SQLite database *path* (created with its folder).

    :param path: the database file; it may be the file of a :class:`SQLiteSession` (the
        tables have other names).
    :param fsync: ``"every"`` (the default): every record is on disk when :meth:`put_step`
        returns. ``"effects"``: only the records that guard an effect outside the run (a
        tool call's ``started`` record, written before the tool runs) wait for the disk;
        the others reach the operating system at once and the disk with the next such
        record or checkpoint. A killed process loses nothing either way; a machine that
        loses power may lose the last records written since the last effect, always a
        tail of the run (the run then redoes those steps: model calls are paid again, no
        tool runs twice). Several times cheaper per step where fsync is slow.
    :raises DurableRunError: for ``":memory:"`` or an unknown *fsync*.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = "./agentscope_runs.db",
        *,
        fsync: Literal["every", "effects"] = "every",
    ) -> None:
        if str(path) == ":memory:":
            raise DurableRunError(
                "SQLiteRunStore needs a database file: an in-memory database would not "
                "survive the process; pass a path such as 'runs.db'"
            )
        if fsync not in ("every", "effects"):
            raise DurableRunError(f"fsync must be 'every' or 'effects', not {fsync!r}")
        self.fsync = fsync
        self.path = Path(path)
        self._connection: sqlite3.Connection | None = None
        self._lock_file: int | None = None
        self._owned: set[tuple[str, str]] = set()
        self._guard = threading.Lock()  # one thread at a time on the connection

    def __repr__(self) -> str:
        return f"SQLiteRunStore(path={str(self.path)!r}, fsync={self.fsync!r})"

    # -- the connection (used in worker threads, one at a time) -------------------------

    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                connection = sqlite3.connect(
                    self.path,
                    timeout=BUSY_TIMEOUT_S,
                    isolation_level=None,
                    check_same_thread=False,
                )
                connection.execute("PRAGMA journal_mode=WAL")
                # FULL: a commit returns once the WAL is fsync'd. NORMAL may lose the last
                # commits when the machine, not just the process, goes down; the WAL is
                # written in order, so what survives is always a prefix of the run.
                level = "FULL" if self.fsync == "every" else "NORMAL"
                connection.execute(f"PRAGMA synchronous={level}")
                for statement in _SCHEMA:
                    connection.execute(statement)
            except (sqlite3.Error, OSError) as exc:
                raise DurableRunError(f"cannot open the run database {self.path}: {exc}") from exc
            self._connection = connection
        return self._connection

    async def _run(self, func: Any, *args: Any) -> Any:
        def locked() -> Any:
            with self._guard:
                try:
                    return func(self._db(), *args)
                except sqlite3.Error as exc:
                    raise DurableRunError(f"run database {self.path}: {exc}") from exc

        return await anyio.to_thread.run_sync(locked)

    # -- ownership ---------------------------------------------------------------------

    async def acquire(self, user_id: str, run_id: str) -> RunInfo:
        check_run_ids(run_id, user_id)
        pair = (user_id, run_id)
        if pair in self._owned:
            raise DurableRunError(
                f"run {run_id!r} of user {user_id!r} is already open in this process; "
                "a run has one program at a time"
            )
        self._owned.add(pair)
        try:
            return await self._run(self._acquire, user_id, run_id)
        except BaseException:
            self._owned.discard(pair)
            raise

    def _acquire(self, db: sqlite3.Connection, user_id: str, run_id: str) -> RunInfo:
        if fcntl is not None:
            if self._lock_file is None:
                self._lock_file = os.open(f"{self.path}.runs.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.lockf(
                    self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _lock_offset(user_id, run_id)
                )
            except OSError:
                raise DurableRunError(
                    f"run {run_id!r} of user {user_id!r} is open in another process; a run "
                    "has one program at a time (it can be resumed once that one ends or dies)"
                ) from None
        now = _now()
        try:
            with db:
                db.execute("BEGIN IMMEDIATE")
                db.execute(
                    f"INSERT INTO {RUNS} (user_id, run_id, status, created_at, updated_at) "
                    "VALUES (?, ?, 'running', ?, ?) ON CONFLICT (user_id, run_id) DO UPDATE SET "
                    "status = 'running', updated_at = excluded.updated_at",
                    (user_id, run_id, now, now),
                )
        except BaseException:
            if fcntl is not None and self._lock_file is not None:
                fcntl.lockf(self._lock_file, fcntl.LOCK_UN, 1, _lock_offset(user_id, run_id))
            raise
        info = self._info(db, user_id, run_id)
        assert info is not None
        return info

    async def release(self, user_id: str, run_id: str, status: RunStatus) -> None:
        pair = (user_id, run_id)
        try:
            await self._run(self._release, user_id, run_id, status)
        finally:
            self._owned.discard(pair)

    def _release(self, db: sqlite3.Connection, user_id: str, run_id: str, status: str) -> None:
        try:
            with db:
                db.execute(
                    f"UPDATE {RUNS} SET status = ?, updated_at = ? "
                    "WHERE user_id = ? AND run_id = ?",
                    (status, _now(), user_id, run_id),
                )
        finally:
            if fcntl is not None and self._lock_file is not None:
                fcntl.lockf(self._lock_file, fcntl.LOCK_UN, 1, _lock_offset(user_id, run_id))

    # -- records -----------------------------------------------------------------------

    async def put_step(self, user_id: str, run_id: str, record: StepRecord) -> None:
        try:
            payload = json.dumps(record.payload, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise DurableRunError(
                f"step {record.key!r}: its result is not JSON data: {exc}"
            ) from exc
        await self._run(self._put, user_id, run_id, record, payload)

    def _put(
        self, db: sqlite3.Connection, user_id: str, run_id: str, record: StepRecord, payload: str
    ) -> None:
        at = record.at or _now()
        guards_effect = self.fsync == "effects" and record.status == "started"
        if guards_effect:
            db.execute("PRAGMA synchronous=FULL")
        try:
            self._write(db, user_id, run_id, record, payload, at)
        finally:
            if guards_effect:
                db.execute("PRAGMA synchronous=NORMAL")

    def _write(
        self,
        db: sqlite3.Connection,
        user_id: str,
        run_id: str,
        record: StepRecord,
        payload: str,
        at: str,
    ) -> None:
        with db:
            db.execute("BEGIN IMMEDIATE")
            db.execute(
                f"INSERT INTO {STEPS} (user_id, run_id, key, seq, kind, status, fingerprint, "
                "payload, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (user_id, run_id, key) DO UPDATE SET seq = excluded.seq, "
                "kind = excluded.kind, status = excluded.status, "
                "fingerprint = excluded.fingerprint, payload = excluded.payload, at = excluded.at",
                (
                    user_id,
                    run_id,
                    record.key,
                    record.seq,
                    record.kind,
                    record.status,
                    record.fingerprint,
                    payload,
                    at,
                ),
            )
            db.execute(
                f"UPDATE {RUNS} SET updated_at = ?, last_step = ?, steps = "
                f"(SELECT COUNT(*) FROM {STEPS} WHERE user_id = ? AND run_id = ?) "
                "WHERE user_id = ? AND run_id = ?",
                (at, record.key, user_id, run_id, user_id, run_id),
            )

    async def load_steps(self, user_id: str, run_id: str) -> list[StepRecord]:
        check_run_ids(run_id, user_id)
        rows = await self._run(self._load, user_id, run_id)
        records = []
        for key, seq, kind, status, fingerprint, payload, at in rows:
            try:
                data = json.loads(payload)
            except ValueError as exc:
                raise DurableRunError(
                    f"run {run_id!r} of user {user_id!r} in {self.path}: the record of step "
                    f"{key!r} is corrupted ({exc})"
                ) from exc
            records.append(StepRecord(key, kind, status, fingerprint, data, seq, at))
        return records

    def _load(self, db: sqlite3.Connection, user_id: str, run_id: str) -> list[tuple[Any, ...]]:
        return db.execute(
            f"SELECT key, seq, kind, status, fingerprint, payload, at FROM {STEPS} "
            "WHERE user_id = ? AND run_id = ? ORDER BY seq",
            (user_id, run_id),
        ).fetchall()

    # -- listing -----------------------------------------------------------------------

    def _info(self, db: sqlite3.Connection, user_id: str, run_id: str) -> RunInfo | None:
        row = db.execute(
            f"SELECT user_id, run_id, status, created_at, updated_at, steps, last_step "
            f"FROM {RUNS} WHERE user_id = ? AND run_id = ?",
            (user_id, run_id),
        ).fetchone()
        return None if row is None else RunInfo(*row)

    async def get_run(self, user_id: str, run_id: str) -> RunInfo | None:
        check_run_ids(run_id, user_id)
        info: RunInfo | None = await self._run(self._info, user_id, run_id)
        return info

    async def list_runs(self, user_id: str | None = None) -> list[RunInfo]:
        def select(db: sqlite3.Connection) -> list[RunInfo]:
            query = (
                f"SELECT user_id, run_id, status, created_at, updated_at, steps, last_step "
                f"FROM {RUNS}"
            )
            rows = (
                db.execute(query + " ORDER BY updated_at DESC").fetchall()
                if user_id is None
                else db.execute(
                    query + " WHERE user_id = ? ORDER BY updated_at DESC", (user_id,)
                ).fetchall()
            )
            return [RunInfo(*row) for row in rows]

        runs: list[RunInfo] = await self._run(select)
        return runs

    async def delete_run(self, user_id: str, run_id: str) -> bool:
        check_run_ids(run_id, user_id)
        if (user_id, run_id) in self._owned:
            raise DurableRunError(f"run {run_id!r} of user {user_id!r} is open; close it first")

        def delete(db: sqlite3.Connection) -> bool:
            if fcntl is not None:
                # Taken and given back at once: only to refuse deleting a run another process
                # owns.
                self._acquire_lock_only(user_id, run_id)
            with db:
                db.execute("BEGIN IMMEDIATE")
                db.execute(
                    f"DELETE FROM {STEPS} WHERE user_id = ? AND run_id = ?", (user_id, run_id)
                )
                cursor = db.execute(
                    f"DELETE FROM {RUNS} WHERE user_id = ? AND run_id = ?", (user_id, run_id)
                )
            return cursor.rowcount > 0

        deleted: bool = await self._run(delete)
        return deleted

    def _acquire_lock_only(self, user_id: str, run_id: str) -> None:
        assert fcntl is not None
        if self._lock_file is None:
            self._lock_file = os.open(f"{self.path}.runs.lock", os.O_RDWR | os.O_CREAT, 0o600)
        offset = _lock_offset(user_id, run_id)
        try:
            fcntl.lockf(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
        except OSError:
            raise DurableRunError(
                f"run {run_id!r} of user {user_id!r} is open in another process; it cannot be "
                "deleted meanwhile"
            ) from None
        fcntl.lockf(self._lock_file, fcntl.LOCK_UN, 1, offset)

    async def aclose(self) -> None:
        def close() -> None:
            with self._guard:
                if self._connection is not None:
                    self._connection.close()
                    self._connection = None
                # The lock file stays open while this process owns a run (closing it would
                # drop every lock the process holds on it).
                if self._lock_file is not None and not self._owned:
                    os.close(self._lock_file)
                    self._lock_file = None

        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(close)
