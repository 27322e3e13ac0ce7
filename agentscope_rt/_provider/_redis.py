"""Redis for the packages that keep data there (the Redis memory and session): redis-py's
synchronous client, checked and opened once, called from worker threads so that it serves
asyncio and trio alike, with the password kept out of every error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread

from .._extras import missing_extra
from ..exception import SessionError

__all__ = ["call_redis", "open_sync_redis"]

T = TypeVar("T")


async def call_redis(
    where: str,
    password: str | None,
    what: str,
    fn: Callable[..., T],
    *args: Any,
    error: type[Exception] = SessionError,
) -> T:
    """``fn(*args)`` (a synchronous redis-py call) in a worker thread.

    :param where: the server, as :func:`open_sync_redis` names it.
    :param password: the server's password, removed from any error text.
    :param what: the operation, for the error message (``"cannot {what} on {where}"``).
    :param error: the exception raised for a redis-py error (the durable run stores raise
        :class:`DurableRunError`).
    :raises SessionError: (or *error*) when redis-py raises one of its errors (the server is
        down, refuses the connection, times out or answers with an error). Its text never
        holds the password, and the redis-py error is not chained (its arguments may hold
        anything).
    """
    import redis  # present: open_sync_redis has imported it

    try:
        return await anyio.to_thread.run_sync(fn, *args)
    except redis.RedisError as exc:
        detail = str(exc)
        if password:
            detail = detail.replace(password, "***")
        raise error(f"cannot {what} on {where}: {detail}") from None


def open_sync_redis(
    owner: str,
    host: str,
    port: int,
    db: int,
    password: str | None,
    connection_pool: Any,
    key_ttl: int | None,
    kwargs: dict[str, Any],
) -> tuple[Any, str]:
    """A synchronous ``redis.Redis`` client for *owner* (a class name, for messages) and where
    it points (``redis://host:port/db``, never the password), after checking the arguments
    that RedisMemory and RedisSession share.

    :raises ImportError: when the ``redis`` package is missing (the ``redis`` extra).
    :raises TypeError: for an asyncio connection pool (it would only work on asyncio).
    :raises ValueError: for a *key_ttl* that is not a positive number of seconds.
    """
    try:
        import redis
    except ImportError as exc:
        raise missing_extra(owner, "redis", exc.name) from exc
    if connection_pool is not None and type(connection_pool).__module__.startswith("redis.asyncio"):
        raise TypeError(
            f"{owner} takes redis-py's synchronous ConnectionPool (redis.ConnectionPool); an "
            "asyncio pool only works on asyncio, while this class runs on any event loop"
        )
    if key_ttl is not None and (
        isinstance(key_ttl, bool) or not isinstance(key_ttl, int) or key_ttl <= 0
    ):
        raise ValueError(f"key_ttl must be a positive number of seconds or None, not {key_ttl!r}")
    where = f"redis://{host}:{port}/{db}" if connection_pool is None else "redis pool"
    client = redis.Redis(
        host=host, port=port, db=db, password=password, connection_pool=connection_pool, **kwargs
    )
    return client, where
