"""Where a durable run's step is taken: the frame of the agent call (or observation) the
calling task is in, kept in a context variable so concurrent agents each have their own."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ._store import StepRecord

if TYPE_CHECKING:
    from ._run import DurableRun

__all__ = ["current_run", "current_step_key", "escape", "step"]


def escape(name: str) -> str:
    # Keys are built with "/" and "#": an agent or step name holding them must not make two
    # different steps share a key.
    if not any(ch in name for ch in "%/#"):
        return name
    return name.replace("%", "%25").replace("/", "%2F").replace("#", "%23")


class _Frame:
    """Where a step is taken: the run, and the agent call (or observation) it belongs to."""

    __slots__ = ("agent", "counters", "joined", "key", "pending", "reading", "record", "run")

    def __init__(
        self, run: DurableRun, key: str, agent: Any = None, record: StepRecord | None = None
    ) -> None:
        self.run = run
        self.key = key
        self.agent = agent
        # The record of this call when it completed before: its steps then all replay, and
        # a step it did not take is a divergence, or, when it ended interrupted, where the
        # interrupt landed.
        self.record = record
        self.counters: dict[str, int] = {}
        self.pending: set[str] = run._children.get(key, set()).copy() if record else set()
        # Opened by join_run: the next call (or observation) enters this frame as it is.
        self.joined = False
        # Whether a reasoning step made the mark of the model call that follows (where the
        # agent read its memory; see DurableRun._mark).
        self.reading = False

    def claim(self, agent: Any) -> bool:
        """Whether a call of *agent* is the call this frame was joined for (it then takes
        its steps here, under no key of its own)."""
        if not self.joined:
            return False
        self.joined = False
        self.agent = agent
        return True

    def child(self, label: str) -> str:
        number = self.counters.get(label, 0) + 1
        self.counters[label] = number
        return f"{self.key}/{label}#{number}" if self.key else f"{label}#{number}"

    def tool(self, call_id: str) -> str:
        # Numbered per id: many models (local ones above all) number their tool calls
        # afresh in every answer, so one call of an agent may see "call_0" several times.
        return self.child(f"tool:{escape(call_id)}")

    @property
    def interrupted(self) -> bool:
        return self.record is not None and self.record.status == "interrupted"


_FRAME: ContextVar[_Frame | None] = ContextVar("agentscope_rt.durable.frame", default=None)


def current_run() -> DurableRun | None:
    """The durable run the calling task is inside, or ``None``."""
    frame = _FRAME.get()
    return None if frame is None else frame.run


def current_step_key() -> str | None:
    """The key under which the calling task's steps are recorded in its durable run: the
    agent call (``"Alice#3"``) or observation (``"Bob#1/observe:Alice#1"``) it is inside,
    ``""`` at the top of the program, ``None`` outside a run."""
    frame = _FRAME.get()
    return None if frame is None else frame.key


async def step(name: str, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``func(*args, **kwargs)`` as a recorded step of the current durable run (see
    :meth:`DurableRun.step`); outside a run, just call it (awaiting an awaitable result).

    Library and tool code can use it for anything that must not be repeated or must come
    out the same on resume, whether or not it runs inside a durable run.
    """
    frame = _FRAME.get()
    if frame is None:
        result = func(*args, **kwargs)
        return await result if inspect.isawaitable(result) else result
    return await frame.run.step(name, func, *args, **kwargs)
