"""Running jobs side by side, failing as ``fanout_pipeline`` fails."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from typing import Any

import anyio

__all__ = ["run_all"]


async def run_all(jobs: Iterable[Callable[[], Coroutine[Any, Any, None]]]) -> None:
    """Run *jobs* side by side in one task group; one failure cancels the others and is
    raised as itself (an ``ExceptionGroup`` only when several failed at once), as
    ``fanout_pipeline`` raises."""
    try:
        async with anyio.create_task_group() as task_group:
            for job in jobs:
                task_group.start_soon(job)
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1 and isinstance(group.exceptions[0], Exception):
            raise group.exceptions[0] from None
        raise
