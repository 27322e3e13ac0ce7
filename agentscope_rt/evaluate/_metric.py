"""Metrics: what a task measures of a solution, and the results they give."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..exception import EvaluationError
from ..message import now_timestamp
from ._names import check_metric_name


@dataclass
class MetricResult:
    """One metric's result for one solution (AgentScope's ``MetricResult``).

    Stored as ``evaluation/{name}.json``; :meth:`to_dict` / :meth:`from_dict` read and write
    AgentScope's JSON form, so results stored by either library load in the other.
    """

    name: str
    """The metric's name."""
    result: str | float | int
    """A category (category metrics) or a number (numerical metrics)."""
    created_at: str = field(default_factory=now_timestamp)
    """When the result was made, ``YYYY-MM-DD HH:MM:SS.mmm`` (local time)."""
    message: str | None = None
    """An optional explanation of the result."""
    metadata: dict[str, Any] | None = None
    """Optional JSON data about the result."""

    def to_dict(self) -> dict[str, Any]:
        """The result as AgentScope stores it."""
        return {
            "name": self.name,
            "result": self.result,
            "created_at": self.created_at,
            "message": self.message,
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, data: Any) -> MetricResult:
        """Build a result from its stored form.

        :raises EvaluationError: when *data* is not a dict with a ``name`` and a ``result``, or
            has keys AgentScope's result does not have.
        """
        if not isinstance(data, dict) or not {"name", "result"} <= data.keys():
            raise EvaluationError(f"a metric result needs 'name' and 'result', got {data!r:.200}")
        unknown = data.keys() - {"name", "result", "created_at", "message", "metadata"}
        if unknown:
            raise EvaluationError(f"a metric result has unknown keys {sorted(unknown)}")
        return cls(**data)

    def __getitem__(self, key: str) -> Any:
        # AgentScope's results are dicts too: result["result"] keeps working.
        return self.to_dict()[key]


class MetricType(StrEnum):
    """How a metric's results are aggregated."""

    CATEGORY = "category"
    """The result is a category, e.g. ``"pass"`` or ``"fail"``: aggregated as shares."""
    NUMERICAL = "numerical"
    """The result is a number, e.g. ``0.95``: aggregated as mean, max and min."""


class MetricBase(ABC):
    """A metric: ``await metric(solution)`` gives a :class:`MetricResult`.

    :param name: the metric's name; it names the result file ``{name}.json``, so it must be a
        plain file name (no ``/``, ``\\`` or NUL, not ``.`` or ``..``) of at most 217 bytes.
    :param metric_type: :attr:`MetricType.CATEGORY` or :attr:`MetricType.NUMERICAL` (or their
        string values).
    :param description: what the metric measures.
    :param categories: the possible categories; required for category metrics.
    :raises EvaluationError: (a ``ValueError``, as AgentScope raises) for a category metric
        without categories, an unknown metric type, or a name that cannot name a file.
    """

    name: str
    metric_type: MetricType
    description: str | None
    categories: list[str] | None

    def __init__(
        self,
        name: str,
        metric_type: MetricType | str,
        description: str | None = None,
        categories: list[str] | None = None,
    ) -> None:
        check_metric_name(name)
        try:
            kind = MetricType(metric_type)
        except ValueError:
            raise EvaluationError(
                f"metric {name!r}: metric_type must be 'category' or 'numerical', "
                f"not {metric_type!r}"
            ) from None
        if kind == MetricType.CATEGORY and categories is None:
            raise EvaluationError("Categories must be provided for category metrics.")
        self.name = name
        self.metric_type = kind
        self.description = description
        self.categories = categories

    @abstractmethod
    async def __call__(self, *args: Any, **kwargs: Any) -> MetricResult:
        """The metric's result for a solution (called as ``await metric(solution)``)."""

    def describe(self) -> dict[str, Any]:
        """The metric as stored in ``task_meta.json``."""
        return {
            "name": self.name,
            "metric_type": self.metric_type.value,
            "description": self.description,
            "categories": self.categories,
        }
