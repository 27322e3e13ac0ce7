"""What a durable run keeps, and the protocol of the stores that keep it.

A run is a list of *step records* under ``(user_id, run_id)``. Each record is one completed
(or started) step of the program: an agent's call, a model call, an embedding call, a tool
call, or a step the program recorded itself (:meth:`DurableRun.step`). A store writes each
record durably (on disk, or acknowledged by its server) before the step's result is used, so
a process killed at any instant leaves every record it relied on.

A store gives one owner at a time a run (:meth:`RunStore.acquire`): a second process that
opens the same run while the first is alive is refused, and the ownership of a process that
died is given up by the operating system or the server (a file lock, a PostgreSQL session
lock, a Redis lease), so the run can be resumed at once.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from typing import Any, Literal, Protocol, runtime_checkable

import attrs

from ..exception import DurableRunError

__all__ = [
    "RunInfo",
    "RunStatus",
    "RunStore",
    "StepKind",
    "StepRecord",
    "StepStatus",
    "check_owned",
    "check_run_ids",
    "encode_json",
    "now",
    "run_digest",
]

StepKind = Literal["call", "chat", "embed", "tool", "step", "snapshot"]
StepStatus = Literal["done", "interrupted", "started", "partial"]
"""``done``: finished with its result; ``interrupted``: an agent's call that ended
interrupted; ``started``: a tool call that began and whose end was never recorded (it may or
may not have taken effect); ``partial``: a streamed model answer cut off part-way (what
arrived is kept, because the interrupted agent kept it)."""
RunStatus = Literal["running", "finished", "failed", "cancelled"]


@attrs.frozen
class StepRecord:
    """One recorded step of a run.

    :ivar key: the step's identity within the run (``"Alice#3"``, ``"Alice#3/chat#1"``,
        ``"Alice#3/tool:call_7#1"``, ``"dice#2"``): the same for the same step of every
        execution of the program, whatever the scheduling order.
    :ivar kind: what kind of step it is.
    :ivar status: see :data:`StepStatus`.
    :ivar fingerprint: a digest of the step's input, compared when the step is replayed.
    :ivar payload: the step's result as JSON data.
    :ivar seq: the order in which the run wrote its records (1, 2, ...).
    :ivar at: when the record was written (ISO 8601, UTC).
    """

    key: str
    kind: str
    status: str
    fingerprint: str
    payload: Any = None
    seq: int = 0
    at: str = ""


@attrs.frozen
class RunInfo:
    """A run as a store lists it.

    :ivar status: ``running`` while a process owns it, or after a process died with it open
        (resumable); ``finished`` when its program ended normally; ``failed`` when it ended
        with an error and ``cancelled`` when it was cancelled (both resumable).
    :ivar steps: how many step records it holds.
    :ivar last_step: the key of the record written last.
    """

    user_id: str
    run_id: str
    status: str
    created_at: str
    updated_at: str
    steps: int = 0
    last_step: str | None = None


@runtime_checkable
class RunStore(Protocol):
    """Where durable runs keep their records (:class:`SQLiteRunStore` and others).

    Every method is a coroutine safe to call from any anyio backend; blocking work runs in
    worker threads. A store reaches one run's records only through its ``(user_id, run_id)``.
    """

    async def acquire(self, user_id: str, run_id: str) -> RunInfo:
        """Create the run if it is new, take it for this process and mark it ``running``.

        :raises DurableRunError: when another process (or another open run of this one) owns
            the run, or the store cannot be reached.
        """
        ...

    async def release(self, user_id: str, run_id: str, status: RunStatus) -> None:
        """Record how the run ended and give it up (shielded by the caller)."""
        ...

    async def load_steps(self, user_id: str, run_id: str) -> list[StepRecord]:
        """Every record of the run, in ``seq`` order (empty for an unknown run)."""
        ...

    async def put_step(self, user_id: str, run_id: str, record: StepRecord) -> None:
        """Write *record* durably, replacing the run's record with the same key (a tool
        call's ``started`` record by its result). Returns only once the record would survive
        the death of the process.

        :raises DurableRunError: when this store does not own the run (:meth:`acquire` it
            first), the payload is not JSON data (nothing is written), or the store fails.
        """
        ...

    async def get_run(self, user_id: str, run_id: str) -> RunInfo | None:
        """The run, or ``None`` when the store has no such run."""
        ...

    async def list_runs(self, user_id: str | None = None) -> list[RunInfo]:
        """The runs of *user_id* (of every user for ``None``), most recently updated first."""
        ...

    async def delete_run(self, user_id: str, run_id: str) -> bool:
        """Delete the run and its records; whether there was one.

        :raises DurableRunError: while a process owns the run.
        """
        ...

    async def aclose(self) -> None:
        """Release what the store holds (connections); it may be used again afterwards."""
        ...


def check_run_ids(run_id: str, user_id: str) -> None:
    """Refuse ids that are not non-empty strings (a run id) or strings (a user id), or that
    hold NUL or lone surrogates (no database text can hold them).

    :raises TypeError: when an id is not a string.
    :raises DurableRunError: for an empty run id or an unstorable character.
    """
    for what, value in (("run_id", run_id), ("user_id", user_id)):
        if not isinstance(value, str):
            raise TypeError(f"{what} must be a str, not {type(value).__name__}")
        if "\x00" in value or any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
            raise DurableRunError(f"{what} {value!r} holds a character no store can keep")
    if not run_id:
        raise DurableRunError("a durable run needs a non-empty run_id")


def now() -> str:
    """The current time as a record's ``at`` (ISO 8601, UTC)."""
    return datetime.datetime.now(datetime.UTC).isoformat()


def run_digest(user_id: str, run_id: str) -> bytes:
    """A digest of the pair of ids (the two ids cannot run into each other), from which the
    stores derive the lock of a run."""
    return hashlib.sha256(json.dumps([user_id, run_id]).encode("utf-8", "surrogatepass")).digest()


def encode_json(record: StepRecord, value: Any) -> str:
    """*value* (the record's payload, or data holding it) as JSON text, before anything of the
    record is written.

    :raises DurableRunError: when the payload is not JSON data (nothing is written then).
    """
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise DurableRunError(f"step {record.key!r}: its result is not JSON data: {exc}") from exc


def check_owned(owns: bool, user_id: str, run_id: str) -> None:
    """Refuse to write to a run the store has not acquired: only its owner writes to a run.

    :param owns: whether the store owns the run.
    :raises DurableRunError: when it does not.
    """
    if not owns:
        raise DurableRunError(
            f"run {run_id!r} of user {user_id!r} is not open with this store: acquire it "
            "before writing its steps"
        )
