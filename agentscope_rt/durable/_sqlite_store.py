"""SQLiteRunStore: durable runs in one SQLite file, the embedded default.

Two tables: ``agentscope_runs`` (one row per run) and ``agentscope_run_steps`` (one row per
step record, keyed ``(user_id, run_id, key)``). Each record is written in its own transaction
with the run's row, in WAL mode with ``synchronous=FULL``: when :meth:`put_step` returns, the
record is on disk (fsync'd) and survives the death of the process or of the machine.

A process owns a run through an exclusive lock on one byte of a lock file beside the
database (``<file>.runs.lock``), at an offset derived from the run's ids: the operating system
drops the lock when the process dies, however it dies, so a killed run can be resumed at once
and a live one is never opened twice, by another process or by another store of the same
process. On systems without POSIX locks only the current process is checked.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread

from ..exception import DurableRunError
from ._sql import (
    DELETE_RUN,
    DELETE_STEPS,
    SCHEMA,
    SELECT_RUN,
    SELECT_RUNS,
    SELECT_STEPS,
    SET_STATUS,
    STEP_EXISTS,
    UPDATE_RUN_AFTER_STEPS,
    UPSERT_RUN,
    UPSERT_STEP,
    run_info,
    step_row,
    steps_from_rows,
)
from ._store import (
    RunInfo,
    RunStatus,
    StepRecord,
    check_owned,
    check_run_ids,
    encode_json,
    now,
    run_digest,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["SQLiteRunStore"]

BUSY_TIMEOUT_S = 30.0


def _lock_offset(user_id: str, run_id: str) -> int:
    return int.from_bytes(run_digest(user_id, run_id)[:7], "big")  # 56 bits: within any off_t


class _RunLocks:
    """The runs this process holds, per lock file, shared by every store of the process.

    POSIX locks belong to a process, not to a descriptor: two stores of one process on one
    file would not exclude each other, and closing either's descriptor of the lock file would
    drop every lock the process holds on it. So the process opens each lock file once, keeps
    it open while it holds a run of it, and tells its own stores apart itself.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._files: dict[str, tuple[int | None, set[int]]] = {}

    def take(self, lock_path: str, offset: int) -> bool:
        """Take the run at *offset* of *lock_path*; whether it was free (in this process and,
        with POSIX locks, in every other)."""
        with self._guard:
            if lock_path not in self._files:
                self._files[lock_path] = (
                    None if fcntl is None else os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600),
                    set(),
                )
            fd, held = self._files[lock_path]
            if offset in held:
                return False
            try:
                if fd is not None:
                    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
            except OSError:
                self._close_if_unused(lock_path)
                return False
            held.add(offset)
            return True

    def give(self, lock_path: str, offset: int) -> None:
        """Give the run at *offset* of *lock_path* back (if this process holds it)."""
        with self._guard:
            entry = self._files.get(lock_path)
            if entry is None or offset not in entry[1]:
                return
            fd, held = entry
            held.discard(offset)
            if fd is not None:
                fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)
            self._close_if_unused(lock_path)

    def _close_if_unused(self, lock_path: str) -> None:
        fd, held = self._files[lock_path]
        if not held:
            del self._files[lock_path]
            if fd is not None:
                os.close(fd)


_LOCKS = _RunLocks()


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
        self._lock_path = os.path.realpath(f"{self.path}.runs.lock")
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
                for statement in SCHEMA:
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
        self._take(
            user_id,
            run_id,
            "a run has one program at a time (it can be resumed once that one ends or dies)",
        )
        at = now()
        try:
            with db:
                db.execute("BEGIN IMMEDIATE")
                db.execute(UPSERT_RUN, (user_id, run_id, at, at))
        except BaseException:
            _LOCKS.give(self._lock_path, _lock_offset(user_id, run_id))
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
                db.execute(SET_STATUS, (status, now(), user_id, run_id))
        finally:
            _LOCKS.give(self._lock_path, _lock_offset(user_id, run_id))

    # -- records -----------------------------------------------------------------------

    async def put_step(self, user_id: str, run_id: str, record: StepRecord) -> None:
        await self.put_steps(user_id, run_id, [record])

    async def put_steps(self, user_id: str, run_id: str, records: Sequence[StepRecord]) -> None:
        """Write *records* as :meth:`put_step` writes each, in one transaction: one wait for
        the disk for all (what a batch of records relayed from an agent host needs).

        :raises DurableRunError: as :meth:`put_step`; nothing is written then.
        """
        check_owned((user_id, run_id) in self._owned, user_id, run_id)
        payloads = [encode_json(record, record.payload) for record in records]
        if records:
            await self._run(self._put, user_id, run_id, records, payloads)

    def _put(
        self,
        db: sqlite3.Connection,
        user_id: str,
        run_id: str,
        records: Sequence[StepRecord],
        payloads: list[str],
    ) -> None:
        guards_effect = self.fsync == "effects" and any(r.status == "started" for r in records)
        if guards_effect:
            db.execute("PRAGMA synchronous=FULL")
        try:
            self._write(db, user_id, run_id, records, payloads)
        finally:
            if guards_effect:
                db.execute("PRAGMA synchronous=NORMAL")

    def _write(
        self,
        db: sqlite3.Connection,
        user_id: str,
        run_id: str,
        records: Sequence[StepRecord],
        payloads: list[str],
    ) -> None:
        with db:
            db.execute("BEGIN IMMEDIATE")
            at, new = "", 0
            for record, payload in zip(records, payloads, strict=True):
                at = record.at or now()
                found = db.execute(STEP_EXISTS, (user_id, run_id, record.key)).fetchone()
                new += found is None
                db.execute(UPSERT_STEP, step_row(user_id, run_id, record, payload, at))
            last = records[-1].key
            db.execute(UPDATE_RUN_AFTER_STEPS, (at, last, new, user_id, run_id))

    async def load_steps(self, user_id: str, run_id: str) -> list[StepRecord]:
        check_run_ids(run_id, user_id)
        rows = await self._run(self._load, user_id, run_id)
        return steps_from_rows(rows, f"run {run_id!r} of user {user_id!r} in {self.path}")

    def _load(self, db: sqlite3.Connection, user_id: str, run_id: str) -> list[tuple[Any, ...]]:
        return db.execute(SELECT_STEPS, (user_id, run_id)).fetchall()

    # -- listing -----------------------------------------------------------------------

    def _info(self, db: sqlite3.Connection, user_id: str, run_id: str) -> RunInfo | None:
        return run_info(db.execute(SELECT_RUN, (user_id, run_id)).fetchone())

    async def get_run(self, user_id: str, run_id: str) -> RunInfo | None:
        check_run_ids(run_id, user_id)
        info: RunInfo | None = await self._run(self._info, user_id, run_id)
        return info

    async def list_runs(self, user_id: str | None = None) -> list[RunInfo]:
        def select(db: sqlite3.Connection) -> list[RunInfo]:
            rows = (
                db.execute(SELECT_RUNS + " ORDER BY updated_at DESC").fetchall()
                if user_id is None
                else db.execute(
                    SELECT_RUNS + " WHERE user_id = ? ORDER BY updated_at DESC", (user_id,)
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
            # Held while the rows go: refused while another owns the run, and no one takes
            # it meanwhile.
            self._take(user_id, run_id, "it cannot be deleted meanwhile")
            try:
                with db:
                    db.execute("BEGIN IMMEDIATE")
                    db.execute(DELETE_STEPS, (user_id, run_id))
                    cursor = db.execute(DELETE_RUN, (user_id, run_id))
            finally:
                _LOCKS.give(self._lock_path, _lock_offset(user_id, run_id))
            return cursor.rowcount > 0

        deleted: bool = await self._run(delete)
        return deleted

    def _take(self, user_id: str, run_id: str, then: str) -> None:
        try:
            taken = _LOCKS.take(self._lock_path, _lock_offset(user_id, run_id))
        except OSError as exc:
            raise DurableRunError(
                f"cannot open the run lock file {self._lock_path}: {exc}"
            ) from exc
        if not taken:
            raise DurableRunError(
                f"run {run_id!r} of user {user_id!r} is open in another process or store; {then}"
            )

    async def aclose(self) -> None:
        def close() -> None:
            with self._guard:
                if self._connection is not None:
                    self._connection.close()
                    self._connection = None

        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(close)
