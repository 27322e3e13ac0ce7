"""Ray from any event loop: Ray's object references are awaitable on asyncio only, so they
are waited for with ``ray.get`` in worker threads that give up when their task is cancelled."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread

__all__ = ["import_ray", "wait_ref"]

# How long a worker thread blocks in ray.get before it looks whether its task was cancelled.
_POLL_S = 0.25


def import_ray() -> Any:
    """The ``ray`` module.

    :raises ImportError: saying which extra to install when Ray is missing.
    """
    try:
        import ray
    except ImportError as exc:
        from .._extras import missing_extra

        raise missing_extra("agentscope_rt.distributed", "ray", exc.name) from exc
    return ray


def _get(ray: Any, ref: Any) -> Any:
    while True:
        try:
            return ray.get(ref, timeout=_POLL_S)
        except ray.exceptions.GetTimeoutError:
            anyio.from_thread.check_cancelled()


async def wait_ref(ray: Any, ref: Any) -> Any:
    """The value of *ref* (its task's exception is raised), waited for in a worker thread;
    cancellable (the thread stops waiting within a quarter second; the Ray task itself is
    not cancelled: that is the caller's decision)."""
    return await anyio.to_thread.run_sync(_get, ray, ref)
