"""Evaluating agents on benchmarks: AgentScope's ``agentscope.evaluate``, run concurrently.

A :class:`BenchmarkBase` yields :class:`Task` objects; a solution, ``async (task,
pre_print_hook) -> SolutionOutput``, solves one; each task's :class:`MetricBase` metrics turn
the output into :class:`MetricResult` values. :class:`GeneralEvaluator` runs up to
``n_workers`` solutions at once in this process, :class:`RayEvaluator` spreads them over a Ray
cluster (the ``ray`` extra); both store results in AgentScope's layout
(:class:`FileEvaluatorStorage`), resume from it, record failures and go on, and count each
solution's model calls, tokens, tool calls and agent replies from the runtime's spans
(:class:`SolutionStatsProcessor`, the ``evaluate`` extra). :class:`ArithmeticBenchmark` is a
small benchmark shipped with the package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._arithmetic import AbsoluteError, ArithmeticBenchmark, ExactAnswer, evaluate_expression
from ._evaluator import EvaluatorBase, GeneralEvaluator
from ._metric import MetricBase, MetricResult, MetricType
from ._run import PairOutcome, RetryPolicy
from ._solution import SolutionOutput
from ._stats import SolutionStatsProcessor, solution_stats_processor
from ._storage import EvaluatorStorageBase, FileEvaluatorStorage
from ._task import BenchmarkBase, Task

if TYPE_CHECKING:
    from ._ray_evaluator import RayEvaluator

__all__ = [
    "AbsoluteError",
    "ArithmeticBenchmark",
    "BenchmarkBase",
    "EvaluatorBase",
    "EvaluatorStorageBase",
    "ExactAnswer",
    "FileEvaluatorStorage",
    "GeneralEvaluator",
    "MetricBase",
    "MetricResult",
    "MetricType",
    "PairOutcome",
    "RayEvaluator",
    "RetryPolicy",
    "SolutionOutput",
    "SolutionStatsProcessor",
    "Task",
    "evaluate_expression",
    "solution_stats_processor",
]


def __getattr__(name: str) -> Any:
    # RayEvaluator's module is light, but it is loaded only when asked for, like Ray itself.
    if name == "RayEvaluator":
        from ._ray_evaluator import RayEvaluator

        return RayEvaluator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
