"""Durable runs killed with SIGKILL at random instants, resumed until they finish.

The child program (``_kill_child.py``: three ReAct agents in a MsgHub, rounds of
``sequential_pipeline``, one ``fanout_pipeline`` round, a tool call with a side effect in every
reply, a recorded random draw) runs under ``durable_run``. Each *series* starts it under a new
run id, kills it after a random delay (drawn from a seeded RNG over the program's uninterrupted
running time, so kills land in model calls, tool calls, store writes and replays alike),
starts it again with the same run id, and so on until it finishes. Then:

* the transcript (every agent's memory, the deliveries each agent observed, the order drawn)
  equals that of an uninterrupted run of the same program with the same draw, except the
  results of the tool calls the kills cut off, which read CUT_OFF_TEXT;
* the cut-off tool calls are exactly those the store held as started-but-not-done after a kill;
* every tool call's side effect happened exactly once, except a cut-off call's, which happened
  at most once (it may have taken effect before the kill, and is never run again).

The stores: SQLite with every record fsync'd, SQLite with ``fsync="effects"`` (a killed process
must lose nothing either way), PostgreSQL and Redis (the servers of ``conftest.py``).
``AGENTSCOPE_RT_KILL_ROUNDS`` sets how many kills each test makes (default: 60, 30, 20 and 20
in that order); each test prints what its kills hit.
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.process
import multiprocessing.resource_tracker
import os
import random
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.agent import CUT_OFF_TEXT
from agentscope_rt.durable import StepRecord
from tests._servers import PostgresServer, RedisServer

from . import _kill_child

SEED = 20261129
CHILD_TIMEOUT_S = 120.0
"""Only turns a hung child into a failure."""
MAX_STARTS = 200
"""Starts of one series before it counts as never finishing."""
FORKS = multiprocessing.get_context("forkserver")


@pytest.fixture(scope="module", autouse=True)
def fork_server() -> Iterator[None]:
    """Children forked from a server that imported the child program once: a start then
    costs milliseconds instead of the imports' second, and every kill lands in the program."""
    FORKS.set_forkserver_preload([_kill_child.__name__])
    yield
    # The server and the resource tracker it started would otherwise live on, idle, until
    # the test process ends (the standard library stops them so in its own tests).
    multiprocessing.forkserver._forkserver._stop()  # type: ignore[attr-defined]
    multiprocessing.resource_tracker._resource_tracker._stop()  # type: ignore[attr-defined]


KILLS = {"sqlite": 60, "sqlite-effects": 30, "postgres": 20, "redis": 20}


def _kills(store: str) -> int:
    return int(os.environ.get("AGENTSCOPE_RT_KILL_ROUNDS", KILLS[store]))


@pytest.fixture(params=list(KILLS))
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the child keeps its runs, as its STORE argument."""
    if request.param == "postgres":
        postgres: PostgresServer = request.getfixturevalue("durable_postgres_server")
        return f"postgres:postgresql://postgres@127.0.0.1:{postgres.port}/postgres"
    if request.param == "redis":
        redis: RedisServer = request.getfixturevalue("durable_redis_server")
        return f"redis:redis://127.0.0.1:{redis.port}/0"
    return f"{request.param}:{tmp_path / 'runs.db'}"


def _records(spec: str, run_id: str) -> list[StepRecord]:
    async def load() -> list[StepRecord]:
        store = _kill_child.open_store(spec)
        try:
            return await store.load_steps("", run_id)
        finally:
            await store.aclose()

    return anyio.run(load)


def _seed_run(spec: str, run_id: str, record: StepRecord) -> None:
    """Open *run_id* holding only *record* (the recorded random draw)."""

    async def seed() -> None:
        store = _kill_child.open_store(spec)
        try:
            await store.acquire("", run_id)
            try:
                await store.put_step("", run_id, record)
            finally:
                await store.release("", run_id, "cancelled")
        finally:
            await store.aclose()

    anyio.run(seed)


class Harness:
    """Runs the child for one backend and store, keeps the references and the counts."""

    def __init__(self, backend: str, spec: str, folder: Path) -> None:
        self.backend = backend
        self.spec = spec
        self.folder = folder
        self.prefix = f"{backend}-{folder.name}"
        self.rng = random.Random(f"{SEED}-{backend}-{spec.partition(':')[0]}")
        self.references: dict[tuple[str, ...], tuple[dict[str, Any], list[str]]] = {}
        self.startup = 0.0
        self.running = 0.0
        self.kills = 0
        self.kills_after_new_records = 0
        self.kills_in_tool_calls = 0
        self.kills_after: Counter[str] = Counter()
        self.cut_off_after_effect = 0
        self.cut_off_before_effect = 0
        self.series = 0
        self.starts = 0

    def paths(self, name: str) -> tuple[str, Path, Path]:
        return f"{self.prefix}-{name}", self.folder / f"{name}.json", self.folder / f"{name}.fx"

    def start(self, name: str) -> multiprocessing.process.BaseProcess:
        run_id, transcript, effects = self.paths(name)
        self.starts += 1
        argv = [self.backend, self.spec, run_id, str(transcript), str(effects)]
        child = FORKS.Process(target=_kill_child.run_child, args=(argv, self.errors(name)))
        child.start()
        return child

    def errors(self, name: str) -> str:
        return str(self.folder / f"{name}.err")

    def finish(self, child: multiprocessing.process.BaseProcess, name: str, timeout: float) -> bool:
        """Whether *child* ended within *timeout* (it must have ended well)."""
        child.join(timeout)
        if child.exitcode is None:
            return False
        errors = Path(self.errors(name)).read_text() if os.path.exists(self.errors(name)) else ""
        assert child.exitcode == 0, f"the child failed ({child.exitcode}): {errors[-4000:]}"
        child.close()
        return True

    def result(self, name: str) -> tuple[dict[str, Any], list[str]]:
        _, transcript, effects = self.paths(name)
        final = json.loads(transcript.read_text())
        final.pop("seconds")
        return final, effects.read_text().splitlines() if effects.exists() else []

    def reference(self, order: list[str], draw: StepRecord) -> tuple[dict[str, Any], list[str]]:
        """The transcript and side effects of an uninterrupted run drawing *order*."""
        key = tuple(order)
        if key not in self.references:
            name = f"reference-{len(self.references) + 1}"
            _seed_run(self.spec, self.paths(name)[0], draw)
            began = time.perf_counter()
            child = self.start(name)
            assert self.finish(child, name, CHILD_TIMEOUT_S)
            wall = time.perf_counter() - began
            seconds = json.loads(self.paths(name)[1].read_text())["seconds"]
            if not self.references:  # the first one aims the kills
                self.running, self.startup = seconds, max(wall - seconds, 0.0)
            self.references[key] = self.result(name)
            final, effects = self.references[key]
            assert final["order"] == order
            assert sorted(effects) == sorted(set(effects)), effects  # each tool ran once
            assert CUT_OFF_TEXT not in json.dumps(final)
        return self.references[key]

    def calibrate(self) -> None:
        """Run the program once uninterrupted, to learn how long it takes."""
        name = "calibration"
        child = self.start(name)
        assert self.finish(child, name, CHILD_TIMEOUT_S)
        draw = next(r for r in _records(self.spec, self.paths(name)[0]) if r.key == "order#1")
        final, effects = self.result(name)
        # A reference run replays the draw and runs the rest: as a run that drew it live.
        reference, reference_effects = self.reference(final["order"], draw)
        assert reference == final
        assert sorted(reference_effects) == sorted(effects)  # the fanout's come in any order

    def delay(self, start: int) -> float:
        # Any instant from the fork to when an uninterrupted run would end; later starts of a
        # series (which replay more and more before their first live step) get a little more
        # each time, so that a series ends however slow its replays get.
        return self.rng.uniform(0.0, (self.startup + self.running) * (1 + start / 10))

    def run_series(self) -> None:
        """Start a run, kill it at random instants until it finishes, check the outcome."""
        self.series += 1
        name = f"series-{self.series}"
        run_id = self.paths(name)[0]
        started_at_kill: set[str] = set()
        before = 0
        for start in range(MAX_STARTS):
            child = self.start(name)
            if self.finish(child, name, self.delay(start)):
                break
            child.kill()
            child.join(CHILD_TIMEOUT_S)
            if child.exitcode != -signal.SIGKILL:  # it ended on its own meanwhile
                assert self.finish(child, name, 0)
                break
            child.close()
            if self.spec.startswith("redis:"):  # the killed program's lease must expire
                time.sleep(_kill_child.REDIS_LEASE_S)
            self.kills += 1
            records = _records(self.spec, run_id)
            started = {r.key for r in records if r.kind == "tool" and r.status == "started"}
            started_at_kill |= started
            self.kills_in_tool_calls += bool(started)
            self.kills_after_new_records += len(records) > before
            before = len(records)
            last = max(records, key=lambda r: r.seq, default=None)
            self.kills_after[f"{last.kind} {last.status}" if last else "nothing"] += 1
        else:
            pytest.fail(f"series {name} did not finish in {MAX_STARTS} starts")
        self.check(name, run_id, started_at_kill)

    def check(self, name: str, run_id: str, started_at_kill: set[str]) -> None:
        final, effects = self.result(name)
        records = _records(self.spec, run_id)
        assert {r.status for r in records} == {"done"}, [r for r in records if r.status != "done"]
        draw = next(r for r in records if r.key == "order#1")
        reference, reference_effects = self.reference(final["order"], draw)
        cut = {r.key for r in records if r.kind == "tool" and CUT_OFF_TEXT in json.dumps(r.payload)}
        # A tool call is cut off exactly when a kill left it started and not done.
        assert cut == started_at_kill
        # A tool call's key ends "/tool:<id>#<n>" (its n-th call with that id: here always 1).
        cut_ids = {key.rpartition("/tool:")[2].rpartition("#")[0] for key in cut}
        assert _restore(final, cut_ids) == reference
        ran = Counter(effects)
        assert set(ran) <= set(reference_effects), ran
        for entry in reference_effects:
            if entry in cut_ids:
                assert ran[entry] <= 1, f"cut-off {entry} ran {ran[entry]} times"
                self.cut_off_after_effect += ran[entry]
                self.cut_off_before_effect += 1 - ran[entry]
            else:
                assert ran[entry] == 1, f"{entry} ran {ran[entry]} times"

    def summary(self) -> str:
        cut = self.cut_off_after_effect + self.cut_off_before_effect
        return (
            f"{self.backend}/{self.spec.partition(':')[0]}: {self.kills} kills in {self.series} "
            f"series ({self.starts} starts; program {self.running:.2f} s after "
            f"{self.startup:.2f} s of start-up), {self.kills_after_new_records} after the "
            f"store gained records "
            f"(the others before the first new record: during a replay or its next step), "
            f"{self.kills_in_tool_calls} with a tool call running; {cut} tool calls cut off "
            f"({self.cut_off_after_effect} after their side effect, "
            f"{self.cut_off_before_effect} before); last record at each kill: "
            f"{dict(self.kills_after)}"
        )


def _restore(final: dict[str, Any], cut_ids: set[str]) -> dict[str, Any]:
    """*final* with the result of each cut-off call as an uninterrupted run has it (after
    checking that each one reads CUT_OFF_TEXT, once, in its agent's memory)."""
    restored = json.loads(json.dumps(final))
    for call_id in cut_ids:
        agent = call_id.rpartition("-")[0]
        spots = [
            entry
            for entry in restored["memories"][agent]
            if entry[2] == f"result {call_id}: {CUT_OFF_TEXT}"
        ]
        assert len(spots) == 1, (call_id, restored["memories"][agent])
        spots[0][2] = f"result {call_id}: noted {call_id}"
    return restored


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_durable_run_killed_at_random_instants_ends_as_an_uninterrupted_one(
    backend: str, store_spec: str, tmp_path: Path
) -> None:
    harness = Harness(backend, store_spec, tmp_path)
    harness.calibrate()
    kills = _kills(store_spec.partition(":")[0])
    while harness.kills < kills:
        harness.run_series()
    print(harness.summary())
    assert harness.kills_after_new_records > 0  # kills landed in live steps, not only replays
