"""GeneralEvaluator: bounded concurrency, failures recorded and retried, resume, progress."""

# The tests read the results folder between runs: small blocking reads are fine there.
# ruff: noqa: ASYNC230, ASYNC240

from __future__ import annotations

import io
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentscope_rt.evaluate import (
    ArithmeticBenchmark,
    FileEvaluatorStorage,
    GeneralEvaluator,
    RetryPolicy,
    SolutionOutput,
    Task,
)
from agentscope_rt.exception import EvaluationError

from ._sums import Sums

TASKS = [(f"t{i}", i, 1) for i in range(8)]


def _answer(task: Task) -> SolutionOutput:
    return SolutionOutput(True, task.input["a"] + task.input["b"], [])


def _evaluator(folder: Path, n_workers: int = 3, **kwargs: Any) -> GeneralEvaluator:
    kwargs.setdefault("progress", False)
    storage = FileEvaluatorStorage(folder)
    return GeneralEvaluator("e", Sums(TASKS), 1, storage, n_workers=n_workers, **kwargs)


def _stored_pairs(folder: Path) -> set[str]:
    return {p.parent.relative_to(folder).as_posix() for p in folder.rglob("solution.json")}


async def test_n_workers_solutions_run_at_once_and_no_more(tmp_path: Path) -> None:
    active, peak = 0, 0
    three_running = anyio.Event()

    async def solution(task: Task, hook: Any) -> SolutionOutput:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        if active == 3:
            three_running.set()
        # Nobody finishes before three run side by side (a one-at-a-time evaluator hangs).
        await three_running.wait()
        await anyio.lowlevel.checkpoint()
        active -= 1
        return _answer(task)

    with anyio.fail_after(30):
        await _evaluator(tmp_path, n_workers=3).run(solution)
    assert peak == 3
    assert len(_stored_pairs(tmp_path)) == len(TASKS)


async def test_a_failing_or_hanging_solution_is_recorded_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    async def solution(task: Task, hook: Any) -> SolutionOutput:
        if task.id == "t2":
            raise ValueError("the model said no")
        if task.id == "t5":
            await anyio.sleep_forever()
        if task.id == "t6":
            return "not an output"  # type: ignore[return-value]
        return _answer(task)

    with anyio.fail_after(30):
        await _evaluator(tmp_path, timeout=0.2).run(solution)

    assert _stored_pairs(tmp_path) == {f"t{i}/0" for i in (0, 1, 3, 4, 7)}
    errors = {
        p.parent.parent.name: json.loads(p.read_text("utf-8")) for p in tmp_path.rglob("error.json")
    }
    assert {k: (e["type"], e["attempts"], e["stage"]) for k, e in errors.items()} == {
        "t2": ("ValueError", 1, "solution"),
        "t5": ("TimeoutError", 1, "solution"),
        "t6": ("EvaluationError", 1, "solution"),
    }
    assert errors["t2"]["message"] == "the model said no"
    assert "0.2 s" in errors["t5"]["message"]
    assert "returned str, not a SolutionOutput" in errors["t6"]["message"]
    result = json.loads((tmp_path / "evaluation_result.json").read_text("utf-8"))["repeats"]["0"]
    assert result["failed_ids"] == ["t2", "t5", "t6"]
    assert result["incomplete_ids"] == ["t2", "t5", "t6"]
    assert result["completed_tasks"] == 5

    # The next run tries the failed pairs again, and only them; success clears the error.
    calls: list[str] = []

    async def fixed(task: Task, hook: Any) -> SolutionOutput:
        calls.append(task.id)
        return _answer(task)

    await _evaluator(tmp_path, timeout=0.2).run(fixed)
    assert sorted(calls) == ["t2", "t5", "t6"]
    assert not list(tmp_path.rglob("error.json"))
    assert len(_stored_pairs(tmp_path)) == len(TASKS)


class Flaky(Exception):
    pass


async def test_failures_marked_transient_are_retried_with_backoff(tmp_path: Path) -> None:
    attempts: Counter[str] = Counter()

    async def solution(task: Task, hook: Any) -> SolutionOutput:
        attempts[task.id] += 1
        if task.id == "t1" and attempts["t1"] < 3:
            raise Flaky("rate limited")
        if task.id == "t2":
            raise Flaky("always down")
        if task.id == "t3":
            raise KeyError("a bug, not transient")
        return _answer(task)

    retry = RetryPolicy(max_retries=2, retry_on=(Flaky,), initial_delay=0.01)
    await _evaluator(tmp_path, retry=retry).run(solution)

    assert attempts["t1"] == 3 and attempts["t2"] == 3 and attempts["t3"] == 1
    assert "t1/0" in _stored_pairs(tmp_path)
    t2 = json.loads((tmp_path / "t2" / "0" / "error.json").read_text("utf-8"))
    assert (t2["type"], t2["attempts"]) == ("Flaky", 3)


def test_a_retry_policy_waits_longer_each_time_up_to_its_cap() -> None:
    policy = RetryPolicy(max_retries=5, retry_on=lambda e: "429" in str(e), initial_delay=0.5)
    assert [policy.delay(n) for n in (1, 2, 3, 8)] == [0.5, 1.0, 2.0, 30.0]
    assert policy.is_transient(RuntimeError("HTTP 429")) and not policy.is_transient(KeyError())
    with pytest.raises(EvaluationError, match="retry_on"):
        RetryPolicy(retry_on="ValueError")  # type: ignore[arg-type]
    with pytest.raises(EvaluationError, match="max_retries"):
        RetryPolicy(max_retries=-1)


async def test_a_cancelled_run_keeps_what_finished_and_the_next_run_does_only_the_rest(
    tmp_path: Path,
) -> None:
    first: list[str] = []
    with anyio.CancelScope() as scope:

        async def solution(task: Task, hook: Any) -> SolutionOutput:
            first.append(task.id)
            if task.id == "t4":
                scope.cancel()
                await anyio.sleep_forever()
            return _answer(task)

        await _evaluator(tmp_path, n_workers=2).run(solution)
    assert scope.cancelled_caught

    done = _stored_pairs(tmp_path)
    assert done and "t4/0" not in done
    assert not list(tmp_path.rglob("error.json"))  # a cancelled pair did not fail
    assert not list(tmp_path.rglob("*.tmp"))  # no half-written file
    assert not (tmp_path / "evaluation_result.json").exists()

    second: list[str] = []

    async def rest(task: Task, hook: Any) -> SolutionOutput:
        second.append(task.id)
        return _answer(task)

    await _evaluator(tmp_path, n_workers=2).run(rest)
    assert sorted(f"{t}/0" for t in second) == sorted({f"t{i}/0" for i in range(8)} - done)
    assert len(_stored_pairs(tmp_path)) == len(TASKS)


async def test_a_stored_solution_missing_a_metric_result_is_measured_not_solved_again(
    tmp_path: Path,
) -> None:
    async def solution(task: Task, hook: Any) -> SolutionOutput:
        return _answer(task)

    await _evaluator(tmp_path).run(solution)
    (tmp_path / "t3" / "0" / "evaluation" / "distance.json").unlink()

    async def must_not_run(task: Task, hook: Any) -> SolutionOutput:
        raise AssertionError(task.id)

    await _evaluator(tmp_path).run(must_not_run)
    assert (tmp_path / "t3" / "0" / "evaluation" / "distance.json").exists()
    assert not list(tmp_path.rglob("error.json"))


def _read_all(fd: int) -> str:
    """Everything written to the terminal so far (a pty hands it over in pieces)."""
    os.set_blocking(fd, False)
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # nothing more: would block, or EIO once the terminal side is closed
            return b"".join(chunks).decode()
        if not chunk:
            return b"".join(chunks).decode()
        chunks.append(chunk)


async def test_the_progress_bar_draws_on_a_terminal_and_nowhere_else(tmp_path: Path) -> None:
    async def solution(task: Task, hook: Any) -> SolutionOutput:
        if task.id == "t1":
            raise ValueError("no")
        return _answer(task)

    quiet = io.StringIO()
    await _evaluator(tmp_path / "a", progress=quiet).run(solution)
    assert quiet.getvalue() == ""

    controller, terminal = os.openpty()
    try:
        with open(terminal, "w", encoding="utf-8") as stream:
            await _evaluator(tmp_path / "b", progress=stream).run(solution)
        drawn = _read_all(controller)
    finally:
        os.close(controller)
    assert drawn.rstrip().endswith("done 7 failed 1 remaining 0")
    assert drawn.startswith("\re [")


async def test_the_shipped_benchmark_scores_a_perfect_and_a_wrong_solver(tmp_path: Path) -> None:
    from agentscope_rt.evaluate import evaluate_expression

    async def solver(task: Task, hook: Any) -> SolutionOutput:
        value = evaluate_expression(task.input["expression"])
        return SolutionOutput(True, str(value) if task.tags["difficulty"] != "hard" else 0, [])

    storage = FileEvaluatorStorage(tmp_path)
    bench = ArithmeticBenchmark()
    await GeneralEvaluator("a", bench, 1, storage, n_workers=4, progress=False).run(solver)
    result = json.loads((tmp_path / "evaluation_result.json").read_text("utf-8"))["repeats"]["0"]
    assert result["metrics"]["correct"]["aggregation"] == {
        "correct": 24 / 36,
        "incorrect": 12 / 36,
    }
    assert result["metrics"]["abs_error"]["aggregation"]["min"] == 0.0
    assert len(bench) == 36 and len({t.id for t in bench}) == 36


def test_evaluate_expression_refuses_what_is_not_integer_arithmetic() -> None:
    from agentscope_rt.evaluate import evaluate_expression

    assert evaluate_expression("(17 - 5) * (23 + 19) - 100") == 404
    for bad in ("__import__('os')", "2 ** 1000", "1 / 2", "7 // 0", "x + 1", "1 +"):
        with pytest.raises(ValueError):
            evaluate_expression(bad)


def test_bad_arguments_are_refused_with_clear_errors(tmp_path: Path) -> None:
    storage = FileEvaluatorStorage(tmp_path)
    with pytest.raises(EvaluationError, match="n_workers must be an int >= 1"):
        GeneralEvaluator("e", Sums(), 1, storage, n_workers=0)
    with pytest.raises(EvaluationError, match="n_repeat must be an int >= 1"):
        GeneralEvaluator("e", Sums(), 0, storage, n_workers=1)
    with pytest.raises(EvaluationError, match="benchmark must be a BenchmarkBase"):
        GeneralEvaluator("e", [], 1, storage, n_workers=1)  # type: ignore[arg-type]
    with pytest.raises(EvaluationError, match="timeout must be > 0"):
        GeneralEvaluator("e", Sums(), 1, storage, n_workers=1, timeout=0)
    with pytest.raises(EvaluationError, match=r"task id '\.\./x' cannot name a file"):
        Task(id="../x", input=None, ground_truth=None, metrics=[])
    with pytest.raises(EvaluationError, match="Categories must be provided"):
        from ._sums import Correct

        class NoCategories(Correct):
            def __init__(self) -> None:
                super(Correct, self).__init__("c", "category")

        NoCategories()
    with pytest.raises(EvaluationError, match="metric name 'a/b' cannot name a file"):

        class Slash(Correct):
            def __init__(self) -> None:
                super(Correct, self).__init__("a/b", "numerical")

        Slash()


async def test_two_tasks_with_one_id_are_refused_before_anything_runs(tmp_path: Path) -> None:
    storage = FileEvaluatorStorage(tmp_path)
    evaluator = GeneralEvaluator("e", Sums([("t", 1, 1), ("t", 2, 2)]), 1, storage, n_workers=1)
    with pytest.raises(EvaluationError, match="two tasks with id 't'"):
        await evaluator.run(Sums.__call__)  # type: ignore[arg-type]
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


async def test_a_corrupt_stored_solution_is_named_and_left_alone(tmp_path: Path) -> None:
    async def solution(task: Task, hook: Any) -> SolutionOutput:
        return _answer(task)

    await _evaluator(tmp_path).run(solution)
    broken = tmp_path / "t1" / "0" / "solution.json"
    broken.write_text('{"success": true, "out', encoding="utf-8")
    with pytest.raises(EvaluationError, match=r"t1/0/solution\.json is not valid JSON"):
        await _evaluator(tmp_path).run(solution)
    assert broken.read_text("utf-8") == '{"success": true, "out'


async def test_outputs_and_results_that_cannot_be_stored_are_failures_not_crashes(
    tmp_path: Path,
) -> None:
    from agentscope_rt.evaluate import MetricBase, MetricResult

    class Unstorable(MetricBase):
        def __init__(self) -> None:
            super().__init__("unstorable", "numerical")

        async def __call__(self, solution: SolutionOutput) -> MetricResult:
            return MetricResult("unstorable", 1.0, metadata={"set": {1, 2}})

    bench = Sums(TASKS[:4])
    bench.tasks[3].metrics.append(Unstorable())

    async def solution(task: Task, hook: Any) -> SolutionOutput:
        if task.id == "t0":
            return SolutionOutput(True, object(), [])
        if task.id == "t1":
            return SolutionOutput(True, 1, [{"type": "text"}])  # type: ignore[list-item]
        if task.id == "t2":
            raise TimeoutError("the provider's own timeout")
        return _answer(task)

    storage = FileEvaluatorStorage(tmp_path)
    evaluator = GeneralEvaluator("e", bench, 1, storage, n_workers=2, timeout=60, progress=False)
    await evaluator.run(solution)
    errors = {
        p.parent.parent.name: json.loads(p.read_text("utf-8")) for p in tmp_path.rglob("error.json")
    }
    assert {k: (e["stage"], e["type"]) for k, e in errors.items()} == {
        "t0": ("solution", "MessageFormatError"),
        "t1": ("solution", "EvaluationError"),
        "t2": ("solution", "TimeoutError"),
        "t3": ("metric unstorable", "MessageFormatError"),
    }
    assert errors["t2"]["message"] == "the provider's own timeout"
    assert "trajectory[0]" in errors["t1"]["message"]
    # t3's solution and its first two metric results are kept; only the metrics run again.
    assert (tmp_path / "t3" / "0" / "solution.json").exists()
