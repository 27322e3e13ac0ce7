"""What a proxy needs to carry a durable run across processes and over the death of its
agent host: what the host must know to take a call inside the run, and rebuilding things
once when several tasks find them gone at the same time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import attrs

from ..durable import DurableRun, current_step_key

__all__ = ["OneAtATime", "run_link"]


def run_link(run: DurableRun) -> dict[str, Any]:
    """What a host needs to take the call the calling task is in inside *run*: the run's
    ids, the call's key and its records so far (JSON data). The host writes nothing itself:
    it relays its records to this process, which writes them (a store writes only to the
    runs it owns, and the host needs no access to it)."""
    key = current_step_key() or ""
    return {
        "run_id": run.run_id,
        "user_id": run.user_id,
        "key": key,
        "records": [attrs.asdict(record) for record in run.records_under(key)] if key else [],
    }


class OneAtATime:
    """Runs a repair once while several tasks find it needed: the others wait for it, then
    see whether it is still needed."""

    def __init__(self) -> None:
        self._busy: anyio.Event | None = None

    async def run(self, needed: Callable[[], bool], repair: Callable[[], Awaitable[None]]) -> None:
        while self._busy is not None:
            await self._busy.wait()
        if not needed():
            return
        busy = self._busy = anyio.Event()
        try:
            await repair()
        finally:
            self._busy = None
            busy.set()
