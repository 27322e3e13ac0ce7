"""PostgresRunStore: durable runs in a PostgreSQL database, for runs shared by several machines.

The tables are :class:`SQLiteRunStore`'s (``agentscope_runs`` and ``agentscope_run_steps``,
created when missing), and so are the records. :meth:`PostgresRunStore.put_step` writes the
step and the run's row in one transaction, committed before it returns: the record survives
the death of the process, and of the server as far as the server's own durability settings
go (``fsync``, ``synchronous_commit``).

Ownership is a PostgreSQL session-level advisory lock (``pg_try_advisory_lock``) on a 64-bit
key derived from ``(user_id, run_id)``, held on a connection of its own for as long as the run
is open. Every write of the run goes through that connection, so a process writes only while
it holds the lock. The server drops the lock when the connection ends, however the process
ends: a killed run can be resumed at once (as soon as the server sees the connection closed;
a machine that vanished from the network is noticed by TCP keepalives or ``tcp_user_timeout``).
If that connection is lost while the run is open, the next write fails with
:class:`DurableRunError` rather than write without the lock: start the program again to
resume.

psycopg 3's synchronous client is driven from worker threads (``anyio.to_thread``), which works
under asyncio and trio alike. Every connection has a connect timeout and a statement timeout,
so no call waits on the server forever.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from .._cleanup import cleanup_scope
from .._extras import require_extra
from ..exception import DurableRunError
from ._sql import (
    DELETE_RUN,
    DELETE_STEPS,
    SCHEMA,
    SELECT_RUN,
    SELECT_RUNS,
    SELECT_STEPS,
    SET_STATUS,
    UPDATE_RUN_AFTER_STEP,
    UPSERT_RUN,
    UPSERT_STEP,
    pyformat,
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

__all__ = ["PostgresRunStore"]

T = TypeVar("T")

_SCHEMA_LOCK = int.from_bytes(run_digest("agentscope_rt.durable", "schema")[:8], "big", signed=True)
"""The transaction lock under which the tables are created (two processes creating them at
once would otherwise collide in PostgreSQL's catalog)."""


def _lock_key(user_id: str, run_id: str) -> int:
    return int.from_bytes(run_digest(user_id, run_id)[:8], "big", signed=True)


class _Owned:
    """A run this store owns: the connection holding its lock, one thread at a time on it."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.guard = threading.Lock()


class PostgresRunStore:
    """Durable runs stored in PostgreSQL (psycopg 3).

    :param conninfo: where the database is: a URL (``"postgresql://user@host:5432/db"``; the
        ``postgresql+psycopg://`` form of SQLAlchemy is taken too) or a libpq connection string
        (``"host=... dbname=..."``). Empty: libpq's defaults and ``PG*`` environment variables.
        Its password is never shown in reprs or errors.
    :param connect_timeout: seconds a connection attempt may take (libpq rounds up to whole
        seconds).
    :param statement_timeout: seconds one statement may run on the server before it is
        cancelled; also how long a sent query may stay unacknowledged by a vanished server
        (``tcp_user_timeout``, unless given).
    :param kwargs: further libpq connection parameters (``sslmode=...``, ``password=...``).
    :raises ImportError: when psycopg is missing (install the ``sql`` extra).
    :raises DurableRunError: when *conninfo* cannot be read (its text is not shown: it may
        hold a password).
    :raises ValueError: for a timeout that is not a positive number.
    """

    def __init__(
        self,
        conninfo: str = "",
        *,
        connect_timeout: float = 10.0,
        statement_timeout: float = 30.0,
        **kwargs: Any,
    ) -> None:
        self._psycopg = require_extra("psycopg", extra="sql", user="PostgresRunStore")
        for name, value in (
            ("connect_timeout", connect_timeout),
            ("statement_timeout", statement_timeout),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
        if conninfo.startswith("postgresql+psycopg://"):
            conninfo = "postgresql://" + conninfo.removeprefix("postgresql+psycopg://")
        try:
            params = self._psycopg.conninfo.conninfo_to_dict(conninfo, **kwargs)
        except self._psycopg.Error:
            raise DurableRunError(
                "PostgresRunStore cannot read its connection string (not shown: it may hold a "
                "password); pass a URL such as 'postgresql://user@host:5432/db' or libpq "
                "parameters such as 'host=localhost dbname=runs'"
            ) from None
        params["connect_timeout"] = max(1, math.ceil(connect_timeout))
        params.setdefault("tcp_user_timeout", math.ceil(statement_timeout * 1000))
        self._params: dict[str, Any] = params
        self._password = str(params.get("password") or "")
        self._statement_timeout_ms = math.ceil(statement_timeout * 1000)
        self._where = _describe(params)
        self._shared: Any = None
        self._shared_guard = threading.Lock()
        self._schema_ready = False
        self._owned: dict[tuple[str, str], _Owned | None] = {}

    def __repr__(self) -> str:
        return f"PostgresRunStore({self._where!r})"

    # -- connections (used in worker threads) ------------------------------------------

    def _fail(self, what: str, exc: Exception) -> DurableRunError:
        detail = " ".join(str(exc).split())
        if self._password:
            detail = detail.replace(self._password, "***")
        return DurableRunError(f"PostgresRunStore {self._where}: cannot {what}: {detail}")

    def _connect(self) -> Any:
        """A new connection in autocommit mode (transactions are explicit), with the
        statement timeout set and the tables created."""
        connection = self._psycopg.connect(**self._params, autocommit=True)
        try:
            connection.execute(
                "SELECT set_config('statement_timeout', %s, false)",
                (str(self._statement_timeout_ms),),
            )
            if not self._schema_ready:
                with connection.transaction():
                    connection.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                    for statement in SCHEMA:
                        connection.execute(statement)
                self._schema_ready = True
        except BaseException:
            connection.close()
            raise
        return connection

    def _with_shared(self, what: str, func: Callable[[Any], T]) -> T:
        """``func(connection)`` on the connection for everything but an owned run's writes
        (made again after it broke)."""
        with self._shared_guard:
            try:
                if self._shared is None or self._shared.closed:
                    self._shared = self._connect()
                return func(self._shared)
            except self._psycopg.Error as exc:
                if self._shared is not None and self._shared.broken:
                    self._shared.close()
                    self._shared = None
                raise self._fail(what, exc) from None

    async def _shared_call(self, what: str, func: Callable[[Any], T]) -> T:
        return await anyio.to_thread.run_sync(self._with_shared, what, func)

    # -- ownership ---------------------------------------------------------------------

    async def acquire(self, user_id: str, run_id: str) -> RunInfo:
        """Take the run (creating it if new) and mark it ``running``.

        :raises DurableRunError: when another process or another open run of this one owns
            the run, or PostgreSQL cannot be reached.
        """
        check_run_ids(run_id, user_id)
        pair = (user_id, run_id)
        if pair in self._owned:
            raise DurableRunError(
                f"run {run_id!r} of user {user_id!r} is already open in this process; "
                "a run has one program at a time"
            )
        self._owned[pair] = None  # taken while it opens: a second acquire here is refused
        try:
            owned = await anyio.to_thread.run_sync(self._lock, user_id, run_id)
        except BaseException:
            del self._owned[pair]
            raise
        self._owned[pair] = owned
        try:
            return await anyio.to_thread.run_sync(self._mark_running, owned, user_id, run_id)
        except BaseException:
            del self._owned[pair]
            with cleanup_scope():
                await anyio.to_thread.run_sync(owned.connection.close)
            raise

    def _lock(self, user_id: str, run_id: str) -> _Owned:
        try:
            connection = self._connect()
        except self._psycopg.Error as exc:
            raise self._fail(f"open run {run_id!r} of user {user_id!r}", exc) from None
        try:
            locked = connection.execute(
                "SELECT pg_try_advisory_lock(%s)", (_lock_key(user_id, run_id),)
            ).fetchone()[0]
        except self._psycopg.Error as exc:
            connection.close()
            raise self._fail(f"lock run {run_id!r} of user {user_id!r}", exc) from None
        if not locked:
            connection.close()
            raise DurableRunError(
                f"run {run_id!r} of user {user_id!r} is open in another process or store; a run "
                "has one program at a time (it can be resumed once that one ends or dies)"
            )
        return _Owned(connection)

    def _mark_running(self, owned: _Owned, user_id: str, run_id: str) -> RunInfo:
        def mark(connection: Any) -> RunInfo:
            at = now()
            with connection.transaction():
                connection.execute(pyformat(UPSERT_RUN), (user_id, run_id, at, at))
            info = run_info(connection.execute(pyformat(SELECT_RUN), (user_id, run_id)).fetchone())
            assert info is not None
            return info

        return self._with_owned(owned, f"open run {run_id!r} of user {user_id!r}", mark)

    def _with_owned(self, owned: _Owned, what: str, func: Callable[[Any], T]) -> T:
        with owned.guard:
            try:
                return func(owned.connection)
            except self._psycopg.Error as exc:
                error = self._fail(what, exc)
                if owned.connection.broken or owned.connection.closed:
                    error = DurableRunError(
                        f"{error}; the connection that held the run is lost, and with it the "
                        "run's ownership: start the program again to resume the run"
                    )
                raise error from None

    async def release(self, user_id: str, run_id: str, status: RunStatus) -> None:
        """Record how the run ended and give it up (the lock goes with its connection, also
        when recording the status fails).

        :raises DurableRunError: when the status could not be recorded.
        """
        owned = self._owned.pop((user_id, run_id), None)
        if owned is None:
            return

        def set_status(connection: Any) -> None:
            with connection.transaction():
                connection.execute(pyformat(SET_STATUS), (status, now(), user_id, run_id))
            # Given back before the connection closes: the server ends a closed session
            # a moment later, and the run would be refused to its next owner meanwhile.
            connection.execute("SELECT pg_advisory_unlock(%s)", (_lock_key(user_id, run_id),))

        def release() -> None:
            try:
                self._with_owned(owned, f"close run {run_id!r} of user {user_id!r}", set_status)
            finally:
                owned.connection.close()

        with cleanup_scope():
            await anyio.to_thread.run_sync(release)

    # -- records -----------------------------------------------------------------------

    async def put_step(self, user_id: str, run_id: str, record: StepRecord) -> None:
        """Write *record* and update the run's row in one transaction, committed on return.

        :raises DurableRunError: when the run is not open with this store, the payload is not
            JSON data (nothing written), or the write failed (nothing written either).
        """
        await self.put_steps(user_id, run_id, [record])

    async def put_steps(self, user_id: str, run_id: str, records: Sequence[StepRecord]) -> None:
        """Write *records* as :meth:`put_step` writes each, in one transaction (what a batch
        of records relayed from an agent host needs): all or none.

        :raises DurableRunError: as :meth:`put_step`.
        """
        owned = self._owned.get((user_id, run_id))
        check_owned(owned is not None, user_id, run_id)
        assert owned is not None
        rows = [
            step_row(
                user_id, run_id, record, encode_json(record, record.payload), record.at or now()
            )
            for record in records
        ]
        if not rows:
            return
        last = records[-1].key

        def put(connection: Any) -> None:
            with connection.transaction(), connection.cursor() as cursor:
                cursor.executemany(pyformat(UPSERT_STEP), rows)
                cursor.execute(
                    pyformat(UPDATE_RUN_AFTER_STEP),
                    (rows[-1][-1], last, user_id, run_id, user_id, run_id),
                )

        what = f"record step {last!r} of run {run_id!r} of user {user_id!r}"
        await anyio.to_thread.run_sync(self._with_owned, owned, what, put)

    async def load_steps(self, user_id: str, run_id: str) -> list[StepRecord]:
        """Every record of the run in ``seq`` order (empty for an unknown run).

        :raises DurableRunError: when PostgreSQL fails or a record is corrupted.
        """
        check_run_ids(run_id, user_id)
        what = f"load run {run_id!r} of user {user_id!r}"
        rows = await self._shared_call(
            what, lambda c: c.execute(pyformat(SELECT_STEPS), (user_id, run_id)).fetchall()
        )
        return steps_from_rows(rows, f"run {run_id!r} of user {user_id!r} in {self._where}")

    # -- listing -----------------------------------------------------------------------

    async def get_run(self, user_id: str, run_id: str) -> RunInfo | None:
        """The run, or ``None``.

        :raises DurableRunError: when PostgreSQL fails.
        """
        check_run_ids(run_id, user_id)
        return await self._shared_call(
            f"read run {run_id!r} of user {user_id!r}",
            lambda c: run_info(c.execute(pyformat(SELECT_RUN), (user_id, run_id)).fetchone()),
        )

    async def list_runs(self, user_id: str | None = None) -> list[RunInfo]:
        """The runs of *user_id* (of everyone for ``None``), most recently updated first.

        :raises DurableRunError: when PostgreSQL fails.
        """

        def select(connection: Any) -> list[RunInfo]:
            if user_id is None:
                rows = connection.execute(SELECT_RUNS + " ORDER BY updated_at DESC").fetchall()
            else:
                rows = connection.execute(
                    SELECT_RUNS + " WHERE user_id = %s ORDER BY updated_at DESC", (user_id,)
                ).fetchall()
            return [RunInfo(*row) for row in rows]

        return await self._shared_call("list runs", select)

    async def delete_run(self, user_id: str, run_id: str) -> bool:
        """Delete the run and its records; whether there was one.

        :raises DurableRunError: while a process (this one or another) owns the run, or when
            PostgreSQL fails.
        """
        check_run_ids(run_id, user_id)
        if (user_id, run_id) in self._owned:
            raise DurableRunError(f"run {run_id!r} of user {user_id!r} is open; close it first")

        def delete(connection: Any) -> bool:
            with connection.transaction():
                # Held to the end of the transaction: refused while another session owns the
                # run, and no one takes it while its rows go.
                free = connection.execute(
                    "SELECT pg_try_advisory_xact_lock(%s)", (_lock_key(user_id, run_id),)
                ).fetchone()[0]
                if not free:
                    raise DurableRunError(
                        f"run {run_id!r} of user {user_id!r} is open in another process or "
                        "store; it cannot be deleted meanwhile"
                    )
                connection.execute(pyformat(DELETE_STEPS), (user_id, run_id))
                return bool(connection.execute(pyformat(DELETE_RUN), (user_id, run_id)).rowcount)

        return await self._shared_call(f"delete run {run_id!r} of user {user_id!r}", delete)

    async def aclose(self) -> None:
        """Close the shared connection (runs still open keep theirs until released)."""

        def close() -> None:
            with self._shared_guard:
                if self._shared is not None:
                    self._shared.close()
                    self._shared = None

        with cleanup_scope():
            await anyio.to_thread.run_sync(close)


def _describe(params: dict[str, Any]) -> str:
    """Where *params* point, as a URL without the password (``postgresql://user@host:port/db``)."""
    user = params.get("user")
    host = params.get("host") or params.get("hostaddr") or ""
    port = params.get("port")
    return (
        f"postgresql://{f'{user}@' if user else ''}{host}{f':{port}' if port else ''}"
        f"/{params.get('dbname') or ''}"
    )
