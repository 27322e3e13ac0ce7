"""Running one (task, repeat) pair: the solution (with timeout and retries) and its metrics.

Both evaluators run pairs through :func:`run_pair`: :class:`GeneralEvaluator` in its own task
group, :class:`RayEvaluator` inside its actors. What comes back (:class:`PairOutcome`) is plain
JSON data, so it crosses process boundaries as is.
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from .._file_names import shown_name
from ..exception import EvaluationError
from ..message import now_timestamp
from ..message.serde import check_json
from ._metric import MetricBase, MetricResult
from ._solution import SolutionOutput
from ._stats import solution_span
from ._storage import PrintHook
from ._task import Task

SolutionFunction = Callable[[Task, PrintHook], Awaitable[SolutionOutput]]
Transient = tuple[type[BaseException], ...] | Callable[[BaseException], bool]


@dataclass(frozen=True)
class RetryPolicy:
    """How often a failed solution is tried again, and after how long.

    Only failures the user marks as transient are retried: exceptions of the classes in
    *retry_on*, or for which *retry_on* (a function) returns true. A timeout is a
    ``TimeoutError``, so ``retry_on=(TimeoutError,)`` retries timed-out runs. The wait before
    attempt *n* + 1 is ``min(initial_delay * 2 ** (n - 1), max_delay)`` seconds.

    :raises EvaluationError: for a negative count or delay, or *retry_on* neither a tuple of
        exception classes nor a callable.
    """

    max_retries: int = 0
    retry_on: Transient = ()
    initial_delay: float = 1.0
    max_delay: float = 30.0

    def __post_init__(self) -> None:
        if not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise EvaluationError(f"max_retries must be an int >= 0, not {self.max_retries!r}")
        if self.initial_delay < 0 or self.max_delay < 0:
            raise EvaluationError("retry delays must be >= 0")
        ok_tuple = isinstance(self.retry_on, tuple) and all(
            isinstance(c, type) and issubclass(c, BaseException) for c in self.retry_on
        )
        if not ok_tuple and not callable(self.retry_on):
            raise EvaluationError(
                f"retry_on must be a tuple of exception classes or a function, not "
                f"{self.retry_on!r}"
            )

    def is_transient(self, exc: BaseException) -> bool:
        """Whether *exc* is marked transient."""
        if isinstance(self.retry_on, tuple):
            return isinstance(exc, self.retry_on)
        return bool(self.retry_on(exc))

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number *attempt* (1-based)."""
        return float(min(self.initial_delay * 2 ** (attempt - 1), self.max_delay))


@dataclass
class PairOutcome:
    """What running one pair produced, as JSON data.

    ``solution`` and ``stats`` are set when the solution ran now (``None`` when it was loaded
    from storage); ``error`` is set when the solution or a metric failed; ``metric_results``
    holds the results of the metrics that ran.
    """

    task_id: str
    repeat_id: str
    solution: dict[str, Any] | None = None
    stats: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    metric_results: list[dict[str, Any]] = field(default_factory=list)


def describe_error(exc: BaseException, stage: str, attempts: int) -> dict[str, Any]:
    """The ``error.json`` record of a failure."""
    return {
        "stage": stage,
        "type": type(exc).__name__,
        "message": str(exc),
        "attempts": attempts,
        "traceback": "".join(traceback.format_exception(exc))[-4000:],
        "created_at": now_timestamp(),
    }


async def _attempt(
    solution: SolutionFunction, task: Task, hook: PrintHook, time_limit: float | None
) -> tuple[dict[str, Any], SolutionOutput]:
    """One run of the solution: its output as stored, and as read back from that (what the
    metrics see, whether the pair runs now or resumes)."""
    if time_limit is None:
        output = await solution(task, hook)
    else:
        with anyio.move_on_after(time_limit) as scope:
            output = await solution(task, hook)
        # Only our own limit is a timeout here; a TimeoutError the solution raised is its own.
        if scope.cancelled_caught:
            raise TimeoutError(f"the solution took longer than {time_limit} s")
    if not isinstance(output, SolutionOutput):
        raise EvaluationError(
            f"the solution returned {type(output).__name__}, not a SolutionOutput"
        )
    data = output.to_dict()
    return data, SolutionOutput.from_dict(data)


async def _solve(
    task: Task,
    repeat_id: str,
    solution: SolutionFunction,
    hook: PrintHook,
    time_limit: float | None,
    retry: RetryPolicy,
    outcome: PairOutcome,
) -> SolutionOutput | None:
    attempt = 0
    restored = None
    with solution_span(task.id, repeat_id) as stats:
        while True:
            attempt += 1
            try:
                outcome.solution, restored = await _attempt(solution, task, hook, time_limit)
                break
            # Cancellation and KeyboardInterrupt are BaseExceptions: they stop the run.
            except Exception as exc:
                if attempt <= retry.max_retries and retry.is_transient(exc):
                    await anyio.sleep(retry.delay(attempt))
                    continue
                outcome.error = describe_error(exc, "solution", attempt)
                break
    outcome.stats = stats
    return restored


async def _measure(
    solution: SolutionOutput, metrics: list[MetricBase], outcome: PairOutcome
) -> None:
    for metric in metrics:
        try:
            result = await metric(solution)
            if not isinstance(result, MetricResult):
                raise EvaluationError(
                    f"metric {metric.name!r} returned {type(result).__name__}, not a MetricResult"
                )
            if result.name != metric.name:
                # The result is stored under its name and looked for under the metric's.
                raise EvaluationError(
                    f"metric {metric.name!r} returned a result named {shown_name(result.name)}: "
                    "name the MetricResult after its metric"
                )
            data = result.to_dict()
            check_json(data, "metric result")
            outcome.metric_results.append(data)
        except Exception as exc:
            outcome.error = describe_error(exc, f"metric {metric.name}", 1)
            return


async def run_pair(
    task: Task,
    repeat_id: str,
    solution: SolutionFunction,
    hook: PrintHook,
    *,
    stored: SolutionOutput | None,
    missing_metrics: list[MetricBase],
    time_limit: float | None,
    retry: RetryPolicy,
) -> PairOutcome:
    """Run the solution (unless *stored* holds its output) and the *missing_metrics* on it.

    A solution that raises, times out or returns something that is not a JSON-able
    :class:`SolutionOutput` is recorded in ``outcome.error`` (after the retries *retry*
    allows); so is a metric that raises, or returns a result that is not a JSON-able
    :class:`MetricResult` named after the metric. Cancellation propagates.
    """
    outcome = PairOutcome(task.id, repeat_id)
    if stored is None:
        stored = await _solve(task, repeat_id, solution, hook, time_limit, retry, outcome)
        if stored is None:
            return outcome
    await _measure(stored, missing_metrics, outcome)
    return outcome
