"""SQLiteSession: every session of an application in one SQLite file.

The embedded default for applications: no server, one file, many sessions and users. Each state
is one row ``(user_id, session_id, state, updated_at)`` of the table ``agentscope_session``,
``state`` holding the same JSON object a :class:`JSONSession` file holds.

Why it is safe:

* A save is one ``INSERT ... ON CONFLICT DO UPDATE`` in a transaction: SQLite's journal makes it
  all or nothing, even when the process is killed in the middle.
* The database runs in WAL mode, so readers never wait for a writer and a writer never blocks
  readers; writers queue behind each other (``busy_timeout``) instead of failing.
* Every operation opens its own connection in a worker thread (``anyio.to_thread``), so nothing
  blocks the event loop and nothing depends on which loop runs (asyncio or trio). Opening a
  connection costs tens of microseconds, far less than the write it is for.
"""

from __future__ import annotations

import datetime
import os
import sqlite3
from pathlib import Path

import anyio
import anyio.to_thread

from .._locks import FairLock
from ..exception import SessionError
from ..module import StateModule
from ._session_base import (
    SessionBase,
    check_session_ids,
    encode_session_state,
    load_stored_state,
    logger,
)

__all__ = ["SQLiteSession"]

TABLE = "agentscope_session"
BUSY_TIMEOUT_S = 30.0
"""How long a writer waits for another writer before giving up with an error."""

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    user_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    state TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (user_id, session_id)
)
"""
_UPSERT = (
    f"INSERT INTO {TABLE} (user_id, session_id, state, updated_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (user_id, session_id) DO UPDATE SET "
    "state = excluded.state, updated_at = excluded.updated_at"
)
_SELECT = f"SELECT state FROM {TABLE} WHERE user_id = ? AND session_id = ?"


class SQLiteSession(SessionBase):
    """Sessions stored as rows of one SQLite database file.

    :param path: the database file (created with its folder on first use), or
        ``":memory:"``-like URIs are refused: a session must outlive the connection.
    :param pause_gc: hold off Python's cyclic garbage collector while a state is encoded or
        decoded (off by default). It makes saving and loading a large session several times
        faster (the collector would walk the many containers being built, freeing nothing),
        but the switch is process-wide: meanwhile no thread of the program collects cycles.
    """

    def __init__(
        self, path: str | os.PathLike[str] = "./agentscope_sessions.db", *, pause_gc: bool = False
    ) -> None:
        self.path = Path(path)
        self.pause_gc = pause_gc
        if str(path) == ":memory:":
            raise SessionError(
                "SQLiteSession needs a database file: an in-memory database would vanish "
                "after each operation; pass a path such as 'sessions.db'"
            )
        self._ready = False
        self._init_lock = FairLock()  # a session may serve asyncio, then trio

    def __repr__(self) -> str:
        return f"SQLiteSession(path={str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        try:
            connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as exc:
            raise SessionError(f"cannot open session database {self.path}: {exc}") from exc
        return connection

    async def _ensure_schema(self) -> None:
        if self._ready:
            return
        async with self._init_lock:
            if not self._ready:
                await anyio.to_thread.run_sync(self._create)
                self._ready = True

    def _create(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SessionError(f"cannot create the folder of {self.path}: {exc}") from exc
        connection = self._connect()
        try:
            # WAL is a property of the file: set once, it holds for every later connection.
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(_SCHEMA)
        except sqlite3.Error as exc:
            raise SessionError(f"cannot prepare session database {self.path}: {exc}") from exc
        finally:
            connection.close()

    async def save_session_state(
        self, session_id: str, user_id: str = "", **state_modules_mapping: StateModule
    ) -> None:
        """Save the modules' states as the session's row, in one transaction.

        :raises SessionError: for an invalid id, or when the database cannot be written (the
            previous row is then unchanged).
        :raises StateError: when a module's state cannot be saved.
        """
        check_session_ids(session_id, user_id)
        data = encode_session_state(state_modules_mapping, pause_gc=self.pause_gc).decode(
            "utf-8", "surrogatepass"
        )
        await self._ensure_schema()
        await anyio.to_thread.run_sync(self._write, session_id, user_id, data)
        logger.info("Saved session %r of user %r to %s.", session_id, user_id, self.path)

    def _write(self, session_id: str, user_id: str, data: str) -> None:
        now = datetime.datetime.now(datetime.UTC).isoformat()
        connection = self._connect()
        try:
            with connection:
                connection.execute("BEGIN IMMEDIATE")
                connection.execute(_UPSERT, (user_id, session_id, data, now))
        except sqlite3.Error as exc:
            raise SessionError(
                f"cannot save session {session_id!r} of user {user_id!r} to {self.path}: {exc}"
            ) from exc
        finally:
            connection.close()

    async def load_session_state(
        self,
        session_id: str,
        user_id: str = "",
        allow_not_exist: bool = True,
        **state_modules_mapping: StateModule,
    ) -> None:
        """Load the session's row into the modules named in it (all or nothing).

        :raises SessionError: when the session was never saved and *allow_not_exist* is false,
            or its state is corrupted or does not fit the modules (naming the session and the
            path inside the state); the modules are unchanged then.
        """
        check_session_ids(session_id, user_id)
        await self._ensure_schema()
        data = await anyio.to_thread.run_sync(self._read, session_id, user_id)
        where = f"session {session_id!r} of user {user_id!r} (database {self.path})"
        if data is None:
            if allow_not_exist:
                logger.info("%s does not exist; nothing loaded.", where)
                return
            raise SessionError(
                f"Failed to load {where}: it does not exist. Save the session first, "
                "or pass allow_not_exist=True."
            )
        load_stored_state(data, state_modules_mapping, where, pause_gc=self.pause_gc)

    def _read(self, session_id: str, user_id: str) -> str | None:
        connection = self._connect()
        try:
            row = connection.execute(_SELECT, (user_id, session_id)).fetchone()
        except sqlite3.Error as exc:
            raise SessionError(
                f"cannot read session {session_id!r} of user {user_id!r} from {self.path}: {exc}"
            ) from exc
        finally:
            connection.close()
        if row is None:
            return None
        state = row[0]
        if not isinstance(state, str):
            raise SessionError(
                f"session {session_id!r} of user {user_id!r} in {self.path} is corrupted: "
                f"its state is a {type(state).__name__}, not JSON text"
            )
        return state

    async def list_sessions(self, user_id: str | None = None) -> list[tuple[str, str]]:
        """The stored ``(user_id, session_id)`` pairs, of one user or of all, sorted."""
        await self._ensure_schema()
        return await anyio.to_thread.run_sync(self._list, user_id)

    def _list(self, user_id: str | None) -> list[tuple[str, str]]:
        connection = self._connect()
        try:
            if user_id is None:
                rows = connection.execute(f"SELECT user_id, session_id FROM {TABLE}").fetchall()
            else:
                rows = connection.execute(
                    f"SELECT user_id, session_id FROM {TABLE} WHERE user_id = ?", (user_id,)
                ).fetchall()
        finally:
            connection.close()
        return sorted((str(u), str(s)) for u, s in rows)

    async def delete_session(self, session_id: str, user_id: str = "") -> bool:
        """Delete the session's row; whether there was one."""
        check_session_ids(session_id, user_id)
        await self._ensure_schema()
        return await anyio.to_thread.run_sync(self._delete, session_id, user_id)

    def _delete(self, session_id: str, user_id: str) -> bool:
        connection = self._connect()
        try:
            with connection:
                cursor = connection.execute(
                    f"DELETE FROM {TABLE} WHERE user_id = ? AND session_id = ?",
                    (user_id, session_id),
                )
        finally:
            connection.close()
        return cursor.rowcount > 0
