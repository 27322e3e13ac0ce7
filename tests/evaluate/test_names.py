"""Names that become files: refused up front, naming the task, before any solution runs; a
metric result that cannot be stored is a failed pair and the run goes on. Both evaluators."""

# The tests read the results folder between runs: small blocking reads are fine there.
# ruff: noqa: ASYNC240

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.evaluate import (
    EvaluatorBase,
    FileEvaluatorStorage,
    GeneralEvaluator,
    RayEvaluator,
    SolutionOutput,
    Task,
)
from agentscope_rt.exception import EvaluationError

from ._sums import Sums, solution_naming_its_task, with_badly_named_result

TASKS = [("t1", 1, 2), ("t2", 3, 4), ("t3", 5, 6)]


def _evaluator(kind: str, bench: Sums, folder: Path) -> EvaluatorBase:
    storage = FileEvaluatorStorage(folder)
    if kind == "general":
        return GeneralEvaluator("e", bench, 1, storage, n_workers=2, progress=False)
    return RayEvaluator("e", bench, 1, storage, n_workers=2, progress=False)


def test_a_task_id_longer_than_a_file_name_is_refused_when_the_task_is_built() -> None:
    with pytest.raises(EvaluationError, match=r"task id 'xxx.*300 bytes long") as info:
        Task(id="x" * 300, input=None, ground_truth=None, metrics=[])
    assert len(str(info.value)) < 300  # the id is cut short in the message
    with pytest.raises(EvaluationError, match=r"task id 'é{5}.*256 bytes"):
        Task(id="é" * 128, input=None, ground_truth=None, metrics=[])  # 128 characters
    Task(id="é" * 127, input=None, ground_truth=None, metrics=[])


@pytest.mark.parametrize("kind", ["general", "ray"])
@pytest.mark.parametrize("bad_id", ["evaluation_meta.json", "evaluation_result.json", "y" * 300])
async def test_a_task_id_the_storage_cannot_use_stops_the_run_before_any_solution_runs(
    tmp_path: Path, kind: str, bad_id: str
) -> None:
    bench = Sums(TASKS)
    # A task's id may change after it was built: the run checks again.
    bench.tasks[1].id = bad_id
    ran: list[str] = []

    async def solution(task: Task, hook: Any) -> SolutionOutput:
        ran.append(task.id)
        return SolutionOutput(True, 0, [])

    evaluator = _evaluator(kind, bench, tmp_path)
    with anyio.fail_after(120), pytest.raises(EvaluationError, match=r"task id '(evalu|yyy)"):
        await evaluator.run(solution)
    assert ran == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["general", "ray"])
async def test_a_metric_result_that_cannot_be_stored_fails_its_pair_and_the_run_goes_on(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    if kind == "ray":
        request.getfixturevalue("ray_cluster")
    evaluator = _evaluator(kind, with_badly_named_result(Sums(TASKS), "t2"), tmp_path)
    with anyio.fail_after(120):
        await evaluator.run(solution_naming_its_task)

    error = json.loads((tmp_path / "t2" / "0" / "error.json").read_text("utf-8"))
    assert error["stage"] == "metric named" and error["type"] == "EvaluationError"
    assert "result named 'a/b'" in error["message"]
    result = json.loads((tmp_path / "evaluation_result.json").read_text("utf-8"))
    assert result["repeats"]["0"]["failed_ids"] == ["t2"]
    stored = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("named.json")}
    assert stored == {"t1/0/evaluation/named.json", "t3/0/evaluation/named.json"}
