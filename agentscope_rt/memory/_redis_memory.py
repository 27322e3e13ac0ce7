"""RedisMemory: an agent's working memory in Redis (or Valkey), AgentScope's key layout.

Keys, each prefixed by ``key_prefix`` as is (AgentScope 1.0's layout, so either library reads
what the other wrote), for user ``u`` and session ``s``:

* ``user_id:{u}:session:{s}:messages`` - a list of the message ids, oldest first;
* ``user_id:{u}:session:{s}:msg:{id}`` - a string, the message's JSON dict (:meth:`Msg.to_dict`);
* ``user_id:{u}:session:{s}:mark:{mark}`` - a list of the ids carrying the mark;
* ``user_id:{u}:session:{s}:marks_index`` - a set of the marks in use.

A user or session id holding ``:`` would make that layout ambiguous (user ``a:session:b`` of
session ``c`` and user ``a`` of session ``b:session:c`` would share every key), so such a pair
is written ``user_id%:{u}:session:{s}:...`` with ``%`` and ``:`` percent-encoded in both ids
(:func:`session_key_base`). Ids without ``:`` - all AgentScope could tell apart - keep its keys.

A message is stored as UTF-8 JSON; one holding a lone surrogate (which has no UTF-8 form) is
stored with JSON's ``\\uXXXX`` escapes instead, and reads back unchanged. Ids and marks holding
one are sent as their ``surrogatepass`` bytes, so they work as any other.

A Redis failure (server down, connection refused, timeout, error reply) raises
:class:`~agentscope_rt.exception.SessionError` naming the operation, the session and the
server (never the password), as :class:`~agentscope_rt.session.RedisSession` does.

Every operation is one Lua script, which Redis runs atomically: a reader never sees an id in the
list without its message, and a crash (of the client, or of the server with AOF, which records
a script's effects as one transaction) cannot leave half an update behind. With ``key_ttl`` each
operation renews the expiry of all the session's keys (a sliding TTL, as in AgentScope; it costs
time proportional to the session's size).

redis-py's asyncio client only runs on asyncio. This class drives redis-py's synchronous client
from worker threads (``anyio.to_thread``), which works under asyncio and trio alike; the
client's connection pool is thread-safe and keeps connections between calls.

Where it differs from AgentScope 1.0.21, on purpose: ``get_memory(mark=...)`` returns messages
in the order they were added (AgentScope: the order they were marked); marks follow
:class:`InMemoryMemory` exactly; ``add`` stores all of a call or nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from .._cleanup import close_in_thread
from .._provider import call_redis, open_sync_redis
from ..message import Msg
from ._memory_base import MemoryBase, _allow_duplicates, _batch, _check_mark_args, _check_marks

__all__ = ["RedisMemory", "call_redis", "open_sync_redis", "session_key_base"]

T = TypeVar("T")

_PRELUDE = """
local base = ARGV[1]
local ttl = tonumber(ARGV[2])
local list_key = base .. 'messages'
local index_key = base .. 'marks_index'
local function mark_key(m) return base .. 'mark:' .. m end
local function msg_key(id) return base .. 'msg:' .. id end
local function set_of(key)
  local t = {}
  for _, v in ipairs(redis.call('LRANGE', key, 0, -1)) do t[v] = true end
  return t
end
local function refresh()
  if ttl <= 0 then return end
  redis.call('EXPIRE', list_key, ttl)
  redis.call('EXPIRE', index_key, ttl)
  for _, m in ipairs(redis.call('SMEMBERS', index_key)) do
    redis.call('EXPIRE', mark_key(m), ttl)
  end
  for _, id in ipairs(redis.call('LRANGE', list_key, 0, -1)) do
    redis.call('EXPIRE', msg_key(id), ttl)
  end
end
local function forget_empty_marks(marks)
  for _, m in ipairs(marks) do
    if redis.call('EXISTS', mark_key(m)) == 0 then redis.call('SREM', index_key, m) end
  end
end
local function remove_ids(ids)
  local marks = redis.call('SMEMBERS', index_key)
  local n = 0
  for _, id in ipairs(ids) do
    if redis.call('LREM', list_key, 0, id) > 0 then n = n + 1 end
    redis.call('DEL', msg_key(id))
    for _, m in ipairs(marks) do redis.call('LREM', mark_key(m), 0, id) end
  end
  forget_empty_marks(marks)
  return n
end
"""

# ARGV: base, ttl, fail_on_stored, n_marks, marks..., then id, json pairs.
# Returns the number stored, or {'stored', id} (nothing written) when fail_on_stored.
_ADD = """
local fail = ARGV[3] == '1'
local nm = tonumber(ARGV[4])
local first = 5 + nm
local fresh = {}
for i = first, #ARGV, 2 do
  if redis.call('EXISTS', msg_key(ARGV[i])) == 1 then
    if fail then return {'stored', ARGV[i]} end
  else
    fresh[#fresh + 1] = i
  end
end
for _, i in ipairs(fresh) do
  local id = ARGV[i]
  redis.call('RPUSH', list_key, id)
  redis.call('SET', msg_key(id), ARGV[i + 1])
  for j = 5, 4 + nm do
    redis.call('RPUSH', mark_key(ARGV[j]), id)
    redis.call('SADD', index_key, ARGV[j])
  end
end
refresh()
return #fresh
"""

# ARGV: base, ttl, has_mark, mark, has_exclude, exclude. Returns the JSON strings, in order.
_GET = """
local ids = redis.call('LRANGE', list_key, 0, -1)
local function keep(filter, wanted)
  local out = {}
  for _, id in ipairs(ids) do
    if (filter[id] ~= nil) == wanted then out[#out + 1] = id end
  end
  ids = out
end
if ARGV[3] == '1' then keep(set_of(mark_key(ARGV[4])), true) end
if ARGV[5] == '1' then keep(set_of(mark_key(ARGV[6])), false) end
local out = {}
for start = 1, #ids, 500 do
  local keys = {}
  for j = start, math.min(start + 499, #ids) do keys[#keys + 1] = msg_key(ids[j]) end
  for _, v in ipairs(redis.call('MGET', unpack(keys))) do
    if v then out[#out + 1] = v end
  end
end
refresh()
return out
"""

# ARGV: base, ttl, ids...
_DELETE = """
local ids = {}
for i = 3, #ARGV do ids[#ids + 1] = ARGV[i] end
local n = remove_ids(ids)
refresh()
return n
"""

# ARGV: base, ttl, marks...
_DELETE_BY_MARK = """
local ids, seen = {}, {}
for i = 3, #ARGV do
  for _, id in ipairs(redis.call('LRANGE', mark_key(ARGV[i]), 0, -1)) do
    if not seen[id] then seen[id] = true; ids[#ids + 1] = id end
  end
end
local n = remove_ids(ids)
refresh()
return n
"""

# ARGV: base, ttl
_CLEAR = """
for _, id in ipairs(redis.call('LRANGE', list_key, 0, -1)) do redis.call('DEL', msg_key(id)) end
for _, m in ipairs(redis.call('SMEMBERS', index_key)) do redis.call('DEL', mark_key(m)) end
redis.call('DEL', list_key, index_key)
return 0
"""

# ARGV: base, ttl, has_new, new, has_old, old, has_ids, ids...
_UPDATE_MARK = """
local has_new, new = ARGV[3] == '1', ARGV[4]
local has_old, old = ARGV[5] == '1', ARGV[6]
local wanted = nil
if ARGV[7] == '1' then
  wanted = {}
  for i = 8, #ARGV do wanted[ARGV[i]] = true end
end
local old_set = has_old and set_of(mark_key(old)) or {}
local new_set = has_new and set_of(mark_key(new)) or {}
local n = 0
for _, id in ipairs(redis.call('LRANGE', list_key, 0, -1)) do
  if (wanted == nil or wanted[id]) and (not has_old or old_set[id]) then
    if not has_new then
      redis.call('LREM', mark_key(old), 0, id)
      n = n + 1
    elseif has_old and old == new then
      n = n + 1
    else
      if has_old then redis.call('LREM', mark_key(old), 0, id) end
      if not new_set[id] then
        redis.call('RPUSH', mark_key(new), id)
        new_set[id] = true
        n = n + 1
      end
    end
  end
end
if has_new and redis.call('EXISTS', mark_key(new)) == 1 then redis.call('SADD', index_key, new) end
if has_old then forget_empty_marks({old}) end
refresh()
return n
"""

# ARGV: base, ttl
_SIZE = """
local n = redis.call('LLEN', list_key)
refresh()
return n
"""

# What each operation does, for error messages ("cannot {verb} session ...").
_VERBS = {
    "add": "add messages to",
    "get": "read the messages of",
    "delete": "delete messages of",
    "delete_by_mark": "delete messages of",
    "clear": "clear",
    "update_mark": "update the marks of",
    "size": "count the messages of",
}

_SCRIPTS = {
    "add": _ADD,
    "get": _GET,
    "delete": _DELETE,
    "delete_by_mark": _DELETE_BY_MARK,
    "clear": _CLEAR,
    "update_mark": _UPDATE_MARK,
    "size": _SIZE,
}


def _text(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return value.decode("utf-8", "surrogatepass")
    return str(value)


def _bytes(text: str) -> bytes:
    """*text* as UTF-8, lone surrogates included (as their three-byte forms): redis-py would
    refuse them, and keys and ids need no more than to come out the same every time."""
    return text.encode("utf-8", "surrogatepass")


def _quote(value: str) -> str:
    return value.replace("%", "%25").replace(":", "%3A")


def session_key_base(user_id: str, session_id: str) -> str:
    """The start of every key of a user's session (without the key prefix), ending in ``:``.

    AgentScope's ``user_id:{user_id}:session:{session_id}:`` when neither id holds ``:``;
    otherwise ``user_id%:{user_id}:session:{session_id}:`` with ``%`` and ``:`` percent-encoded
    in both ids. Distinct pairs of ids never share a base, and no base is the start of another
    pair's key: the ids in a base hold no ``:``, and the two layouts differ in their 8th
    character.
    """
    if ":" not in user_id and ":" not in session_id:
        return f"user_id:{user_id}:session:{session_id}:"
    return f"user_id%:{_quote(user_id)}:session:{_quote(session_id)}:"


def _message_json(msg: Msg) -> bytes:
    """The message's JSON as UTF-8 (readable in Redis); with JSON's ASCII escapes when its text
    holds a lone surrogate, which UTF-8 cannot encode (``json.loads`` restores it either way)."""
    data = msg.to_dict()
    try:
        return json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data).encode("ascii")


class RedisMemory(MemoryBase):
    """Messages and marks of one user's session, stored in Redis (AgentScope's keys).

    Works on asyncio and trio (redis-py's synchronous client in worker threads; see the
    module's documentation). Behaves as :class:`InMemoryMemory` in everything but where the
    messages live, except that a message id is stored only once per session, so
    ``allow_duplicates=True`` with a stored id is an error. The compressed summary is part of
    the memory's state (``state_dict``), not of Redis, as in AgentScope.

    :param session_id: the session the messages belong to.
    :param user_id: the user the messages belong to.
    :param host: the server's host.
    :param port: the server's port.
    :param db: the database index.
    :param password: the server's password, if any (never shown in reprs or errors).
    :param connection_pool: a ``redis.ConnectionPool`` to use instead of host/port/db/password
        (redis-py's synchronous pool; an asyncio pool cannot serve both event loops).
    :param key_prefix: prepended to every key as is (e.g. ``"prod:"``).
    :param key_ttl: seconds the session's keys live after the last operation on them; ``None``
        keeps them forever.
    :param kwargs: passed on to ``redis.Redis``.
    :raises ImportError: when the ``redis`` package is missing (install the ``redis`` extra).
    :raises TypeError: for an asyncio connection pool, or ids that are not strings.
    :raises ValueError: for a *key_ttl* that is not a positive number of seconds.
    """

    SESSION_KEY = "user_id:{user_id}:session:{session_id}:messages"
    MARK_KEY = "user_id:{user_id}:session:{session_id}:mark:{mark}"
    MESSAGE_KEY = "user_id:{user_id}:session:{session_id}:msg:{msg_id}"
    MARKS_INDEX_KEY = "user_id:{user_id}:session:{session_id}:marks_index"

    def __init__(
        self,
        session_id: str = "default_session",
        user_id: str = "default_user",
        host: str = "localhost",
        port: int = 6379,
        db: int = 0,
        password: str | None = None,
        connection_pool: Any = None,
        key_prefix: str = "",
        key_ttl: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        for what, value in (("session_id", session_id), ("user_id", user_id)):
            if not isinstance(value, str):
                raise TypeError(f"{what} must be a string, not {type(value).__name__}")
        self._client, self._where = open_sync_redis(
            "RedisMemory", host, port, db, password, connection_pool, key_ttl, kwargs
        )
        self.session_id = session_id
        self.user_id = user_id
        self.key_prefix = key_prefix or ""
        self.key_ttl = key_ttl
        self._base = self.key_prefix + session_key_base(user_id, session_id)
        self._password: str | None = self._client.connection_pool.connection_kwargs.get("password")
        self._scripts = {
            name: self._client.register_script(_PRELUDE + src) for name, src in _SCRIPTS.items()
        }

    def __repr__(self) -> str:
        return (
            f"RedisMemory({self._where!r}, session_id={self.session_id!r}, "
            f"user_id={self.user_id!r}, key_prefix={self.key_prefix!r})"
        )

    def get_client(self) -> Any:
        """The underlying synchronous ``redis.Redis`` client."""
        return self._client

    # -- keys (AgentScope's names) ----------------------------------------------------------

    def _get_session_key(self) -> str:
        return self._base + "messages"

    def _get_message_key(self, msg_id: str) -> str:
        return self._base + "msg:" + msg_id

    def _get_mark_key(self, mark: str) -> str:
        return self._base + "mark:" + mark

    def _get_marks_index_key(self) -> str:
        return self._base + "marks_index"

    # -- running ----------------------------------------------------------------------------

    async def _call(self, name: str, *args: str | bytes) -> Any:
        script = self._scripts[name]
        argv = [_bytes(self._base), str(self.key_ttl or 0).encode()]
        argv += [_bytes(a) if isinstance(a, str) else a for a in args]
        return await self._redis(name, lambda: script(keys=[], args=argv))

    async def _redis(self, operation: str, fn: Callable[..., T], *args: Any) -> T:
        what = f"{_VERBS[operation]} session {self.session_id!r} of user {self.user_id!r}"
        return await call_redis(self._where, self._password, what, fn, *args)

    # -- the memory interface ---------------------------------------------------------------

    async def add(
        self,
        memories: Msg | list[Msg] | None,
        marks: str | list[str] | None = None,
        allow_duplicates: bool = False,
        **kwargs: Any,
    ) -> None:
        """Store *memories* (after the ones already stored), each with *marks*, atomically.

        ``None`` (and ``None`` items) are ignored. A message whose id is already stored in this
        session (or earlier in the same call) is skipped. AgentScope's ``skip_duplicated``
        keyword is accepted as the opposite of *allow_duplicates*.

        :param allow_duplicates: when true, an id already stored is an error instead of being
            skipped (a session stores each id once).
        :raises TypeError: for an item that is not a Msg, or marks that are not strings.
        :raises ValueError: with *allow_duplicates*, for an id already stored (or repeated in
            the call). Nothing is stored then.
        :raises MessageFormatError: for a message a saved memory could not hold
            (:func:`check_storable`); nothing is stored then.
        """
        allow_duplicates = _allow_duplicates(allow_duplicates, kwargs)
        batch = _batch(memories)
        mark_list = list(dict.fromkeys(_check_marks(marks, "marks")))
        if not batch:
            return
        pairs: dict[str, bytes] = {}
        for msg in batch:
            if msg.id in pairs:
                if allow_duplicates:
                    raise ValueError(
                        f"message id {msg.id!r} appears twice in this call; a session stores "
                        "each message id once"
                    )
                continue
            pairs[msg.id] = _message_json(msg)
        argv: list[str | bytes] = ["1" if allow_duplicates else "0", str(len(mark_list))]
        argv += mark_list
        for msg_id, data in pairs.items():
            argv += (msg_id, data)
        result = await self._call("add", *argv)
        if isinstance(result, list):
            raise ValueError(
                f"message id {_text(result[1])!r} is already stored in session "
                f"{self.session_id!r} of user {self.user_id!r}; a session stores each message "
                "id once (pass allow_duplicates=False to skip it). Nothing was stored."
            )

    async def delete(self, msg_ids: list[str], **kwargs: Any) -> int:
        """Remove the messages with these ids (and their marks); return how many were removed
        (ids not stored count nothing)."""
        ids = list(dict.fromkeys(msg_ids))
        if not ids:
            return 0
        return int(await self._call("delete", *ids))

    async def delete_by_mark(self, mark: str | list[str], **kwargs: Any) -> int:
        """Remove every message carrying *mark* (or any of the marks); return how many.

        :raises TypeError: if *mark* is not a string or a list of strings.
        """
        wanted = _check_marks(mark, "mark")
        if not wanted:
            return 0
        return int(await self._call("delete_by_mark", *wanted))

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
        :raises MessageFormatError: when a stored value does not hold a valid message.
        """
        _check_mark_args(mark=mark, exclude_mark=exclude_mark)
        values = await self._call(
            "get",
            "0" if mark is None else "1",
            mark or "",
            "0" if exclude_mark is None else "1",
            exclude_mark or "",
        )
        msgs = [Msg.from_dict(json.loads(v)) for v in values]
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
        """
        _check_mark_args(new_mark=new_mark, old_mark=old_mark)
        if new_mark is None and old_mark is None:
            return 0
        if msg_ids is not None and not msg_ids:
            return 0
        return int(
            await self._call(
                "update_mark",
                "0" if new_mark is None else "1",
                new_mark or "",
                "0" if old_mark is None else "1",
                old_mark or "",
                "0" if msg_ids is None else "1",
                *(msg_ids or ()),
            )
        )

    async def size(self) -> int:
        """The number of stored messages."""
        if self.key_ttl is None:
            key = _bytes(self._get_session_key())
            return int(await self._redis("size", self._client.llen, key))
        return int(await self._call("size"))

    async def clear(self) -> None:
        """Remove every message and mark of this user's session (the compressed summary is
        kept)."""
        await self._call("clear")

    # -- lifecycle --------------------------------------------------------------------------

    async def close(self, close_connection_pool: bool | None = None) -> None:
        """Close the client's connections (the memory reconnects if used again); also when
        the calling task is cancelled, bounded.

        :param close_connection_pool: also disconnect every connection of the pool (as
            AgentScope's argument); by default a pool passed in is left to its owner.
        """

        def close() -> None:
            self._client.close()
            if close_connection_pool:
                self._client.connection_pool.disconnect()

        await close_in_thread(close)

    aclose = close

    async def __aenter__(self) -> RedisMemory:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
