"""The reply's memory operations, without a coroutine where the memory allows it.

A :attr:`~agentscope_rt.memory.MemoryBase.synchronous` memory (the in-memory one) is called
through its plain functions. Each function below makes that choice for one operation and returns
what is left to await (``None`` when the work is done): a coroutine of its own would cost a frame
per call on the reply's path (5% of a reply, measured with bench/bench_react.py's workload).
"""

from __future__ import annotations

from collections.abc import Awaitable

from ..memory import MemoryBase
from ..message import Msg

__all__ = ["adding", "deleting_mark"]


def adding(memory: MemoryBase, msg: Msg | list[Msg] | None) -> Awaitable[None] | None:
    """Add *msg* (copied and checked, as :meth:`MemoryBase.add` does)."""
    if memory.synchronous:
        memory.add_sync(msg)
        return None
    return memory.add(msg)


def deleting_mark(memory: MemoryBase, mark: str) -> Awaitable[int] | None:
    """Remove the messages carrying *mark*."""
    if memory.synchronous:
        memory.delete_by_mark_sync(mark)
        return None
    return memory.delete_by_mark(mark)
