"""RayEvaluator on a local Ray cluster: same results as GeneralEvaluator, spread over actors,
failures recorded, resume. Kept few and small (each run starts actors)."""

# The tests read the results folder between runs and watch it during one (to cancel at a
# known point): small blocking reads are fine there.
# ruff: noqa: ASYNC110, ASYNC240

from __future__ import annotations

import importlib
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.evaluate import FileEvaluatorStorage, GeneralEvaluator, RayEvaluator
from agentscope_rt.exception import EvaluationError
from tests.distributed._two_loops import run_two_loops

from ._sums import Sums, dying_on_t2, failing_on_t2, hanging_on_t3, solution_with_pid

TASKS = [(f"t{i}", i, 2 * i) for i in range(1, 9)]


def _read(folder: Path) -> dict[str, Any]:
    """Every stored JSON file without timestamps and pids (which differ run to run)."""
    tree: dict[str, Any] = {}
    for path in sorted(folder.rglob("*.json")):
        data = json.loads(path.read_text("utf-8"))
        if isinstance(data, dict):
            data.pop("created_at", None)
            if isinstance(data.get("meta"), dict):
                data["meta"].pop("pid", None)
        tree[path.relative_to(folder).as_posix()] = data
    return tree


def _pids(folder: Path) -> set[int]:
    return {json.loads(p.read_text("utf-8"))["meta"]["pid"] for p in folder.rglob("solution.json")}


async def test_ray_spreads_pairs_over_actors_and_matches_the_general_evaluator(
    tmp_path: Path, ray_cluster: Any
) -> None:
    bench = Sums(TASKS)
    general = GeneralEvaluator(
        "e", bench, 2, FileEvaluatorStorage(tmp_path / "g"), n_workers=4, progress=False
    )
    await general.run(solution_with_pid)
    ray_eval = RayEvaluator(
        "e", bench, 2, FileEvaluatorStorage(tmp_path / "r"), n_workers=4, progress=False
    )
    with anyio.fail_after(120):
        await ray_eval.run(solution_with_pid)

    assert _read(tmp_path / "r") == _read(tmp_path / "g")
    pids = _pids(tmp_path / "r")
    assert len(pids) == 2 and os.getpid() not in pids  # two actors (two CPUs), not this process
    stats = json.loads((tmp_path / "r" / "t3" / "1" / "stats.json").read_text("utf-8"))
    assert stats["llm"] == {"scripted-model": 1} and stats["tool"] == {"add": 1}


async def test_ray_records_a_failure_goes_on_and_the_next_run_resumes(
    tmp_path: Path, ray_cluster: Any
) -> None:
    storage = FileEvaluatorStorage(tmp_path)
    evaluator = RayEvaluator("e", Sums(TASKS[:4]), 1, storage, n_workers=2, progress=False)
    with anyio.fail_after(120):
        await evaluator.run(failing_on_t2)
    error = json.loads((tmp_path / "t2" / "0" / "error.json").read_text("utf-8"))
    assert (error["type"], error["message"]) == ("ValueError", "t2 is broken")
    assert len(list(tmp_path.rglob("solution.json"))) == 3

    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("solution.json")}
    with anyio.fail_after(120):
        await evaluator.run(solution_with_pid)
    assert not (tmp_path / "t2" / "0" / "error.json").exists()
    assert all(p.stat().st_mtime_ns == t for p, t in before.items())  # finished pairs untouched
    assert len(list(tmp_path.rglob("solution.json"))) == 4


async def test_cancelling_a_ray_run_stops_it_and_the_next_run_does_the_rest(
    tmp_path: Path, ray_cluster: Any
) -> None:
    storage = FileEvaluatorStorage(tmp_path)
    evaluator = RayEvaluator("e", Sums(TASKS[:4]), 1, storage, n_workers=2, progress=False)

    async def cancel_when_three_are_stored(scope: anyio.CancelScope) -> None:
        while len(list(tmp_path.rglob("solution.json"))) < 3:
            await anyio.sleep(0.05)
        scope.cancel()

    with anyio.fail_after(120):  # a Ray task that ignored cancellation would hang here
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_when_three_are_stored, tg.cancel_scope)
            await evaluator.run(hanging_on_t3)
    done = {p.parent.parent.name for p in tmp_path.rglob("solution.json")}
    assert done == {"t1", "t2", "t4"}
    assert not list(tmp_path.rglob("error.json"))

    with anyio.fail_after(120):
        await evaluator.run(solution_with_pid)
    pids = {
        json.loads(p.read_text("utf-8"))["meta"].get("pid") for p in tmp_path.rglob("solution.json")
    }
    assert len(pids - {None}) == 1  # only t3 ran again (the others have no pid in meta)


def test_the_evaluator_works_in_one_event_loop_after_another(tmp_path: Path) -> None:
    # A new process with its own Ray cluster, started by the evaluator under asyncio and used
    # again under trio (tests/distributed/_two_loops.py).
    lines = run_two_loops("evaluator", tmp_path)
    assert lines == ["asyncio: ['t1', 't2', 't3']", "trio: ['t1', 't2', 't3']"]


_DRIVER_ONLY_MODULE = """
import os

from agentscope_rt.evaluate import (
    BenchmarkBase, MetricBase, MetricResult, MetricType, SolutionOutput, Task,
)


class Exact(MetricBase):
    def __init__(self, expected):
        super().__init__("exact", MetricType.NUMERICAL)
        self.expected = expected

    async def __call__(self, solution):
        return MetricResult(name="exact", result=int(solution.output == self.expected))


class Doubles(BenchmarkBase):
    def __init__(self):
        super().__init__("doubles", "double a number")
        self.tasks = [Task(f"d{i}", i, 2 * i, [Exact(2 * i)]) for i in range(4)]

    def __iter__(self):
        return iter(self.tasks)

    def __len__(self):
        return len(self.tasks)

    def __getitem__(self, index):
        return self.tasks[index]


async def double(task, hook):
    return SolutionOutput(True, 2 * task.input, [], meta={"pid": os.getpid()})
"""


async def test_a_solution_in_a_module_only_this_process_can_import_reaches_the_actors(
    tmp_path: Path, ray_cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A folder on this process's path only (not the workers' current folder, script folder
    # or PYTHONPATH): the workers cannot import the module unless it is sent to them.
    folder = tmp_path / "code"
    folder.mkdir()
    name = f"driver_only_{uuid.uuid4().hex[:12]}"
    (folder / f"{name}.py").write_text(_DRIVER_ONLY_MODULE, "utf-8")
    monkeypatch.syspath_prepend(str(folder))
    module = importlib.import_module(name)
    monkeypatch.delitem(sys.modules, name)  # put back as it was when the test ends
    monkeypatch.setitem(sys.modules, name, module)
    # When this process's PYTHONPATH names the folder, the evaluator takes the workers to
    # have it (as those of a cluster this process starts do) and sends nothing; this
    # cluster's workers were started without it: the actors cannot be built, and the run
    # fails at once with an error naming the module.
    refused = RayEvaluator(
        "e", module.Doubles(), 1, FileEvaluatorStorage(tmp_path / "r"), n_workers=2, progress=False
    )
    with monkeypatch.context() as patch:
        patch.setenv("PYTHONPATH", str(folder))
        with anyio.fail_after(120), pytest.raises(EvaluationError, match=f"module named '{name}'"):
            await refused.run(module.double)

    # Left to the evaluator, the module is sent by value.
    storage = FileEvaluatorStorage(tmp_path / "out")
    evaluator = RayEvaluator("e", module.Doubles(), 1, storage, n_workers=2, progress=False)
    with anyio.fail_after(120):
        await evaluator.run(module.double)
    result = json.loads((tmp_path / "out" / "evaluation_result.json").read_text("utf-8"))
    assert result["repeats"]["0"]["completed_ids"] == ["d0", "d1", "d2", "d3"]
    assert result["repeats"]["0"]["failed_ids"] == []
    assert os.getpid() not in _pids(tmp_path / "out")


async def test_an_actor_that_dies_is_an_evaluation_error_naming_its_task(
    tmp_path: Path, ray_cluster: Any
) -> None:
    storage = FileEvaluatorStorage(tmp_path)
    evaluator = RayEvaluator(
        "e", Sums(TASKS[:3]), 1, storage, n_workers=1, n_actors=1, progress=False
    )
    caught: list[BaseException] = []
    with anyio.fail_after(120):
        try:
            await evaluator.run(dying_on_t2)
        except* EvaluationError as group:
            caught += group.exceptions
    assert len(caught) == 1 and "task 't2' (repeat 0) died" in str(caught[0])
    assert (tmp_path / "t1" / "0" / "solution.json").exists()  # stored before it died
