"""RedisSession: session states as Redis strings, in AgentScope's key layout.

Each session is one string key ``{key_prefix}user_id:{user_id}:session:{session_id}:state``
holding the same JSON object a :class:`JSONSession` file holds. In the key, ``%`` and ``:``
inside an id are written ``%25`` and ``%3A``: with AgentScope's plain keys, user ``a:session:b``
/ session ``c`` and user ``a`` / session ``b:session:c`` share one key (and overwrite each
other). Ids without ``%`` and ``:`` keep AgentScope's keys; an AgentScope key of ids holding
them is read when the pair has no key of its own and that key can only be this pair's.

With ``key_ttl`` a save sets the expiry and a load renews it (``GETEX``), a sliding TTL as in
AgentScope. A ``SET`` replaces the value atomically, so a crash mid-save leaves the old state or
the new one.

redis-py's asyncio client only runs on asyncio. This class drives redis-py's synchronous client
from worker threads (``anyio.to_thread``), which works under asyncio and trio alike; the
client's connection pool is thread-safe and keeps connections between calls.
"""

from __future__ import annotations

from typing import Any

from .._cleanup import close_in_thread
from .._provider import call_redis, open_sync_redis
from ..exception import SessionError
from ..module import StateModule
from ._session_base import (
    SessionBase,
    check_session_ids,
    encode_session_state,
    escape_id,
    load_stored_state,
    logger,
    unescape_id,
    valid_ids,
)

__all__ = ["RedisSession"]

_SPECIAL = "%:"
"""Written ``%XX`` inside an id in a key: the escape itself and the separator."""
_SEPARATOR = ":session:"


def _only_this_pairs_agentscope_key(session_id: str, user_id: str) -> bool:
    """Whether AgentScope's key for the pair can be split into ids one way only (at the
    ``:session:`` between them) and is no pair's own key here."""
    middle = f"{user_id}{_SEPARATOR}{session_id}"
    splits = sum(middle.startswith(_SEPARATOR, i) for i in range(len(middle)))
    if splits != 1:
        return False
    # Its only reading is (user_id, session_id); it is the key of the pair those unescape to,
    # if they do.
    user, session = unescape_id(user_id, _SPECIAL), unescape_id(session_id, _SPECIAL)
    return user is None or session is None or not valid_ids(session, user)


class RedisSession(SessionBase):
    """Sessions stored in Redis (or Valkey), AgentScope's keys and TTL.

    :param host: the server's host.
    :param port: the server's port.
    :param db: the database index.
    :param password: the server's password, if any (never shown in reprs or errors).
    :param connection_pool: a ``redis.ConnectionPool`` to use instead of host/port/db/password
        (redis-py's synchronous pool; an asyncio pool cannot serve both event loops).
    :param key_ttl: seconds each session key lives after its last save or load; ``None``
        keeps keys forever.
    :param key_prefix: prepended to every key as is (e.g. ``"prod:"``).
    :param kwargs: passed on to ``redis.Redis``.
    :param pause_gc: hold off Python's cyclic garbage collector while a state is encoded or
        decoded (off by default). It makes saving and loading a large session several times
        faster (the collector would walk the many containers being built, freeing nothing),
        but the switch is process-wide: meanwhile no thread of the program collects cycles.
    :raises ImportError: when the ``redis`` package is missing (install the ``redis`` extra).
    :raises TypeError: for an asyncio connection pool.
    """

    SESSION_KEY = "user_id:{user_id}:session:{session_id}:state"

    def __init__(
        self,
        host: str = "localhost",
        port: int = 6379,
        db: int = 0,
        password: str | None = None,
        connection_pool: Any = None,
        key_ttl: int | None = None,
        key_prefix: str = "",
        *,
        pause_gc: bool = False,
        **kwargs: Any,
    ) -> None:
        self._client, self._where = open_sync_redis(
            "RedisSession", host, port, db, password, connection_pool, key_ttl, kwargs
        )
        self.key_ttl = key_ttl
        self.key_prefix = key_prefix or ""
        self.pause_gc = pause_gc
        self._password: str | None = self._client.connection_pool.connection_kwargs.get("password")

    def __repr__(self) -> str:
        return f"RedisSession({self._where!r}, key_prefix={self.key_prefix!r})"

    def get_client(self) -> Any:
        """The underlying synchronous ``redis.Redis`` client."""
        return self._client

    def get_session_key(self, session_id: str, user_id: str) -> str:
        """The Redis key of a session: AgentScope's layout, ``%`` and ``:`` escaped in the
        ids (ids without them have AgentScope's key)."""
        return self._key(escape_id(session_id, _SPECIAL), escape_id(user_id, _SPECIAL))

    def _key(self, session_part: str, user_part: str) -> str:
        return self.key_prefix + self.SESSION_KEY.format(user_id=user_part, session_id=session_part)

    async def save_session_state(
        self,
        session_id: str,
        user_id: str = "default_user",
        **state_modules_mapping: StateModule,
    ) -> None:
        """Save the modules' states under the session's key (``SET``, with ``EX`` if a TTL).

        :raises SessionError: for an invalid id or when Redis fails.
        :raises StateError: when a module's state cannot be saved.
        """
        check_session_ids(session_id, user_id)
        key = self.get_session_key(session_id, user_id)
        data = encode_session_state(state_modules_mapping, pause_gc=self.pause_gc)
        await self._run(f"save session key {key}", self._client.set, key, data, self.key_ttl)
        logger.info("Saved session state to redis key %s.", key)

    async def load_session_state(
        self,
        session_id: str,
        user_id: str = "default_user",
        allow_not_exist: bool = True,
        **state_modules_mapping: StateModule,
    ) -> None:
        """Load the session's key into the modules named in it (all or nothing).

        With a TTL the key's expiry is renewed (``GETEX``). Without a key of its own, the
        pair's AgentScope key is read when it can only be this pair's.

        :raises SessionError: when the key is missing and *allow_not_exist* is false, or its
            value is corrupted, nested too deeply or does not fit the modules; the modules
            are unchanged then.
        """
        check_session_ids(session_id, user_id)
        key = self.get_session_key(session_id, user_id)
        data = await self._get(key)
        agentscope_key = self._key(session_id, user_id)
        if (
            data is None
            and agentscope_key != key
            and _only_this_pairs_agentscope_key(session_id, user_id)
        ):
            data = await self._get(agentscope_key)
            key = agentscope_key if data is not None else key
        if data is None:
            if allow_not_exist:
                logger.info("Session key %s does not exist; nothing loaded.", key)
                return
            raise SessionError(
                f"Failed to load session state because redis key {key} does not exist. "
                "Save the session first, or pass allow_not_exist=True."
            )
        where = f"session {session_id!r} of user {user_id!r} (redis key {key})"
        load_stored_state(data, state_modules_mapping, where, pause_gc=self.pause_gc)

    async def _get(self, key: str) -> Any:
        if self.key_ttl is not None:
            return await self._run(f"load session key {key}", self._getex, key)
        return await self._run(f"load session key {key}", self._client.get, key)

    def _getex(self, key: str) -> Any:
        return self._client.getex(key, ex=self.key_ttl)

    async def _run(self, what: str, fn: Any, *args: Any) -> Any:
        return await call_redis(self._where, self._password, what, fn, *args)

    async def aclose(self) -> None:
        """Close the client's connections."""
        await close_in_thread(self._client.close)
