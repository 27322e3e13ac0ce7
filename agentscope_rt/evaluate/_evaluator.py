"""Evaluators: run a solution on every task of a benchmark, several times, and aggregate."""

from __future__ import annotations

import json
from abc import abstractmethod
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

import anyio

from .._file_names import shown_name
from ..exception import EvaluationError
from ..message import now_timestamp
from ._metric import MetricBase, MetricResult, MetricType
from ._names import check_metric_name, check_task_id
from ._progress import Progress
from ._run import PairOutcome, RetryPolicy, SolutionFunction, run_pair
from ._solution import SolutionOutput
from ._stats import HAVE_SDK, connect_runtime_tracing, empty_stats, solution_stats_processor
from ._storage import EvaluatorStorageBase
from ._task import BenchmarkBase, Task


@dataclass
class PendingPair:
    """A (task, repeat) pair with work left: its stored solution output (``None`` when the
    solution must run) and the metrics without a stored result."""

    task: Task
    repeat_id: str
    stored: SolutionOutput | None
    missing_metrics: list[MetricBase]


def _positive_int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise EvaluationError(f"{what} must be an int >= 1, not {value!r}")
    return value


class EvaluatorBase:
    """Runs an evaluation and aggregates its results (AgentScope's ``EvaluatorBase``).

    :param name: the evaluation's name.
    :param benchmark: the tasks.
    :param n_repeat: how many times each task is solved.
    :param storage: where results are kept; a run resumes from what it holds.
    :param timeout: seconds one solution run may take before it is recorded as failed
        (``None``: no limit). This library's.
    :param retry: which failures are tried again and when (default: none). This library's.
    :param progress: draw a progress bar on standard error when it is a terminal (``True``),
        never (``False``), or on the given stream when that is a terminal. This library's.
    :raises EvaluationError: for a benchmark that is not a :class:`BenchmarkBase`, ``n_repeat``
        below 1, or a timeout that is not positive; from :meth:`run`, before any solution runs,
        for two tasks with one id, or a task id or metric name that cannot name a file (too
        long, a path separator, one of the storage's own file names), naming the task.
    """

    def __init__(
        self,
        name: str,
        benchmark: BenchmarkBase,
        n_repeat: int,
        storage: EvaluatorStorageBase,
        *,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        progress: bool | TextIO = True,
    ) -> None:
        if not isinstance(benchmark, BenchmarkBase):
            raise EvaluationError(
                f"benchmark must be a BenchmarkBase, not {type(benchmark).__name__}"
            )
        if not isinstance(storage, EvaluatorStorageBase):
            raise EvaluationError(
                f"storage must be an EvaluatorStorageBase, not {type(storage).__name__}"
            )
        if timeout is not None and not timeout > 0:
            raise EvaluationError(f"timeout must be > 0 seconds or None, not {timeout!r}")
        self.name = name
        self.benchmark = benchmark
        self.n_repeat = _positive_int(n_repeat, "n_repeat")
        self.storage = storage
        self.timeout = timeout
        self.retry = retry if retry is not None else RetryPolicy()
        self.progress = progress
        # Task meta files still to write in this run (see _prepare).
        self._unwritten_task_meta: dict[str, dict[str, Any]] = {}

    @abstractmethod
    async def run(self, solution: SolutionFunction) -> None:
        """Solve every (task, repeat) pair not already finished in storage, evaluate the
        solutions, then aggregate.

        :param solution: ``async (task, pre_print_hook) -> SolutionOutput``.
        """

    # -- preparing a run -------------------------------------------------------------------

    def _tasks(self) -> list[Task]:
        tasks = list(self.benchmark)
        seen: set[str] = set()
        for task in tasks:
            if not isinstance(task, Task):
                raise EvaluationError(
                    f"benchmark {self.benchmark.name!r} yielded {type(task).__name__}, not a Task"
                )
            # Checked again: a Task's fields may have changed since it was built.
            check_task_id(task.id)
            for metric in task.metrics:
                try:
                    check_metric_name(getattr(metric, "name", None))
                except EvaluationError as exc:
                    raise EvaluationError(f"task {shown_name(task.id)}: {exc}") from None
            if task.id in seen:
                raise EvaluationError(
                    f"benchmark {self.benchmark.name!r} has two tasks with id {shown_name(task.id)}"
                )
            seen.add(task.id)
        return tasks

    def _evaluation_meta(self) -> dict[str, Any]:
        return {
            "evaluation_name": self.name,
            "created_at": now_timestamp(),
            "total_repeats": self.n_repeat,
            "benchmark": {
                "name": self.benchmark.name,
                "description": self.benchmark.description,
                "total_tasks": len(self.benchmark),
            },
            "schema_version": 1,
        }

    def _pending(self, task: Task, repeat_id: str) -> PendingPair | None:
        storage = self.storage
        stored = None
        if storage.solution_result_exists(task.id, repeat_id):
            stored = storage.get_solution_result(task.id, repeat_id)
        if stored is not None and all(
            storage.evaluation_result_exists(task.id, repeat_id, m.name) for m in task.metrics
        ):
            return None
        # As in AgentScope: when one metric result is missing, every metric runs again.
        return PendingPair(task, repeat_id, stored, list(task.metrics))

    def _prepare(self) -> tuple[list[PendingPair], int]:
        """Save the evaluation's meta file; the pairs with work left and the number of pairs
        already finished. Blocking (storage calls).

        A task's ``task_meta.json`` is written with its first pair's results (:meth:`_store`),
        by the threads that store results side by side: written here, one after another,
        they delayed the first solution by a second per 1,000 tasks on this machine's disk.
        """
        tasks = self._tasks()
        pending: list[PendingPair] = []
        finished = 0
        self._unwritten_task_meta = {}
        # Every task's paths are asked for here, before anything runs or is written: an id the
        # storage refuses (one of its own file names) stops the run at once.
        for task in tasks:
            for repeat in range(self.n_repeat):
                pair = self._pending(task, str(repeat))
                if pair is None:
                    finished += 1
                else:
                    pending.append(pair)
                    self._unwritten_task_meta.setdefault(task.id, task.meta())
        self.storage.save_evaluation_meta(self._evaluation_meta())
        return pending, finished

    def _progress_bar(self, total: int, finished: int) -> Progress:
        stream = None if isinstance(self.progress, bool) else self.progress
        return Progress(self.name, total, finished, stream, enabled=self.progress is not False)

    @staticmethod
    def _start_statistics() -> Callable[[], None]:
        """Count the runtime's spans per solution from now on; the returned function stops
        that (and leaves the process's tracing as it was)."""
        if not HAVE_SDK:
            return lambda: None
        return connect_runtime_tracing(solution_stats_processor())

    # -- storing a pair's outcome ----------------------------------------------------------

    def _store(self, outcome: PairOutcome) -> None:
        """Write what a pair produced. Blocking (storage calls)."""
        storage, task_id, repeat_id = self.storage, outcome.task_id, outcome.repeat_id
        # dict.pop is atomic: one of the threads storing this task's pairs writes its meta.
        meta = self._unwritten_task_meta.pop(task_id, None)
        if meta is not None:
            storage.save_task_meta(task_id, meta)
        if outcome.stats is not None:
            storage.save_solution_stats(task_id, repeat_id, outcome.stats)
        if outcome.solution is not None:
            storage.save_solution_result(
                task_id, repeat_id, SolutionOutput.from_dict(outcome.solution)
            )
        for result in outcome.metric_results:
            storage.save_evaluation_result(task_id, repeat_id, MetricResult.from_dict(result))
        if outcome.error is not None:
            storage.save_solution_error(task_id, repeat_id, outcome.error)
        else:
            storage.clear_solution_error(task_id, repeat_id)

    # -- aggregation -----------------------------------------------------------------------

    async def aggregate(self, *, show: bool = True) -> None:
        """Aggregate every stored result into ``evaluation_result.json`` (AgentScope's form,
        plus each repeat's ``failed_ids``: pairs whose last run failed).

        A pair without statistics counts as one that made no call (AgentScope fails there).

        :param show: print the per-metric summary, as AgentScope does.
        """
        result = await anyio.to_thread.run_sync(self._aggregation)
        if show:
            print(_summary(result))
        await anyio.to_thread.run_sync(self.storage.save_aggregation_result, result)

    def _aggregation(self) -> dict[str, Any]:
        tasks = self._tasks()
        total = _new_stats()
        repeats: dict[str, Any] = {}
        for repeat in range(self.n_repeat):
            current = self._repeat_aggregation(tasks, str(repeat))
            repeats[str(repeat)] = current
            _add_stats(total, current["stats"])
        return {
            "total_tasks": len(tasks),
            "total_repeats": self.n_repeat,
            "total_stats": total,
            "repeats": repeats,
            "schema_version": 1,
        }

    def _repeat_aggregation(self, tasks: list[Task], repeat_id: str) -> dict[str, Any]:
        storage = self.storage
        current: dict[str, Any] = {
            "completed_tasks": 0,
            "incomplete_tasks": 0,
            "metrics": {},
            "completed_ids": [],
            "incomplete_ids": [],
            "failed_ids": [],
            "stats": _new_stats(),
        }
        for task in tasks:
            try:
                stats = storage.get_solution_stats(task.id, repeat_id)
            except FileNotFoundError:
                stats = empty_stats()
            _add_stats(current["stats"], stats)
            if storage.get_solution_error(task.id, repeat_id) is not None:
                current["failed_ids"].append(task.id)
            for metric in task.metrics:
                _count_metric(current, storage, task, repeat_id, metric)
        for value in current["metrics"].values():
            value["aggregation"] = _metric_aggregation(value)
        return current

    async def _save_evaluation_meta(self) -> None:
        """AgentScope's name for saving ``evaluation_meta.json``."""
        await anyio.to_thread.run_sync(self.storage.save_evaluation_meta, self._evaluation_meta())

    async def _save_task_meta(self, task: Task) -> None:
        """AgentScope's name for saving a task's ``task_meta.json``."""
        await anyio.to_thread.run_sync(self.storage.save_task_meta, task.id, task.meta())


def _new_stats() -> dict[str, Any]:
    return {"llm": {}, "agent": 0, "tool": {}, "embedding": {}, "chat_usage": {}}


def _add_stats(into: dict[str, Any], stats: dict[str, Any]) -> None:
    for key in ("llm", "tool", "embedding"):
        for name, count in (stats.get(key) or {}).items():
            into[key][name] = into[key].get(name, 0) + count
    into["agent"] += stats.get("agent", 0) or 0
    for model, usage in (stats.get("chat_usage") or {}).items():
        total = into["chat_usage"].setdefault(model, {"input_tokens": 0, "output_tokens": 0})
        total["input_tokens"] += usage.get("input_tokens", 0)
        total["output_tokens"] += usage.get("output_tokens", 0)


def _count_metric(
    current: dict[str, Any],
    storage: EvaluatorStorageBase,
    task: Task,
    repeat_id: str,
    metric: MetricBase,
) -> None:
    entry = current["metrics"].setdefault(
        metric.name,
        {
            "type": metric.metric_type.value,
            "involved_tasks": 0,
            "completed_tasks": 0,
            "incomplete_tasks": 0,
            "aggregation": {},
            "distribution": defaultdict(list) if metric.metric_type == MetricType.CATEGORY else {},
        },
    )
    entry["involved_tasks"] += 1
    if not storage.evaluation_result_exists(task.id, repeat_id, metric.name):
        if task.id not in current["incomplete_ids"]:
            current["incomplete_tasks"] += 1
            current["incomplete_ids"].append(task.id)
        entry["incomplete_tasks"] += 1
        return
    if task.id not in current["completed_ids"]:
        current["completed_tasks"] += 1
        current["completed_ids"].append(task.id)
    entry["completed_tasks"] += 1
    result = storage.get_evaluation_result(task.id, repeat_id, metric.name).result
    if metric.metric_type == MetricType.CATEGORY:
        entry["distribution"][result].append(task.id)
    else:
        entry["distribution"][task.id] = result


def _metric_aggregation(value: dict[str, Any]) -> dict[str, Any]:
    # AgentScope's formulas: shares and the mean are over every involved task, finished or not.
    involved = value["involved_tasks"]
    if value["type"] == MetricType.CATEGORY.value:
        return {cat: len(ids) * 1.0 / involved for cat, ids in value["distribution"].items()}
    scores = list(value["distribution"].values())
    if not scores:
        return {}
    return {"mean": sum(scores) / involved, "max": max(scores), "min": min(scores)}


def _summary(result: dict[str, Any]) -> str:
    lines = []
    for repeat_id, current in result["repeats"].items():
        lines.append(f"Repeat ID: {repeat_id}")
        for metric, value in current["metrics"].items():
            aggregation = json.dumps(value["aggregation"], indent=4, ensure_ascii=False)
            lines += [
                f"\tMetric: {metric}",
                f"\t\tType: {value['type']}",
                f"\t\tInvolved tasks: {value['involved_tasks']}",
                f"\t\tCompleted tasks: {value['completed_tasks']}",
                f"\t\tIncomplete tasks: {value['incomplete_tasks']}",
                "\t\tAggregation: " + aggregation.replace("\n", "\n\t\t"),
            ]
        if current["failed_ids"]:
            lines.append(f"\tFailed: {', '.join(current['failed_ids'])}")
    return "\n".join(lines)


class GeneralEvaluator(EvaluatorBase):
    """Runs up to ``n_workers`` solutions at once in one task group, in this process.

    Each (task, repeat) pair already finished in storage is skipped; a pair whose solution is
    stored but lacks a metric result gets its metrics run again. A solution that raises or
    times out is recorded as failed (``error.json``) after the retries ``retry`` allows, and
    the run goes on; the next run tries it again. Cancelling the run (or Ctrl+C) stops every
    solution in flight; whatever finished is stored whole, so the next run resumes from it.

    :param n_workers: how many solutions run at once.
    :raises EvaluationError: for ``n_workers`` below 1 (and see :class:`EvaluatorBase`).
    """

    def __init__(
        self,
        name: str,
        benchmark: BenchmarkBase,
        n_repeat: int,
        storage: EvaluatorStorageBase,
        n_workers: int,
        *,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        progress: bool | TextIO = True,
    ) -> None:
        super().__init__(
            name, benchmark, n_repeat, storage, timeout=timeout, retry=retry, progress=progress
        )
        self.n_workers = _positive_int(n_workers, "n_workers")

    async def run(self, solution: SolutionFunction) -> None:
        """Solve and evaluate every unfinished pair, then aggregate.

        :raises EvaluationError: before any solution runs, when the benchmark has two tasks
            with one id or a name that cannot name a file (see :class:`EvaluatorBase`); when a
            stored file cannot be read.
        """
        stop_statistics = self._start_statistics()
        try:
            pending, finished = await anyio.to_thread.run_sync(self._prepare)
            progress = self._progress_bar(finished + len(pending), finished)
            limiter = anyio.CapacityLimiter(self.n_workers)
            try:
                async with anyio.create_task_group() as tg:
                    for pair in pending:
                        # Taken before the task starts, so at most n_workers tasks exist at once.
                        borrower = object()
                        await limiter.acquire_on_behalf_of(borrower)
                        tg.start_soon(self._run_pair, pair, solution, limiter, borrower, progress)
            finally:
                progress.close()
        finally:
            stop_statistics()
        await self.aggregate()

    async def _run_pair(
        self,
        pair: PendingPair,
        solution: SolutionFunction,
        limiter: anyio.CapacityLimiter,
        borrower: object,
        progress: Progress,
    ) -> None:
        try:
            hook = self.storage.get_agent_pre_print_hook(pair.task.id, pair.repeat_id)
            outcome = await run_pair(
                pair.task,
                pair.repeat_id,
                solution,
                hook,
                stored=pair.stored,
                missing_metrics=pair.missing_metrics,
                time_limit=self.timeout,
                retry=self.retry,
            )
            await anyio.to_thread.run_sync(self._store, outcome)
            progress.advance(failed=outcome.error is not None)
        finally:
            limiter.release_on_behalf_of(borrower)
