"""Durable runs: an ordinary multi-agent program that survives the death of its process.

``async with durable_run(run_id, store) as run:`` records, under *run_id*, every step the
program's agents take that costs money, touches the world or cannot be repeated: each agent
call's reply, each model call's answer, each embedding, each tool call's result, and each
:meth:`DurableRun.step` the program makes itself. Started again with the same run id after
a crash, the program runs from the top, and every recorded step returns its recorded result
instead of running: no model call is paid for twice, no tool runs twice, and the agents,
re-built from the same results, reach the very states they had. The first step without a
record runs live, and from there the run carries on as if nothing had happened.

Step identities do not depend on scheduling: an agent's calls are numbered per agent
(``"Alice#3"``), the steps inside a call per call (``"Alice#3/chat#2"``; a tool call by its
id, numbered per id, ``"Alice#3/tool:call_7#1"``), and what an observer does while observing
under the call it observes (``"Alice#3/observe:Bob#1/chat#1"``). Concurrent agents (a fanout,
a hub, a task group) therefore get the same keys in every execution.

What the program must keep (the determinism rules): outside recorded steps it decides the
same things given the same results (random choices, time, ids and outside systems go through
:meth:`DurableRun.step`); each agent taking part has its own name; agents start as the
program builds them (a memory kept in a database would hold the replayed history twice, and
is refused). A program that does something else than what was recorded (edited code,
another order, another prompt) is stopped with :class:`RunDivergedError` naming the first
step that differs, before that step runs.

Interrupts keep their meaning: a call that ended interrupted is recorded so, and replayed
so (the interrupt lands at the same step). Cancelling the run (or an error) leaves it
resumable: what completed stays recorded.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import random
import secrets
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import anyio.lowlevel
import attrs

from .._ids import new_id
from ..exception import DurableRunError, RunDivergedError
from ..message import Msg
from ._fingerprint import fingerprint
from ._frame import _FRAME, _Frame, current_run, current_step_key, escape, step
from ._interceptors import activate, deactivate, marks_of
from ._sqlite_store import SQLiteRunStore
from ._store import RunInfo, RunStatus, RunStore, StepRecord

__all__ = [
    "DurableRun",
    "current_run",
    "current_step_key",
    "durable_run",
    "join_calls",
    "join_run",
    "step",
]

logger = logging.getLogger("agentscope_rt.durable")

_RESERVED = ("chat", "embed", "observe", "tool")
# How many scheduling rounds a replayed interrupt waits for the steps recorded before it
# (finished siblings of a parallel tool call) to be replayed first. A replay has no I/O, so
# they finish within a few rounds; the bound only keeps a diverged program from spinning.
_SETTLE_ROUNDS = 1000


class DurableRun:
    """One durable run of a program (made by :func:`durable_run`; use it with ``async with``).

    :ivar run_id: the run's id.
    :ivar user_id: whose run it is (one user's runs are never reached by another's id).
    :ivar store: where the run keeps its records.
    :ivar resumed: whether the run had records when it was opened.
    :ivar replayed: how many steps returned their recorded result so far.
    :ivar recorded: how many steps were run and recorded by this process so far.
    :ivar execution_id: a fresh id each time the run is opened (one execution of the
        program), for what is kept per execution outside the run.
    """

    def __init__(
        self, run_id: str, store: RunStore | str | os.PathLike[str], *, user_id: str = ""
    ) -> None:
        self.run_id = run_id
        self.user_id = user_id
        self._owns_store = isinstance(store, (str, os.PathLike))
        self.store: RunStore = (
            SQLiteRunStore(store) if isinstance(store, (str, os.PathLike)) else store
        )
        if not self._owns_store and not isinstance(self.store, RunStore):
            raise TypeError(
                f"durable_run needs a RunStore (SQLiteRunStore, PostgresRunStore, "
                f"RedisRunStore) or a SQLite file path, not {type(store).__name__}"
            )
        self.info: RunInfo | None = None
        self.resumed = False
        self.replayed = 0
        self.recorded = 0
        self._records: dict[str, StepRecord] = {}
        self._children: dict[str, set[str]] = {}
        self._last_index: dict[str, int] = {}
        self._visited: set[str] = set()
        self._seq = 0
        self._calls: dict[str, int] = {}
        self._agents: dict[str, weakref.ref[Any]] = {}
        self._token: Any = None
        self._open = False
        # The order of deliveries (see _mark): what each agent observed since its last mark;
        # per agent, the marks passed in this execution; and, from the records, when each
        # recorded delivery arrived: observe key -> (agent, mark, position), and how many
        # deliveries each mark waits for.
        self._observed: dict[str, list[str]] = {}
        self._readings: dict[str, int] = {}
        self._arrivals: dict[str, tuple[str, int, int]] = {}
        self._expected: dict[tuple[str, int], int] = {}
        self._last_mark: dict[str, int] = {}
        self._unrecorded: dict[str, list[list[Any]]] = {}
        self._joined = False
        self._applied: dict[tuple[str, int], int] = {}
        self._progress: anyio.Event | None = None
        # Whose reply a delivered message is: reply id -> the key of the call that made it,
        # while that call broadcasts; and deliveries counted per (call, observer).
        self._speakers: dict[str, str] = {}
        self._deliveries: dict[tuple[str, str], int] = {}
        # In a process that joined the run for many agents at once (see join_calls): how
        # many calls each agent made before, and where the deliveries are and how many each
        # observer had there before.
        self._calls_before = 0
        self._delivered_before: tuple[str, int] | None = None
        # The keys of the records of each call and delivery (see _owner).
        self._owned: dict[str, list[str]] = {}
        self.execution_id = ""

    def __repr__(self) -> str:
        return (
            f"<DurableRun {self.run_id!r} of user {self.user_id!r} in {self.store!r}: "
            f"{self.replayed} replayed, {self.recorded} recorded>"
        )

    # -- opening and closing -----------------------------------------------------------

    async def __aenter__(self) -> DurableRun:
        if self._open:
            raise DurableRunError(f"run {self.run_id!r} is open already")
        try:
            self.info = await self.store.acquire(self.user_id, self.run_id)
        except BaseException:
            if self._owns_store:
                with anyio.CancelScope(shield=True):
                    await self.store.aclose()
            raise
        try:
            self._load(await self.store.load_steps(self.user_id, self.run_id))
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.store.release(self.user_id, self.run_id, "failed")
                if self._owns_store:
                    await self.store.aclose()
            raise
        self._open = True
        activate()
        self._token = _FRAME.set(_Frame(self, ""))
        if self.resumed:
            logger.info(
                "Resuming run %r of user %r: %d recorded steps",
                self.run_id,
                self.user_id,
                len(self._records),
            )
        return self

    def _load(self, records: list[StepRecord]) -> None:
        # Everything about an execution starts afresh: the same object may open the run again.
        self._children, self._last_index, self._visited = {}, {}, set()
        self._calls, self._agents = {}, {}
        self.replayed = self.recorded = 0
        self._observed, self._readings, self._applied = {}, {}, {}
        self._arrivals, self._expected, self._last_mark, self._unrecorded = {}, {}, {}, {}
        self._speakers, self._deliveries = {}, {}
        self._progress = anyio.Event()
        self.execution_id = new_id()
        self._records = {record.key: record for record in records}
        self._owned = {}
        for key in self._records:
            self._owned.setdefault(_owner(key), []).append(key)
        self.resumed = bool(records)
        self._seq = max((record.seq for record in records), default=0)
        for record in records:
            payload = record.payload
            for agent, point, observed in marks_of(payload):
                self._expected[(agent, point)] = len(observed)
                self._last_mark[agent] = max(point, self._last_mark.get(agent, -1))
                for position, key in enumerate(observed):
                    self._arrivals[key] = (agent, point, position)
        for key in self._records:
            parent, slash, rest = key.partition("/")
            if slash and "/" not in rest:
                self._children.setdefault(parent, set()).add(key)
            prefix, hash_, number = key.rpartition("#")
            if hash_ and number.isdigit():
                index = int(number)
                if index > self._last_index.get(prefix, 0):
                    self._last_index[prefix] = index

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        _FRAME.reset(self._token)
        self._open = False
        deactivate()
        if exc_type is None:
            status: RunStatus = "finished"
        elif issubclass(exc_type, anyio.get_cancelled_exc_class()):
            status = "cancelled"
        else:
            status = "failed"
        unreplayed = self.untaken
        if exc_type is None and unreplayed:
            status = "failed"
        with anyio.CancelScope(shield=True):
            try:
                await self.store.release(self.user_id, self.run_id, status)
            finally:
                if self._owns_store:
                    await self.store.aclose()
        if exc_type is None and unreplayed:
            first = min(unreplayed, key=lambda key: self._records[key].seq)
            raise RunDivergedError(
                f"run {self.run_id!r} ended without taking {len(unreplayed)} recorded "
                f"step(s), the first being {first!r}: the program did something else than "
                "what the run recorded",
                step=first,
                recorded=self._records[first].kind,
                now="not taken",
            )

    # -- steps -------------------------------------------------------------------------

    async def step(self, name: str, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``func(*args, **kwargs)`` (awaiting an awaitable result) as a recorded step.

        On resume the recorded result is returned and *func* is not called. Its result is
        kept as JSON data and returned as JSON gives it back (a tuple comes back as a list,
        the first time too, so live and replayed executions see the same value).

        :param name: the step's name; its calls are numbered per name within the agent call
            (or at the top of the program) that takes them: ``"dice"`` -> ``"dice#1"``,
            ``"dice#2"``, ...
        :raises DurableRunError: when *name* is reserved, or the result is not JSON data (it
            is then not recorded, and the step runs again on resume).
        :raises RunDivergedError: when the step recorded under this key had other arguments.
        """
        if not isinstance(name, str) or not name or name in _RESERVED:
            raise DurableRunError(
                f"step name {name!r}: give a non-empty name other than {', '.join(_RESERVED)}"
            )
        frame = self._frame()
        key = frame.child(escape(name))
        print_ = fingerprint([name, list(args), kwargs])
        record = self._replay(key, "step", print_, frame)
        if record is not None:
            return record.payload
        if frame.interrupted:
            await self._interrupt(frame)
        result = func(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        try:
            result = json.loads(json.dumps(result, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise DurableRunError(
                f"step {key!r}: its result must be JSON data (str, number, bool, None, "
                f"lists and dicts of them): {exc}"
            ) from exc
        await self._write(key, "step", "done", print_, result)
        return result

    async def rng(self, name: str = "random") -> random.Random:
        """A :class:`random.Random` seeded by a recorded step: the same numbers on resume."""
        seed = await self.step(name, secrets.randbits, 64)
        return random.Random(seed)

    def _frame(self) -> _Frame:
        frame = _FRAME.get()
        if frame is None or frame.run is not self:
            raise DurableRunError(
                f"run {self.run_id!r}: steps are taken inside its 'async with' block (or "
                "in tasks started there)"
            )
        return frame

    def _replay(self, key: str, kind: str, print_: str, frame: _Frame) -> StepRecord | None:
        """The completed record of step *key*, or ``None`` when the step runs live (also for
        a ``started`` or ``partial`` record, which the caller looks at itself: those are
        returned too).

        :raises RunDivergedError: when the record is of another kind or input, when a later
            step of the same sequence is recorded, or when the enclosing call completed
            without this step.
        """
        record = self._records.get(key)
        if record is None:
            prefix, _, number = key.rpartition("#")
            if number.isdigit() and self._last_index.get(prefix, 0) > int(number):
                later = f"{prefix}#{self._last_index[prefix]}"
                raise RunDivergedError(
                    f"run {self.run_id!r}: step {key!r} has no record but the later step "
                    f"{later!r} has: the program took another path than the recorded one",
                    step=key,
                    recorded="no record",
                    now=kind,
                )
            if frame.record is not None and not frame.interrupted:
                raise RunDivergedError(
                    f"run {self.run_id!r}: the recorded call {frame.key!r} completed without "
                    f"step {key!r}, which the program now takes",
                    step=key,
                    recorded="not taken",
                    now=kind,
                )
            return None
        self._visited.add(key)
        frame.pending.discard(key)
        if record.kind != kind or record.fingerprint != print_:
            raise RunDivergedError(
                f"run {self.run_id!r}: step {key!r} differs from its record (recorded a "
                f"{record.kind} with input {record.fingerprint}, now a {kind} with input "
                f"{print_}): the program or its inputs changed since the run was recorded",
                step=key,
                recorded=f"{record.kind} {record.fingerprint}",
                now=f"{kind} {print_}",
            )
        if record.status in ("done", "interrupted"):
            self.replayed += 1
        return record

    async def _write(
        self, key: str, kind: str, status: str, print_: str, payload: Any, *, count: bool = True
    ) -> None:
        self._seq += 1
        record = StepRecord(key, kind, status, print_, payload, self._seq)
        # Shielded: a record whose result the program goes on with must reach the store.
        with anyio.CancelScope(shield=True):
            await self.store.put_step(self.user_id, self.run_id, record)
        self._kept(record, count=count)

    def _kept(self, record: StepRecord, *, count: bool) -> None:
        """Note *record*, just written, as the run's (and as taken)."""
        key = record.key
        if key not in self._records:
            self._owned.setdefault(_owner(key), []).append(key)
        self._records[key] = record
        self._visited.add(key)
        if count and record.status in ("done", "interrupted"):
            self.recorded += 1

    # -- taking part from another process (agents on hosts) -----------------------------

    @property
    def taken(self) -> frozenset[str]:
        """The keys of the steps this run replayed or recorded so far."""
        return frozenset(self._visited)

    def add_taken(self, keys: Iterable[str], *, replayed: int = 0) -> None:
        """Count steps another process replayed for this run (see :func:`join_run`) as
        taken here: their records are then not "recorded steps never taken" at the end."""
        self._visited.update(keys)
        self.replayed += replayed

    @property
    def untaken(self) -> list[str]:
        """The keys of the recorded steps this run did not replay (or record) so far."""
        return [
            key
            for key, record in self._records.items()
            if key not in self._visited and record.kind != "snapshot"
        ]

    def speaker_of(self, msg: Msg | list[Msg] | None) -> str:
        """The key of the agent call whose reply *msg* is, while that call runs (a delivery
        of *msg* is then keyed under it, ``"Alice#3/observe:Bob#1"``); ``""`` otherwise."""
        reply_id = msg.invocation_id if isinstance(msg, Msg) else None
        return self._speakers.get(reply_id, "") if reply_id else ""

    def records_of(self, keys: Iterable[str]) -> list[StepRecord]:
        """The records of the agent calls and deliveries *keys* (``"Alice#3"``,
        ``"observe:Bob#2"``) and of the steps taken in each, found by key (not by a pass
        over the run's records): what a process joining the run for many calls at once
        needs (see :func:`join_calls`)."""
        records = self._records
        return [records[key] for owner in keys for key in self._owned.get(owner, ())]

    def records_under(self, key: str) -> list[StepRecord]:
        """The records of the call *key* and of the steps taken in it (what a process
        joining the run for that call needs, see :func:`join_run`)."""
        prefix = f"{key}/"
        return [r for k, r in self._records.items() if k == key or k.startswith(prefix)]

    async def put_record(self, record: StepRecord) -> None:
        """Write *record*, made by a process that joined the run for one call, with this
        run's store (its owner's) and the next of this run's sequence numbers; durable when
        this returns, as the run's own records are.

        :raises DurableRunError: when the store fails or the payload is not JSON data.
        """
        await self._write(
            record.key, record.kind, record.status, record.fingerprint, record.payload
        )

    async def put_records(self, records: Sequence[StepRecord]) -> None:
        """:meth:`put_record` for each of *records*, in one write when the store can
        (``put_steps``, as the three stores have): a batch relayed from an agent host
        waits for the disk once.

        :raises DurableRunError: as :meth:`put_record` (none of the batch is kept then,
            with ``put_steps``).
        """
        put_steps = getattr(self.store, "put_steps", None)
        if put_steps is None:
            for record in records:
                await self.put_record(record)
            return
        numbered = []
        for record in records:
            self._seq += 1
            numbered.append(attrs.evolve(record, seq=self._seq, at=""))
        with anyio.CancelScope(shield=True):
            await put_steps(self.user_id, self.run_id, numbered)
        for record in numbered:
            self._kept(record, count=True)

    async def record_snapshot(self, name: str, state: Any) -> None:
        """Record *state* (JSON data) as the latest state of the agent *name*, under
        ``"snapshot:<name>"`` (one record per agent, replaced each time). A snapshot is no
        step: it is never replayed, and not taking it again is no divergence.

        :raises DurableRunError: when *state* is not JSON data.
        """
        key = f"snapshot:{escape(name)}"
        await self._write(key, "snapshot", "done", "", state, count=False)

    def snapshot(self, name: str) -> Any:
        """The state last recorded by :meth:`record_snapshot` for the agent *name* (by this
        process or an earlier one), or ``None``."""
        record = self._records.get(f"snapshot:{escape(name)}")
        return None if record is None else record.payload

    async def _interrupt(self, frame: _Frame) -> None:
        """Replay the interrupt of *frame*'s call here: the step about to run had not finished
        when the call was interrupted. Never returns (the interrupt cancels the caller)."""
        for _ in range(_SETTLE_ROUNDS):
            if not frame.pending:
                break
            await anyio.lowlevel.checkpoint()
        frame.agent.interrupt()
        await anyio.sleep_forever()

    # -- the order of deliveries ----------------------------------------------------------
    #
    # What a hub delivers is rebuilt by the replay, but where a delivery lands among the
    # observer's own doings depends on scheduling when agents reply at once (a fanout inside
    # a hub): a replayed step takes no time, so a replayed reply would reach the others at
    # other points of their replies than it did live, and their memories would differ. So
    # an agent's call, model calls and tool calls mark their beginning and their end (and a
    # reasoning step where it reads the memory); each mark counts, per agent, and notes the
    # deliveries the agent observed since its previous mark, and the step records its marks.
    # On replay a mark waits for the deliveries recorded before it, and a recorded delivery
    # waits for the mark it came after: every agent sees what it saw, in the same order.

    def _changed(self) -> None:
        assert self._progress is not None
        self._progress.set()
        self._progress = anyio.Event()

    async def _until(self, ready: Callable[[], bool]) -> None:
        while not ready():
            assert self._progress is not None
            await self._progress.wait()

    async def _mark(self, agent: str) -> None:
        """A mark of *agent* (see above): on replay, wait for the deliveries recorded before
        it. The mark (``[agent, number, [observe keys since the previous mark]]``) is kept
        with the agent's next record, whatever step writes it: the marks recorded are then
        always the first ones of the agent, and a delivery that no recorded mark lists came
        after them all. Nothing in a process that joined the run for one call (the
        deliveries are the owner's business)."""
        if self._joined:
            return
        point = self._readings.get(agent, 0)
        expected = self._expected.get((agent, point))
        if expected:
            await self._until(lambda: self._applied.get((agent, point), 0) >= expected)
        self._readings[agent] = point + 1
        observed = self._observed.pop(agent, [])
        self._unrecorded.setdefault(agent, []).append([agent, point, observed])
        self._changed()

    async def _marks_here(self, frame: _Frame) -> None:
        """A mark of *frame*'s agent (none at the top of the program)."""
        if frame.agent is not None:
            await self._mark(self._agent_name(frame.agent))

    def _take_marks(self, frame: _Frame) -> list[list[Any]]:
        """The marks of *frame*'s agent not recorded yet, for the record being written."""
        if frame.agent is None:
            return []
        return self._unrecorded.pop(self._agent_name(frame.agent), [])

    async def _deliver(self, agent: str, key: str, proceed: Callable[[], Any]) -> Any:
        """Let the delivery *key* to *agent* land where it did when it was recorded (at
        once when it was not), and note it for the agent's next mark."""
        arrival = self._arrivals.get(key)
        if arrival is not None:
            _, point, position = arrival
            await self._until(
                lambda: (
                    self._readings.get(agent, 0) == point
                    and self._applied.get((agent, point), 0) == position
                )
            )
        elif agent in self._last_mark:
            # Not recorded: it came after the agent's last recorded mark.
            last = self._last_mark[agent]
            await self._until(lambda: self._readings.get(agent, 0) > last)
        # Counted as it starts, as it was noted live: what the observer does while
        # observing (a model call) makes marks that come after it.
        self._observed.setdefault(agent, []).append(key)
        if arrival is not None:
            self._applied[(agent, point)] = position + 1
            self._changed()
        return await proceed()

    def _delivery_key(self, observer: str, msg: Any) -> str:
        """The key of a delivery of *msg* to *observer*: under the call whose reply it is
        (``"Alice#3/observe:Bob#1"``), whichever task delivers it (a hub may hand it over
        from the speaker's task, a delivery task or another member's); a message that is
        no reply (an announcement) at the top of the program (``"observe:Bob#2"``)."""
        where = self.speaker_of(msg)
        before = 0
        if self._delivered_before is not None:
            where, before = self._delivered_before
        number = self._deliveries[(where, observer)] = (
            self._deliveries.get((where, observer), before) + 1
        )
        label = f"observe:{observer}#{number}"
        return f"{where}/{label}" if where else label

    def _agent_name(self, agent: Any) -> str:
        name = agent.name
        known = self._agents.get(name)
        holder = None if known is None else known()
        if holder is None:
            self._agents[name] = weakref.ref(agent)
        elif holder is not agent:
            raise DurableRunError(
                f"run {self.run_id!r}: two agents named {name!r} take part; a durable run "
                "keys each agent's steps by its name, so give every agent its own name"
            )
        return escape(name)


@asynccontextmanager
async def join_run(
    store: RunStore,
    run_id: str,
    key: str,
    records: Iterable[StepRecord] | None = None,
    *,
    user_id: str = "",
) -> AsyncIterator[DurableRun]:
    """Take part, in this process, in one agent call (or observation) of the run *run_id*,
    which another process owns: the call of an agent on an agent host, made there through
    its proxy.

    Inside the block, the first agent call or observation the calling task makes *is* the
    call *key* (it gets no key of its own): the steps it takes are written with *store*'s
    ``put_step`` under *key* (``"Alice#3/chat#1"``), or replayed from *records*, exactly as
    they would be in the owning process, which records the call itself. The run is not
    acquired: *store* is typically a relay to the owner (:meth:`DurableRun.put_record`),
    as a store writes only to runs it owns.

    :param store: where the steps are written.
    :param key: the call's key (:func:`current_step_key` inside the call, in the owner).
    :param records: the run's records of the call (:meth:`DurableRun.records_under` in the
        owner); ``None``: read from *store* (``load_steps``).
    :raises DurableRunError: when *key* is empty, or the store cannot be read.
    """
    if not key:
        raise DurableRunError("join_run needs the key of an agent call of the run")
    run = DurableRun(run_id, store, user_id=user_id)
    if records is None:
        records = await run.store.load_steps(user_id, run_id)
    run._load(list(records))
    frame = _Frame(run, key, record=run._records.get(key))
    frame.joined = True
    with _joined(run, frame):
        yield run


@asynccontextmanager
async def join_calls(
    store: RunStore,
    run_id: str,
    names: Sequence[str],
    fetch: Callable[[list[str]], Awaitable[Iterable[StepRecord]]],
    *,
    user_id: str = "",
    call: int | None = None,
    delivery: tuple[str, int] | None = None,
) -> AsyncIterator[DurableRun]:
    """Take part, in this process, in one call (or one delivery) of each of many agents of
    the run *run_id*, which another process owns: a group of agents on an agent host, all
    called at once by one call of the owner.

    With *call*, each agent's next call inside the block is its call number *call* of the
    run (``"Alice#3"`` for ``call=3``), recorded (its reply and its steps) with *store*'s
    ``put_step`` or replayed, as the owner records a call of one of its own agents. With
    *delivery* ``(where, number)``, each agent's next observation is its delivery number
    *number* under *where* (``"observe:Bob#2"``, or ``"Alice#3/observe:Bob#2"`` under the
    call ``"Alice#3"``): what it does while observing is keyed there. These are the keys a
    one-process run gives the same calls, so a run's record does not depend on where its
    agents live. No delivery order is kept across the agents (each observes once).

    :param names: the agents' names, in any order (their records are fetched by key).
    :param fetch: gets the records of the given call or delivery keys from the owner
        (:meth:`DurableRun.records_of` there); awaited once, before the block.
    :raises DurableRunError: when neither or both of *call* and *delivery* are given.
    """
    if (call is None) == (delivery is None):
        raise DurableRunError("join_calls takes part in calls or in deliveries: give one")
    if call is not None:
        keys = [f"{escape(name)}#{call}" for name in names]
    else:
        assert delivery is not None
        where, number = delivery
        prefix = f"{where}/" if where else ""
        keys = [f"{prefix}observe:{escape(name)}#{number}" for name in names]
    run = DurableRun(run_id, store, user_id=user_id)
    run._load(list(await fetch(keys)))
    run._calls_before = (call or 1) - 1
    if delivery is not None:
        run._delivered_before = (delivery[0], delivery[1] - 1)
    with _joined(run, _Frame(run, "")):
        yield run


@contextmanager
def _joined(run: DurableRun, frame: _Frame) -> Iterator[None]:
    """*run*, joined from this process, open in the block, with *frame* the calling task's."""
    run._joined = True
    run._open = True
    activate()
    token = _FRAME.set(frame)
    try:
        yield
    finally:
        _FRAME.reset(token)
        run._open = False
        deactivate()


def _owner(key: str) -> str:
    """The agent call or delivery a step of *key* is taken in: its first part, and its
    second when that is a delivery (``"Alice#3/observe:Bob#1/chat#1"`` ->
    ``"Alice#3/observe:Bob#1"``); the key itself for a call or a delivery."""
    first, slash, rest = key.partition("/")
    if slash and rest.startswith("observe:"):
        second = rest.partition("/")[0]
        return f"{first}/{second}"
    return first


def durable_run(
    run_id: str, store: RunStore | str | os.PathLike[str], *, user_id: str = ""
) -> DurableRun:
    """A durable run of the program inside ``async with durable_run(...) as run:``.

    :param run_id: the run's id: the same id resumes the run.
    :param store: a :class:`RunStore` (:class:`SQLiteRunStore`, :class:`PostgresRunStore`,
        :class:`RedisRunStore`), or a path, for a SQLite file the run opens and closes.
    :param user_id: whose run it is.
    :raises DurableRunError: (on entering) when the run is open in another process or the
        store cannot be reached.
    """
    return DurableRun(run_id, store, user_id=user_id)
