"""AsyncSQLAlchemyMemory: an agent's working memory in a SQL database, AgentScope's tables.

(About 830 lines: the table layout, the engine handling and each operation's single
transaction belong to one class; splitting them would only move its private helpers apart.)

The tables are AgentScope 1.0's, so a database either library wrote is read by the other:

* ``users(id)`` and ``session(id, user_id)``: one row per user and per session id;
* ``message(id, msg, session_id, index)``: ``id`` is ``"{user_id}-{session_id}-{msg_id}"``
  (or, when another row already has that key, the escaped key of :meth:`_keys`), ``msg`` the
  message's JSON dict (:meth:`Msg.to_dict`), ``index`` its position;
* ``message_mark(msg_id, mark)``: one row per mark on a message.

Why it runs SQLAlchemy's synchronous engine in worker threads: SQLAlchemy's asyncio layer
(``AsyncEngine``, ``AsyncSession``) works only inside an asyncio event loop, and so do the
asyncio database drivers under it (aiosqlite, asyncpg). This memory must work under trio as
well, so every operation is a short synchronous transaction run by ``anyio.to_thread.run_sync``
on a regular driver (sqlite3 for SQLite, psycopg 3 for PostgreSQL): nothing blocks the event
loop, and nothing depends on which loop runs. An ``AsyncEngine``, ``AsyncSession`` or
``async_sessionmaker`` that an AgentScope program passes is taken for its database URL and
served through the matching synchronous driver instead.

Where it differs from AgentScope 1.0.21, on purpose:

* Every query selects the rows of this memory's user **and** session. AgentScope filters by
  ``session_id`` alone, so two users who share a session id read and delete each other's
  messages. A row belongs to this memory when its ``session_id`` matches and its ``id`` is
  exactly ``"{user_id}-{session_id}-"`` followed by the id inside ``msg`` (or the escaped
  form of that key).
* AgentScope's key is a plain join, so ids holding ``-`` can spell another row's key (user
  ``a-b`` of session ``c`` and user ``a`` of session ``b-c``, message ``d``): AgentScope then
  fails with ``IntegrityError``. Here the second message is stored under the escaped key.
* :meth:`delete` and the other counts report the rows really changed (AgentScope returns
  ``len(msg_ids)`` even for unknown ids).
* Marks follow :class:`InMemoryMemory` exactly (e.g. ``update_messages_mark(None)`` with no
  ``old_mark`` changes nothing; AgentScope removes every mark).
* Each operation is one transaction: it happens entirely or not at all. Every write
  transaction first locks the session in the database (:meth:`_lock_session`), so writers of
  one session in any memory object or process run one at a time: positions are never given
  twice and a batch is never interleaved with another (AgentScope reads the last position
  outside any lock shared between objects). Writes of one memory object also wait for each
  other in the process (a lock that works on any event loop); reads run concurrently.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread

from .._cleanup import close_in_thread
from .._extras import install_command, missing_extra
from .._locks import FairLock
from ..message import Msg
from ._memory_base import MemoryBase, _allow_duplicates, _batch, _check_mark_args, _check_marks

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

__all__ = ["AsyncSQLAlchemyMemory"]

T = TypeVar("T")

DEFAULT_URL = "sqlite:///agentscope_memory.db"
"""Where the memory lives when no engine or URL is given: a SQLite file in the working folder."""

SQLITE_BUSY_TIMEOUT_S = 30.0
"""How long a SQLite writer waits for another process's write before failing."""

IN_CHUNK = 500
"""Ids per ``IN (...)`` list: well below every driver's limit on bound parameters."""

KEY_MAX_LEN = 255
"""The width of AgentScope's ``message.id`` column (``String(255)``)."""

ADD_ATTEMPTS = 3
"""How many times an add is tried when another session's writer took a key it chose (the next
attempt sees the key taken and picks the escaped one)."""

# AgentScope programs pass asyncio engines; each asyncio driver maps to a synchronous one.
_SYNC_DRIVERS = {
    ("sqlite", "aiosqlite"): "sqlite",
    ("postgresql", "asyncpg"): "postgresql+psycopg",
    ("postgresql", "psycopg_async"): "postgresql+psycopg",
    ("postgresql", "psycopg"): "postgresql+psycopg",
    ("mysql", "aiomysql"): "mysql+pymysql",
    ("mysql", "asyncmy"): "mysql+pymysql",
    ("mariadb", "aiomysql"): "mariadb+pymysql",
    ("mariadb", "asyncmy"): "mariadb+pymysql",
}


@functools.cache
def _schema() -> SimpleNamespace:
    """AgentScope's four tables (built on first use: importing this module needs no SQLAlchemy)."""
    import sqlalchemy as sa

    metadata = sa.MetaData()
    users = sa.Table("users", metadata, sa.Column("id", sa.String(255), primary_key=True))
    session = sa.Table(
        "session",
        metadata,
        sa.Column("id", sa.String(255), primary_key=True),
        sa.Column("user_id", sa.String(255), sa.ForeignKey("users.id"), nullable=False),
    )
    message = sa.Table(
        "message",
        metadata,
        sa.Column("id", sa.String(255), primary_key=True),
        sa.Column("msg", sa.JSON, nullable=False),
        sa.Column("session_id", sa.String(255), sa.ForeignKey("session.id"), nullable=False),
        sa.Column("index", sa.BigInteger, nullable=False, index=True),
    )
    mark = sa.Table(
        "message_mark",
        metadata,
        sa.Column(
            "msg_id",
            sa.String(255),
            sa.ForeignKey("message.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("mark", sa.String(255), primary_key=True),
    )
    # Not in AgentScope's layout, and harmless to it: without it every query scans the whole
    # message table. Created separately so that databases AgentScope made get it too.
    by_session = sa.Index("ix_message_session_id_index", message.c.session_id, message.c["index"])
    return SimpleNamespace(
        sa=sa,
        metadata=metadata,
        users=users,
        session=session,
        message=message,
        mark=mark,
        by_session=by_session,
    )


def _escape(text: str) -> str:
    """*text* without ``-`` or ``/`` (percent-encoded, as is ``%``), for escaped keys."""
    return text.replace("%", "%25").replace("-", "%2D").replace("/", "%2F")


def _escape_sql(text: Any) -> Any:
    """:func:`_escape` as a SQL expression."""
    import sqlalchemy as sa

    replace = sa.func.replace
    return replace(replace(replace(text, "%", "%25"), "-", "%2D"), "/", "%2F")


def _check_json_text(msg_id: str, data: dict[str, Any]) -> None:
    """Refuse a message holding a lone surrogate, for databases other than SQLite.

    PostgreSQL's ``json`` column takes the ``"\\ud800"`` escape on insert but fails to parse it
    when read, and every later read of the session would fail with it.

    :raises ValueError: naming the message and the character.
    """
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end]
        raise ValueError(
            f"message {msg_id!r} holds a lone surrogate ({bad!r}), which this database's JSON "
            "cannot store (SQLite's can); nothing was stored"
        ) from None


def _chunks(items: list[T], size: int = IN_CHUNK) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _sync_url(url: Any, given: str) -> Any:
    """The URL of *url*'s database with a synchronous driver, for an asyncio engine."""
    backend, driver = url.get_backend_name(), url.get_driver_name()
    target = _SYNC_DRIVERS.get((backend, driver))
    if target is None:
        raise ValueError(
            f"AsyncSQLAlchemyMemory runs SQLAlchemy's synchronous engine in worker threads (so it "
            f"works on trio as well as asyncio), and has no synchronous driver for the {given}'s "
            f"'{backend}+{driver}' URL. Pass a database URL with a synchronous driver (e.g. "
            f"'postgresql+psycopg://user@host/db', 'sqlite:///memory.db') or a "
            f"sqlalchemy.create_engine(...) engine instead."
        )
    if backend == "sqlite" and url.database in (None, "", ":memory:"):
        raise ValueError(
            f"the {given} is an in-memory SQLite database, which only its own connections see; "
            "AsyncSQLAlchemyMemory runs a synchronous engine in worker threads. Pass a SQLite "
            "file URL such as 'sqlite:///memory.db' (or 'sqlite://' for a private in-memory one)"
        )
    return url.set(drivername=target)


class AsyncSQLAlchemyMemory(MemoryBase):
    """Messages and marks of one user's session, stored in SQL tables (AgentScope's layout).

    Works on asyncio and trio: SQLAlchemy's synchronous engine runs in worker threads (see the
    module's documentation for why). Behaves as :class:`InMemoryMemory` in everything but where
    the messages live, except that a message id can be stored only once per session (the
    ``message`` table's key), so ``allow_duplicates=True`` with a stored id is an error.

    :param engine_or_session: where the tables are: a database URL (``str`` or
        ``sqlalchemy.URL``, e.g. ``"sqlite:///memory.db"``, ``"postgresql+psycopg://user@host/db"``),
        a ``sqlalchemy.Engine``, or, as AgentScope programs pass them, an ``AsyncEngine``,
        ``AsyncSession`` or ``async_sessionmaker``, whose URL is then opened with the matching
        synchronous driver. Defaults to the SQLite file ``agentscope_memory.db`` in the working
        folder. The tables are created on first use when missing.
    :param session_id: the session the messages belong to (default ``"default_session"``).
    :param user_id: the user the messages belong to (default ``"default_user"``).
    :param engine_kwargs: passed to ``sqlalchemy.create_engine`` when this memory creates
        the engine (from a URL).
    :raises ImportError: when SQLAlchemy (or the URL's driver) is missing; install the
        ``sql`` extra.
    :raises ValueError: for anything else as *engine_or_session*, an asyncio engine whose
        driver has no synchronous counterpart here, or an asyncio in-memory SQLite engine.
    """

    def __init__(
        self,
        engine_or_session: Any = DEFAULT_URL,
        session_id: str | None = None,
        user_id: str | None = None,
        **engine_kwargs: Any,
    ) -> None:
        super().__init__()
        try:
            import sqlalchemy as sa
        except ImportError as exc:
            raise missing_extra("AsyncSQLAlchemyMemory", "sql", exc.name) from exc
        self.session_id = session_id or "default_session"
        self.user_id = user_id or "default_user"
        for what, value in (("session_id", self.session_id), ("user_id", self.user_id)):
            if not isinstance(value, str):
                raise TypeError(f"{what} must be a string, not {type(value).__name__}")
            if len(value) > KEY_MAX_LEN:
                raise ValueError(f"{what} is longer than {KEY_MAX_LEN} characters")
        self._prefix = f"{self.user_id}-{self.session_id}-"
        self._escaped_prefix = f"{_escape(self.user_id)}/{_escape(self.session_id)}/"
        self._owns_engine = True
        self._engine = self._make_engine(sa, engine_or_session, engine_kwargs)
        self._ready = False
        # Loop-agnostic: the same memory may serve asyncio.run, then trio.run.
        self._init_lock = FairLock()
        self._write_lock = FairLock()

    # -- engine ---------------------------------------------------------------------------

    def _make_engine(self, sa: Any, given: Any, engine_kwargs: dict[str, Any]) -> Engine:
        if isinstance(given, sa.engine.Engine):
            url = given.url
            in_memory = url.get_backend_name() == "sqlite" and url.database in (
                None,
                "",
                ":memory:",
            )
            if in_memory and not isinstance(given.pool, sa.pool.StaticPool):
                raise ValueError(
                    "an in-memory SQLite engine gives each worker thread its own empty "
                    "database; create it with poolclass=sqlalchemy.pool.StaticPool and "
                    "connect_args={'check_same_thread': False}, or pass the URL 'sqlite://'"
                )
            self._owns_engine = False
            return given
        module = type(given).__module__
        if module.startswith("sqlalchemy.ext.asyncio"):
            name = type(given).__name__
            if name == "AsyncEngine":
                engine = given
            elif name == "AsyncSession":
                engine = given.bind
            elif name == "async_sessionmaker":
                engine = given.kw.get("bind")
            else:
                engine = None
            if engine is None or type(engine).__name__ != "AsyncEngine":
                raise ValueError(
                    f"AsyncSQLAlchemyMemory cannot tell the database of this {name}: pass a "
                    "database URL (e.g. 'sqlite:///memory.db') or a sqlalchemy.create_engine(...) "
                    "engine instead"
                )
            return self._engine_from_url(sa, _sync_url(engine.url, name), engine_kwargs)
        if isinstance(given, str | sa.engine.URL):
            url = sa.engine.make_url(given)
            sync = _SYNC_DRIVERS.get((url.get_backend_name(), url.get_driver_name()))
            if sync is not None:
                # An asyncio driver's URL ('sqlite+aiosqlite://...') names the same database.
                url = url.set(drivername=sync)
            return self._engine_from_url(sa, url, engine_kwargs)
        raise ValueError(
            "engine_or_session must be a database URL (e.g. 'sqlite:///memory.db', "
            "'postgresql+psycopg://user@host/db') or a sqlalchemy Engine (asyncio engines and "
            f"sessions are accepted too), not {type(given).__name__}"
        )

    @staticmethod
    def _engine_from_url(sa: Any, url: Any, engine_kwargs: dict[str, Any]) -> Engine:
        kwargs = dict(engine_kwargs)
        sqlite = url.get_backend_name() == "sqlite"
        if sqlite and url.database in (None, "", ":memory:"):
            # One connection shared by the worker threads: the database lives in it.
            kwargs.setdefault("poolclass", sa.pool.StaticPool)
            kwargs.setdefault("connect_args", {"check_same_thread": False})
        try:
            engine = sa.create_engine(url, **kwargs)
        except ImportError as exc:
            raise ImportError(
                f"the database driver for {url.drivername!r} is not installed ({exc}); the "
                f"'sql' extra brings SQLite's and PostgreSQL's (psycopg): install it with "
                f"{install_command('sql')}",
                name=exc.name,
            ) from exc
        if sqlite and url.database not in (None, "", ":memory:"):
            timeout_ms = int(SQLITE_BUSY_TIMEOUT_S * 1000)

            @sa.event.listens_for(engine, "connect")
            def _on_connect(dbapi_connection: Any, _record: Any) -> None:
                # WAL: readers never wait for the writer. synchronous=NORMAL: a commit does not
                # wait for fsync (a killed process still loses nothing committed; a power cut
                # may lose the last commits, never consistency) - with the default FULL, the
                # fsync of every commit cost ~12 ms here, which an agent pays per message.
                # busy_timeout: writers from other processes queue instead of failing at once.
                cursor = dbapi_connection.cursor()
                cursor.execute("PRAGMA journal_mode=WAL")
                cursor.execute("PRAGMA synchronous=NORMAL")
                cursor.execute(f"PRAGMA busy_timeout={timeout_ms}")
                cursor.close()

        return engine

    def get_engine(self) -> Engine:
        """The synchronous ``sqlalchemy.Engine`` this memory uses."""
        return self._engine

    def __repr__(self) -> str:
        url = self._engine.url.render_as_string(hide_password=True)
        return (
            f"AsyncSQLAlchemyMemory({url!r}, session_id={self.session_id!r}, "
            f"user_id={self.user_id!r})"
        )

    # -- running --------------------------------------------------------------------------

    async def _run(self, fn: Callable[[Connection], T], write: bool) -> T:
        """Run *fn* in a worker thread inside one transaction (committed when it returns).

        A write transaction first takes the session's lock in the database
        (:meth:`_lock_session`), so writers of the session in other memory objects and other
        processes wait for it to commit.
        """
        if not self._ready:
            async with self._init_lock:
                if not self._ready:
                    await anyio.to_thread.run_sync(self._create_tables_or_refuse)
                    self._ready = True

        def transaction() -> T:
            try:
                with self._engine.begin() as conn:
                    if write:
                        self._lock_session(conn)
                    return fn(conn)
            except (UnicodeEncodeError, _schema().sa.exc.DataError) as exc:
                raise self._refused(exc) from None

        if write:
            async with self._write_lock:
                return await anyio.to_thread.run_sync(transaction)
        return await anyio.to_thread.run_sync(transaction)

    def _refused(self, exc: Exception) -> ValueError:
        """The error for data the driver cannot encode or the database cannot take or read
        (the transaction was rolled back, so nothing was written)."""
        where = f"session {self.session_id!r} of user {self.user_id!r}"
        if isinstance(exc, UnicodeEncodeError):
            bad = exc.object[exc.start : exc.end]
            return ValueError(
                f"an id or mark of {where} holds a lone surrogate ({bad!r}), which the database "
                "driver cannot encode; nothing was written"
            )
        # The driver's text (not SQLAlchemy's, which repeats every bound value).
        detail = " ".join(str(getattr(exc, "orig", exc)).split())[:300]
        return ValueError(
            f"the database failed on the data of {where}: {detail} (nothing was written)"
        )

    def _lock_session(self, conn: Connection) -> None:
        """Hold the session's write lock until the transaction ends.

        A no-op ``UPDATE`` of the ``session`` row, the first statement of the transaction:
        PostgreSQL and MySQL lock that row (a writer of the same session id waits for the
        commit), SQLite takes the database's write lock (waiting up to its busy timeout).
        Positions are then read and written by one writer at a time, whatever the process.
        """
        s = _schema()
        sa = s.sa
        lock = (
            sa.update(s.session)
            .where(s.session.c.id == self.session_id)
            .values(user_id=s.session.c.user_id)
        )
        if conn.execute(lock).rowcount == 0:
            # The row was deleted behind our back: make it again, then lock it.
            self._insert_user_and_session(conn)
            conn.execute(lock)

    def _create_tables_or_refuse(self) -> None:
        try:
            self._create_tables()
        except UnicodeEncodeError as exc:
            raise self._refused(exc) from None

    def _create_tables(self) -> None:
        s = _schema()
        s.metadata.create_all(self._engine, checkfirst=True)
        s.by_session.create(self._engine, checkfirst=True)
        with self._engine.begin() as conn:
            self._insert_user_and_session(conn)

    def _insert_user_and_session(self, conn: Connection) -> None:
        """The ``users`` and ``session`` rows of this memory, when missing."""
        s = _schema()
        sa = s.sa
        if not conn.execute(sa.select(s.users.c.id).where(s.users.c.id == self.user_id)).first():
            self._insert_ignoring_race(conn, s.users, {"id": self.user_id})
        # A session row records the first user of the session id (the table's key is the
        # session id alone); later users of the same id share the row, not the messages.
        if not conn.execute(
            sa.select(s.session.c.id).where(s.session.c.id == self.session_id)
        ).first():
            self._insert_ignoring_race(
                conn, s.session, {"id": self.session_id, "user_id": self.user_id}
            )

    @staticmethod
    def _insert_ignoring_race(conn: Connection, table: Any, row: dict[str, Any]) -> None:
        import sqlalchemy as sa

        # Another process may insert the same row between our check and our insert.
        try:
            with conn.begin_nested():
                conn.execute(sa.insert(table), row)
        except sa.exc.IntegrityError:
            pass

    def _own(self) -> Any:
        """The condition selecting this memory's rows of ``message`` (user and session).

        A row is this memory's when its ``session_id`` is the session's and its ``id`` is one
        of the message's two keys (:meth:`_keys`) for the id inside ``msg``. Knowing the
        session and the message id, AgentScope's key ``"{user_id}-{session_id}-{msg_id}"``
        names one user; an escaped key holds no ``-`` at all, so it is never another user's
        AgentScope key.
        """
        s = _schema()
        sa, m = s.sa, s.message
        msg_id = m.c.msg["id"].as_string()
        return sa.and_(
            m.c.session_id == self.session_id,
            sa.or_(
                m.c.id == sa.literal(self._prefix) + msg_id,
                m.c.id == sa.literal(self._escaped_prefix) + _escape_sql(msg_id),
            ),
        )

    @functools.cached_property
    def _q(self) -> SimpleNamespace:
        """This memory's frequent statements, built once: building a statement costs more than
        running it on SQLite, and an agent adds and reads on every reply."""
        s = _schema()
        sa, m, mk = s.sa, s.message, s.mark
        own = self._own()
        keys = sa.bindparam("keys", expanding=True)

        def has(name: str) -> Any:
            return sa.exists().where(mk.c.msg_id == m.c.id, mk.c.mark == sa.bindparam(name))

        read = sa.select(m.c.msg)
        order = (m.c["index"], m.c.id)
        return SimpleNamespace(
            own_ids=sa.select(m.c.id).where(own, m.c.id.in_(keys)),
            lookup=sa.select(m.c.id, own.label("own")).where(m.c.id.in_(keys)),
            last_index=sa.select(sa.func.max(m.c["index"])).where(
                m.c.session_id == self.session_id
            ),
            insert_message=sa.insert(m),
            insert_mark=sa.insert(mk),
            delete_marks=sa.delete(mk).where(mk.c.msg_id.in_(keys)),
            delete_messages=sa.delete(m).where(own, m.c.id.in_(keys)),
            get={
                (False, False): read.where(own).order_by(*order),
                (True, False): read.where(own, has("mark")).order_by(*order),
                (False, True): read.where(own, ~has("exclude")).order_by(*order),
                (True, True): read.where(own, has("mark"), ~has("exclude")).order_by(*order),
            },
            size=sa.select(sa.func.count()).select_from(m).where(own),
        )

    def _keys(self, msg_id: str) -> tuple[str, str]:
        """The two ``message.id`` keys a message of this memory may be stored under.

        AgentScope's ``"{user_id}-{session_id}-{msg_id}"`` is used whenever it is free. Being
        a plain join, it can be another row's key too (user ``a-b`` in session ``c`` and user
        ``a`` in session ``b-c`` both spell ``a-b-c-d`` for message ``d``); the message is
        then stored under the escaped key ``"{user_id}/{session_id}/{msg_id}"``, each part
        with ``%``, ``-`` and ``/`` percent-encoded: one key per (user, session, message), and
        no AgentScope key (those hold at least two ``-``).
        """
        return self._prefix + msg_id, self._escaped_prefix + _escape(msg_id)

    def _all_keys(self, msg_ids: Iterable[str]) -> list[str]:
        return list(dict.fromkeys(key for msg_id in msg_ids for key in self._keys(msg_id)))

    def _lookup(self, conn: Connection, keys: list[str]) -> tuple[set[str], set[str]]:
        """Which of these keys are rows of ``message`` (whoever's), and which of those are
        this memory's (one query)."""
        taken: set[str] = set()
        own: set[str] = set()
        for chunk in _chunks(keys):
            for key, mine in conn.execute(self._q.lookup, {"keys": chunk}):
                taken.add(key)
                if mine:
                    own.add(key)
        return taken, own

    def _own_ids(self, conn: Connection, keys: Iterable[str]) -> list[str]:
        """Which of these ``message.id`` keys are rows of this memory."""
        found: list[str] = []
        for chunk in _chunks(list(keys)):
            found.extend(conn.execute(self._q.own_ids, {"keys": chunk}).scalars())
        return found

    def _delete_keys(self, conn: Connection, keys: list[str]) -> int:
        """Delete the rows of these keys and their marks; *keys* must be this memory's own
        (:meth:`_own_ids`): the marks are deleted by key alone."""
        removed = 0
        for chunk in _chunks(keys):
            # Marks first: SQLite enforces no foreign keys (so no cascade) unless asked to.
            conn.execute(self._q.delete_marks, {"keys": chunk})
            removed += conn.execute(self._q.delete_messages, {"keys": chunk}).rowcount
        return removed

    # -- the memory interface -------------------------------------------------------------

    async def add(
        self,
        memories: Msg | list[Msg] | None,
        marks: str | list[str] | None = None,
        allow_duplicates: bool = False,
        **kwargs: Any,
    ) -> None:
        """Store *memories* (after the ones already stored), each with *marks*, in one
        transaction.

        ``None`` (and ``None`` items) are ignored. A message whose id is already stored in this
        session (or earlier in the same call) is skipped. AgentScope's ``skip_duplicated``
        keyword is accepted as the opposite of *allow_duplicates*.

        :param allow_duplicates: when true, an id already stored is an error instead of being
            skipped (a session stores each id once).
        :raises TypeError: for an item that is not a Msg, or marks that are not strings.
        :raises ValueError: with *allow_duplicates*, for an id already stored; for a
            message id or mark too long for the tables; for an id or mark holding a lone
            surrogate (no driver encodes it), or a message holding one on a database other
            than SQLite (PostgreSQL's JSON cannot read it back). Nothing is stored then.
        :raises MessageFormatError: for a message a saved memory could not hold
            (:func:`check_storable`); nothing is stored then.
        """
        allow = _allow_duplicates(allow_duplicates, kwargs)
        batch = _batch(memories)
        mark_list = _check_marks(marks, "marks")
        for mark in mark_list:
            if len(mark) > KEY_MAX_LEN:
                raise ValueError(f"mark {mark[:40]!r}... is longer than {KEY_MAX_LEN} characters")
        if not batch:
            return
        rows: dict[str, dict[str, Any]] = {}
        for msg in batch:
            if msg.id in rows:
                if allow:
                    raise ValueError(
                        f"message id {msg.id!r} appears twice in this call; a session stores "
                        "each message id once"
                    )
                continue
            if len(self._keys(msg.id)[0]) > KEY_MAX_LEN:
                raise ValueError(
                    f"'{{user_id}}-{{session_id}}-{{msg_id}}' is longer than {KEY_MAX_LEN} "
                    f"characters for message {msg.id!r}"
                )
            rows[msg.id] = msg.to_dict()
        if self._engine.dialect.name != "sqlite":
            for msg_id, data in rows.items():
                _check_json_text(msg_id, data)

        def work(conn: Connection) -> None:
            q = self._q
            taken, own = self._lookup(conn, self._all_keys(rows))
            stored = {i for i in rows if not own.isdisjoint(self._keys(i))}
            if stored and allow:
                raise ValueError(
                    f"message ids already stored in session {self.session_id!r} of user "
                    f"{self.user_id!r}: {sorted(stored)[:5]}; a session stores each message id "
                    "once (pass allow_duplicates=False to skip them)"
                )
            fresh = [i for i in rows if i not in stored]
            if not fresh:
                return
            keyed = [(self._free_key(i, taken), rows[i]) for i in fresh]
            # The session's lock (taken by _run) keeps other writers from reading the same
            # last position until this transaction commits.
            last = conn.execute(q.last_index).scalar()
            start = 0 if last is None else last + 1
            conn.execute(
                q.insert_message,
                [
                    {"id": key, "msg": data, "session_id": self.session_id, "index": start + i}
                    for i, (key, data) in enumerate(keyed)
                ],
            )
            if mark_list:
                conn.execute(
                    q.insert_mark,
                    [
                        {"msg_id": key, "mark": mark}
                        for key, _ in keyed
                        for mark in dict.fromkeys(mark_list)
                    ],
                )

        integrity_error = _schema().sa.exc.IntegrityError
        for attempt in range(1, ADD_ATTEMPTS + 1):
            try:
                await self._run(work, write=True)
                return
            except integrity_error:
                # A writer of another session committed one of our AgentScope keys after we
                # looked; the next attempt sees it taken and uses the escaped key.
                if attempt == ADD_ATTEMPTS:
                    raise

    def _free_key(self, msg_id: str, taken: set[str]) -> str:
        """AgentScope's key for *msg_id* unless another row has it, else the escaped key.

        :raises ValueError: when the escaped key is longer than the ``message.id`` column.
        """
        plain, escaped = self._keys(msg_id)
        if plain not in taken:
            return plain
        if len(escaped) > KEY_MAX_LEN:
            raise ValueError(
                f"message {msg_id!r}: its key {plain!r} is another user's or session's, and "
                f"the escaped key is longer than {KEY_MAX_LEN} characters. Nothing was stored."
            )
        return escaped

    async def delete(self, msg_ids: list[str], **kwargs: Any) -> int:
        """Remove the messages with these ids (and their marks); return how many were removed
        (ids not stored count nothing)."""
        keys = self._all_keys(msg_ids)
        if not keys:
            return 0
        return await self._run(
            lambda conn: self._delete_keys(conn, self._own_ids(conn, keys)), write=True
        )

    async def delete_by_mark(self, mark: str | list[str], **kwargs: Any) -> int:
        """Remove every message carrying *mark* (or any of the marks); return how many.

        :raises TypeError: if *mark* is not a string or a list of strings.
        """
        wanted = _check_marks(mark, "mark")
        if not wanted:
            return 0

        def work(conn: Connection) -> int:
            s = _schema()
            sa = s.sa
            keys = list(
                conn.execute(
                    sa.select(s.message.c.id).where(
                        self._own(),
                        sa.exists().where(
                            s.mark.c.msg_id == s.message.c.id, s.mark.c.mark.in_(wanted)
                        ),
                    )
                ).scalars()
            )
            return self._delete_keys(conn, keys) if keys else 0

        return await self._run(work, write=True)

    async def get_memory(
        self,
        mark: str | None = None,
        exclude_mark: str | None = None,
        prepend_summary: bool = True,
        **kwargs: Any,
    ) -> list[Msg]:
        """The stored messages in the order they were added, filtered by *mark* /
        *exclude_mark*; new :class:`Msg` objects on every call.

        With *prepend_summary* and a compressed summary set, a user message holding the
        summary comes first.

        :raises TypeError: if *mark* or *exclude_mark* is neither a string nor ``None``.
        :raises MessageFormatError: when a stored row does not hold a valid message.
        """
        _check_mark_args(mark=mark, exclude_mark=exclude_mark)

        query = self._q.get[mark is not None, exclude_mark is not None]
        params = {"mark": mark, "exclude": exclude_mark}

        def work(conn: Connection) -> list[Any]:
            return list(conn.execute(query, params).scalars())

        msgs = [Msg.from_dict(data) for data in await self._run(work, write=False)]
        return self._summary_first(msgs, prepend_summary)

    async def update_messages_mark(
        self,
        new_mark: str | None,
        old_mark: str | None = None,
        msg_ids: list[str] | None = None,
    ) -> int:
        """Add, replace or remove a mark, as :meth:`InMemoryMemory.update_messages_mark`;
        return how many messages changed.

        :raises TypeError: if a mark is neither a string nor ``None``.
        :raises ValueError: for a mark longer than the table's column (255 characters).
        """
        _check_mark_args(new_mark=new_mark, old_mark=old_mark)
        if new_mark is None and old_mark is None:
            return 0
        if new_mark is not None:
            new_mark = str(new_mark)
            if len(new_mark) > KEY_MAX_LEN:
                raise ValueError(f"new_mark is longer than {KEY_MAX_LEN} characters")
        keys = None if msg_ids is None else self._all_keys(msg_ids)
        if keys == []:
            return 0

        def work(conn: Connection) -> int:
            s = _schema()
            sa = s.sa
            query = sa.select(s.message.c.id).where(self._own())
            if old_mark is not None:
                query = query.where(
                    sa.exists().where(s.mark.c.msg_id == s.message.c.id, s.mark.c.mark == old_mark)
                )
            if keys is None:
                candidates = list(conn.execute(query).scalars())
            else:
                candidates = []
                for chunk in _chunks(keys):
                    candidates.extend(
                        conn.execute(query.where(s.message.c.id.in_(chunk))).scalars()
                    )
            if not candidates:
                return 0
            if new_mark is None:
                removed = 0
                for chunk in _chunks(candidates):
                    removed += conn.execute(
                        sa.delete(s.mark).where(
                            s.mark.c.msg_id.in_(chunk), s.mark.c.mark == old_mark
                        )
                    ).rowcount
                return removed
            if old_mark == new_mark:
                # Removing the mark and adding it back: a change for every message, as in
                # InMemoryMemory, with nothing to write.
                return len(candidates)
            if old_mark is not None:
                for chunk in _chunks(candidates):
                    conn.execute(
                        sa.delete(s.mark).where(
                            s.mark.c.msg_id.in_(chunk), s.mark.c.mark == old_mark
                        )
                    )
            marked: set[str] = set()
            for chunk in _chunks(candidates):
                marked.update(
                    conn.execute(
                        sa.select(s.mark.c.msg_id).where(
                            s.mark.c.msg_id.in_(chunk), s.mark.c.mark == new_mark
                        )
                    ).scalars()
                )
            missing = [key for key in candidates if key not in marked]
            if missing:
                conn.execute(
                    sa.insert(s.mark), [{"msg_id": key, "mark": new_mark} for key in missing]
                )
            return len(missing)

        return await self._run(work, write=True)

    async def size(self) -> int:
        """The number of stored messages."""

        def work(conn: Connection) -> int:
            return int(conn.execute(self._q.size).scalar_one())

        return await self._run(work, write=False)

    async def clear(self) -> None:
        """Remove every message of this user's session (the compressed summary is kept)."""

        def work(conn: Connection) -> None:
            s = _schema()
            keys = list(conn.execute(s.sa.select(s.message.c.id).where(self._own())).scalars())
            self._delete_keys(conn, keys)

        await self._run(work, write=True)

    # -- lifecycle ------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the connections of an engine this memory created (a given engine is left
        open for its owner), also when the calling task is cancelled, bounded. The memory can
        still be used afterwards: it reconnects."""
        if self._owns_engine:
            await close_in_thread(self._engine.dispose)

    aclose = close

    async def __aenter__(self) -> AsyncSQLAlchemyMemory:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
