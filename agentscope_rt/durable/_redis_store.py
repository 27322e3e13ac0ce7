"""RedisRunStore: durable runs in Redis (or Valkey), for runs shared by several machines.

Keys, under ``key_prefix`` (ids with ``%`` or ``:`` written ``%25`` and ``%3A``, so one
user's ids never name another user's keys)::

    durable:{user_id}:{run_id}:steps   hash  step key -> the record as JSON (with its seq)
    durable:{user_id}:{run_id}:info    hash  status, created_at, updated_at, steps, last_step,
                                             owner (the token of the run's last owner)
    durable:{user_id}:{run_id}:lease   string, the owner's token, expiring
    durable:{user_id}:runs             set of the user's run ids
    durable:users                      set of the user ids that have runs

Every write is one Lua script, so it is atomic: :meth:`RedisRunStore.put_step` (and
:meth:`~RedisRunStore.put_steps`, a batch) writes the record(s) and the run's info together,
or nothing. A record is as durable as the server keeps
its data: it survives the death of the program as soon as ``put_step`` returns, and the
death of the server with ``appendonly yes`` (``appendfsync always`` for every record). One
server, not Redis Cluster (a run's keys and the indexes are written together).

Ownership is a *lease*: :meth:`~RedisRunStore.acquire` sets the lease key to a random token
with ``SET NX PX`` (refused while another token's lease is live) and records the token as the
run's owner; every recorded step renews it. There is no background renewal (no task or
thread outlives a call), so:

* a run whose program was killed can be acquired again once its lease expires, at most
  ``lease_seconds`` (default 30) after its last recorded step; until then it is refused, and
  the error says so;
* a program that goes longer than ``lease_seconds`` without recording a step (a slow model
  call or tool) lets its lease lapse. If no one acquired the run meanwhile, its next step
  takes the lease back; if another process did, its writes are refused (the run's owner is
  no longer its token) with :class:`DurableRunError`, so the two never interleave records.
  Choose ``lease_seconds`` above the longest step of the program: during the overlap both
  programs could run live steps.

redis-py's synchronous client is driven from worker threads (``anyio.to_thread``), which works
under asyncio and trio alike; socket timeouts bound every call.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .._cleanup import close_in_thread
from .._extras import require_extra
from .._provider import call_redis, open_sync_redis
from .._urls import redact_url
from ..exception import DurableRunError
from ._store import RunInfo, RunStatus, StepRecord, check_owned, check_run_ids, encode_json, now

__all__ = ["RedisRunStore"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_SPECIAL = "%:"

_ACQUIRE = """
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('PTTL', KEYS[1])
end
redis.call('HSETNX', KEYS[2], 'created_at', ARGV[3])
redis.call('HSETNX', KEYS[2], 'steps', 0)
redis.call('HSET', KEYS[2], 'status', 'running', 'updated_at', ARGV[3], 'owner', ARGV[1])
redis.call('SADD', KEYS[3], ARGV[4])
redis.call('SADD', KEYS[4], ARGV[5])
return redis.call('HGETALL', KEYS[2])
"""
"""KEYS: lease, info, the user's runs, users. ARGV: token, lease ms, now, run id, user id.
Returns the run's info (a list), or the lease's remaining milliseconds when refused."""

_PUT = """
if redis.call('HGET', KEYS[3], 'owner') ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
for i = 4, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
end
redis.call('HSET', KEYS[3], 'updated_at', ARGV[3], 'last_step', ARGV[#ARGV - 1],
           'steps', redis.call('HLEN', KEYS[2]))
return 1
"""
"""KEYS: lease, steps, info. ARGV: token, lease ms, the last record's time, then each record's
step key and JSON. 0: another process owns the run now (nothing written)."""

_RELEASE = """
if redis.call('HGET', KEYS[2], 'owner') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[2], 'status', ARGV[2], 'updated_at', ARGV[3])
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
end
return 1
"""
"""KEYS: lease, info. ARGV: token, status, now. 0: another process owns the run now."""

_DELETE = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  return -1
end
local deleted = redis.call('DEL', KEYS[2], KEYS[3])
redis.call('SREM', KEYS[4], ARGV[1])
if redis.call('SCARD', KEYS[4]) == 0 then
  redis.call('SREM', KEYS[5], ARGV[2])
end
return deleted
"""
"""KEYS: lease, steps, info, the user's runs, users. ARGV: run id, user id. -1: owned."""


def _record_json(record: StepRecord, at: str) -> str:
    """*record* as stored (its payload checked to be JSON data).

    :raises DurableRunError: naming the step, when the payload is not JSON data.
    """
    return encode_json(
        record,
        {
            "seq": record.seq,
            "kind": record.kind,
            "status": record.status,
            "fingerprint": record.fingerprint,
            "payload": record.payload,
            "at": at,
        },
    )


def _escape(value: str) -> str:
    return "".join(f"%{ord(ch):02X}" if ch in _SPECIAL else ch for ch in value)


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _info(user_id: str, run_id: str, fields: dict[str, str]) -> RunInfo | None:
    if "created_at" not in fields:
        return None
    return RunInfo(
        user_id=user_id,
        run_id=run_id,
        status=fields.get("status", "running"),
        created_at=fields["created_at"],
        updated_at=fields.get("updated_at", fields["created_at"]),
        steps=int(fields.get("steps", 0)),
        last_step=fields.get("last_step"),
    )


def _decoded(mapping: dict[Any, Any]) -> dict[str, str]:
    return {_text(key): _text(value) for key, value in mapping.items()}


class RedisRunStore:
    """Durable runs stored in Redis (redis-py's synchronous client).

    :param url: the server as a URL (``"redis://:password@host:6379/0"``, ``rediss://`` for
        TLS); without it, *host*, *port*, *db*, *password* or *connection_pool*. The password
        is never shown in reprs or errors.
    :param host: the server's host.
    :param port: the server's port.
    :param db: the database index.
    :param password: the server's password, if any.
    :param connection_pool: a synchronous ``redis.ConnectionPool`` to use instead.
    :param key_prefix: prepended to every key as is (e.g. ``"prod:"``).
    :param lease_seconds: how long the ownership of a run lasts after the last step it
        recorded: a killed run can be resumed that long after its last step at most; a
        program must record a step at least that often (see the module's documentation).
    :param socket_timeout: seconds a command may wait for the server's answer.
    :param socket_connect_timeout: seconds a connection attempt may take.
    :param kwargs: passed on to ``redis.Redis``.
    :raises ImportError: when redis-py is missing (install the ``redis`` extra).
    :raises ValueError: for a lease that is not a positive number of seconds.
    :raises TypeError: for an asyncio connection pool.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        host: str = "localhost",
        port: int = 6379,
        db: int = 0,
        password: str | None = None,
        connection_pool: Any = None,
        key_prefix: str = "",
        lease_seconds: float = 30.0,
        socket_timeout: float = 30.0,
        socket_connect_timeout: float = 10.0,
        **kwargs: Any,
    ) -> None:
        if (
            isinstance(lease_seconds, bool)
            or not isinstance(lease_seconds, int | float)
            or not lease_seconds > 0
        ):
            raise ValueError(f"lease_seconds must be a positive number, not {lease_seconds!r}")
        if connection_pool is None:
            kwargs.setdefault("socket_timeout", socket_timeout)
            kwargs.setdefault("socket_connect_timeout", socket_connect_timeout)
        if url is not None:
            redis = require_extra("redis", extra="redis", user="RedisRunStore")
            self._client = redis.Redis.from_url(url, **kwargs)
            where = redact_url(url)
        else:
            self._client, where = open_sync_redis(
                "RedisRunStore", host, port, db, password, connection_pool, None, kwargs
            )
        self._where = where
        self._password: str | None = self._client.connection_pool.connection_kwargs.get("password")
        self.key_prefix = key_prefix or ""
        self.lease_seconds = lease_seconds
        self._lease_ms = max(1, math.ceil(lease_seconds * 1000))
        self._scripts = {
            name: self._client.register_script(source)
            for name, source in (
                ("acquire", _ACQUIRE),
                ("put", _PUT),
                ("release", _RELEASE),
                ("delete", _DELETE),
            )
        }
        self._owned: dict[tuple[str, str], str | None] = {}  # -> the lease's token

    def __repr__(self) -> str:
        return f"RedisRunStore({self._where!r}, key_prefix={self.key_prefix!r})"

    def get_client(self) -> Any:
        """The underlying synchronous ``redis.Redis`` client."""
        return self._client

    # -- keys --------------------------------------------------------------------------

    def _run_key(self, user_id: str, run_id: str, part: str) -> str:
        return f"{self.key_prefix}durable:{_escape(user_id)}:{_escape(run_id)}:{part}"

    def _user_runs_key(self, user_id: str) -> str:
        return f"{self.key_prefix}durable:{_escape(user_id)}:runs"

    def _users_key(self) -> str:
        return f"{self.key_prefix}durable:users"

    async def _call(self, what: str, fn: Callable[..., T], *args: Any) -> T:
        return await call_redis(
            f"RedisRunStore {self._where}", self._password, what, fn, *args, error=DurableRunError
        )

    def _script(self, name: str, keys: list[str], args: list[Any]) -> Any:
        return self._scripts[name](keys=keys, args=args)

    # -- ownership ---------------------------------------------------------------------

    async def acquire(self, user_id: str, run_id: str) -> RunInfo:
        """Take the run's lease (creating the run if new) and mark it ``running``.

        :raises DurableRunError: while another process's lease on the run is live (also that
            of a process that died less than ``lease_seconds`` after its last step), when
            this process has the run open, or when Redis fails.
        """
        check_run_ids(run_id, user_id)
        pair = (user_id, run_id)
        if pair in self._owned:
            raise DurableRunError(
                f"run {run_id!r} of user {user_id!r} is already open in this process; "
                "a run has one program at a time"
            )
        self._owned[pair] = None  # taken while it opens: a second acquire here is refused
        token = secrets.token_hex(16)
        keys = [
            self._run_key(user_id, run_id, "lease"),
            self._run_key(user_id, run_id, "info"),
            self._user_runs_key(user_id),
            self._users_key(),
        ]
        args = [token, self._lease_ms, now(), run_id, user_id]
        try:
            answer = await self._call(
                f"open run {run_id!r} of user {user_id!r}", self._script, "acquire", keys, args
            )
        except BaseException:
            del self._owned[pair]
            raise
        if not isinstance(answer, list):
            del self._owned[pair]
            seconds = max(int(answer), 0) / 1000
            raise DurableRunError(
                f"run {run_id!r} of user {user_id!r} is open in another process or store; a run "
                f"has one program at a time. If that process died, the run can be resumed once its "
                f"lease expires, in {seconds:.1f} s at most"
            )
        self._owned[pair] = token
        fields = _decoded(dict(zip(answer[::2], answer[1::2], strict=True)))
        info = _info(user_id, run_id, fields)
        assert info is not None
        return info

    async def release(self, user_id: str, run_id: str, status: RunStatus) -> None:
        """Record how the run ended and give its lease up.

        When another process took the run over (this one went longer than the lease
        without recording a step), the run is left as that process has it (a warning is
        logged).

        :raises DurableRunError: when Redis fails (the lease then expires on its own).
        """
        token = self._owned.pop((user_id, run_id), None)
        if token is None:
            return
        keys = [self._run_key(user_id, run_id, "lease"), self._run_key(user_id, run_id, "info")]
        done = await self._call(
            f"close run {run_id!r} of user {user_id!r}",
            self._script,
            "release",
            keys,
            [token, status, now()],
        )
        if not done:
            logger.warning(
                "Run %r of user %r was taken over by another process after this one's lease "
                "expired; its status is left to that process.",
                run_id,
                user_id,
            )

    # -- records -----------------------------------------------------------------------

    async def put_step(self, user_id: str, run_id: str, record: StepRecord) -> None:
        """Write *record* and the run's info atomically, renewing the lease.

        :raises DurableRunError: when the run is not open with this store, another process
            took it over (this one let its lease expire), the payload is not JSON data, or
            Redis fails; nothing is written then.
        """
        await self.put_steps(user_id, run_id, [record])

    async def put_steps(self, user_id: str, run_id: str, records: Sequence[StepRecord]) -> None:
        """Write *records* as :meth:`put_step` writes each, in one script: all of them or
        none (what a batch of records relayed from an agent host needs).

        :raises DurableRunError: as :meth:`put_step`; nothing is written then.
        """
        token = self._owned.get((user_id, run_id))
        check_owned(token is not None, user_id, run_id)
        if not records:
            return
        pairs: list[str] = []
        at = ""
        for record in records:
            at = record.at or now()
            pairs += [record.key, _record_json(record, at)]
        keys = [
            self._run_key(user_id, run_id, "lease"),
            self._run_key(user_id, run_id, "steps"),
            self._run_key(user_id, run_id, "info"),
        ]
        last = records[-1].key
        written = await self._call(
            f"record step {last!r} of run {run_id!r} of user {user_id!r}",
            self._script,
            "put",
            keys,
            [token, self._lease_ms, at, *pairs],
        )
        if not written:
            raise DurableRunError(
                f"run {run_id!r} of user {user_id!r} was taken over by another process after "
                f"this one went more than {self.lease_seconds} s (its lease) without recording "
                f"a step; step {last!r} was not recorded. Give the store a longer "
                "lease_seconds than the program's longest step"
            )

    async def load_steps(self, user_id: str, run_id: str) -> list[StepRecord]:
        """Every record of the run in ``seq`` order (empty for an unknown run).

        :raises DurableRunError: when Redis fails or a record is corrupted.
        """
        check_run_ids(run_id, user_id)
        raw = await self._call(
            f"load run {run_id!r} of user {user_id!r}",
            self._client.hgetall,
            self._run_key(user_id, run_id, "steps"),
        )
        records = []
        for key, value in _decoded(raw).items():
            try:
                data = json.loads(value)
                records.append(
                    StepRecord(
                        key,
                        data["kind"],
                        data["status"],
                        data["fingerprint"],
                        data["payload"],
                        data["seq"],
                        data["at"],
                    )
                )
            except (ValueError, TypeError, KeyError) as exc:
                raise DurableRunError(
                    f"run {run_id!r} of user {user_id!r} in {self!r}: the record of step "
                    f"{key!r} is corrupted ({exc!r})"
                ) from None
        records.sort(key=lambda record: record.seq)
        return records

    # -- listing -----------------------------------------------------------------------

    async def get_run(self, user_id: str, run_id: str) -> RunInfo | None:
        """The run, or ``None``.

        :raises DurableRunError: when Redis fails.
        """
        check_run_ids(run_id, user_id)
        raw = await self._call(
            f"read run {run_id!r} of user {user_id!r}",
            self._client.hgetall,
            self._run_key(user_id, run_id, "info"),
        )
        return _info(user_id, run_id, _decoded(raw))

    async def list_runs(self, user_id: str | None = None) -> list[RunInfo]:
        """The runs of *user_id* (of everyone for ``None``), most recently updated first.

        :raises DurableRunError: when Redis fails.
        """
        runs: list[RunInfo] = await self._call("list runs", self._list, user_id)
        runs.sort(key=lambda info: info.updated_at, reverse=True)
        return runs

    def _list(self, user_id: str | None) -> list[RunInfo]:
        users = (
            [user_id]
            if user_id is not None
            else sorted(_text(user) for user in self._client.smembers(self._users_key()))
        )
        pairs = [
            (user, _text(run))
            for user in users
            for run in self._client.smembers(self._user_runs_key(user))
        ]
        pipeline = self._client.pipeline(transaction=False)
        for user, run in pairs:
            pipeline.hgetall(self._run_key(user, run, "info"))
        infos = [
            _info(user, run, _decoded(raw))
            for (user, run), raw in zip(pairs, pipeline.execute(), strict=True)
        ]
        return [info for info in infos if info is not None]

    async def delete_run(self, user_id: str, run_id: str) -> bool:
        """Delete the run and its records; whether there was one.

        :raises DurableRunError: while a process owns the run (its lease is live), or when
            Redis fails.
        """
        check_run_ids(run_id, user_id)
        if (user_id, run_id) in self._owned:
            raise DurableRunError(f"run {run_id!r} of user {user_id!r} is open; close it first")
        keys = [
            self._run_key(user_id, run_id, "lease"),
            self._run_key(user_id, run_id, "steps"),
            self._run_key(user_id, run_id, "info"),
            self._user_runs_key(user_id),
            self._users_key(),
        ]
        deleted = await self._call(
            f"delete run {run_id!r} of user {user_id!r}",
            self._script,
            "delete",
            keys,
            [run_id, user_id],
        )
        if deleted == -1:
            raise DurableRunError(
                f"run {run_id!r} of user {user_id!r} is open in another process (or its "
                f"process died less than {self.lease_seconds} s ago, and its lease has not "
                "expired yet); it cannot be deleted meanwhile"
            )
        return bool(deleted)

    async def aclose(self) -> None:
        """Close the client's connections (open runs keep their leases)."""
        await close_in_thread(self._client.close)
