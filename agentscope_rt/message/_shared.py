"""Messages held in common by many memories: one snapshot per broadcast, not one copy per
observer.

A memory stores copies of what it is given (as AgentScope's does), so that the giver's later
changes never reach it. A hub delivering one message to 99 observers would then hold 99
copies. Instead it hands every observer one *shared* snapshot (:func:`share`): a copy made
once, before the first observer, which memories keep as it is. What keeps each memory's
messages its own:

* the snapshot is a copy: the publisher's message and the snapshot are independent;
* a memory hands out its own copy of a shared message whenever its messages leave it
  (``InMemoryMemory.get_memory``, ``content``), made then and kept in its place, so changing a
  message read from one agent's memory never reaches another's; only reads that promise not
  to change what they get (``get_memory_sync(..., read_only=True)``, used to build the
  prompt) see the shared snapshot itself;
* hooks get copies, as always.

An ``observe`` method receives the shared snapshot, as AgentScope observers receive one
object for all of them: copy it before changing it (the memory keeps the copy then).
"""

from __future__ import annotations

import weakref

from ._msg import Msg

__all__ = ["is_shared", "share"]

# id -> a weak reference to the snapshot: a plain dict (a C-level lookup per memory add),
# each entry removed by its reference's callback when the snapshot is collected.
_shared: dict[int, weakref.ref[Msg]] = {}


def share(msg: Msg) -> Msg:
    """A snapshot of *msg* (:meth:`Msg.copy`: same id, independent content) that memories
    may hold in common; *msg* itself if it is already one."""
    if is_shared(msg):
        return msg
    snapshot = msg.copy()
    key = id(snapshot)

    def gone(ref: weakref.ref[Msg]) -> None:
        if _shared.get(key) is ref:
            del _shared[key]

    _shared[key] = weakref.ref(snapshot, gone)
    return snapshot


def is_shared(msg: object) -> bool:
    """Whether *msg* is a snapshot made by :func:`share` (held in common: read it only)."""
    ref = _shared.get(id(msg))
    return ref is not None and ref() is msg
