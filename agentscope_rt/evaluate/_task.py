"""A benchmark task and the benchmark base class."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ._metric import MetricBase, MetricResult
from ._names import check_task_id
from ._solution import SolutionOutput


@dataclass
class Task:
    """One task of a benchmark (AgentScope's ``Task``).

    :raises EvaluationError: (when built) for an id that cannot name a folder (empty, ``.`` or
        ``..``, holding ``/``, ``\\`` or NUL, or longer than 255 bytes in UTF-8); the id is the
        task's folder in the storage.
    """

    id: str
    """The task's unique id within its benchmark."""
    input: Any
    """The task's input, JSON data."""
    ground_truth: Any
    """The expected answer, JSON data (``None`` when there is none)."""
    metrics: list[MetricBase]
    """The metrics a solution is measured with."""
    tags: dict[str, str] | None = None
    """Tags to group tasks, e.g. ``{"difficulty": "easy"}``."""
    metadata: dict[str, Any] | None = None
    """Anything else the solution may need (not stored in ``task_meta.json``)."""

    def __post_init__(self) -> None:
        check_task_id(self.id)

    async def evaluate(self, solution: SolutionOutput) -> list[MetricResult]:
        """Every metric's result for *solution*, in the order of :attr:`metrics`.

        :raises Exception: whatever a metric raises.
        """
        return [await metric(solution) for metric in self.metrics]

    def meta(self) -> dict[str, Any]:
        """The task as stored in ``task_meta.json`` (AgentScope's form: no ``metadata``)."""
        return {
            "id": self.id,
            "input": self.input,
            "ground_truth": self.ground_truth,
            "metrics": [metric.describe() for metric in self.metrics],
            "tags": self.tags,
        }


class BenchmarkBase(ABC):
    """A benchmark: a named, ordered collection of tasks (AgentScope's ``BenchmarkBase``).

    :param name: the benchmark's name.
    :param description: what it measures.
    """

    name: str
    description: str

    def __init__(self, name: str, description: str) -> None:
        self.name = name
        self.description = description

    @abstractmethod
    def __iter__(self) -> Iterator[Task]:
        """The tasks, in order."""

    @abstractmethod
    def __len__(self) -> int:
        """The number of tasks."""

    @abstractmethod
    def __getitem__(self, index: int) -> Task:
        """The task at *index*."""
