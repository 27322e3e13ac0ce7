"""Where an evaluation keeps its results: AgentScope's storage interface and its file layout."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ..exception import EvaluationError
from ._metric import MetricResult
from ._names import check_metric_name, check_repeat_id, check_task_id
from ._solution import SolutionOutput

PrintHook = Callable[[Any, dict[str, Any]], Awaitable[None] | None]


class EvaluatorStorageBase(ABC):
    """Saves and loads solutions, metric results and statistics so an evaluation can resume
    (AgentScope's ``EvaluatorStorageBase``; every method is synchronous, as there).

    The evaluators call these methods from worker threads, never on the event loop, so an
    implementation may block; it must tolerate calls for different (task, repeat) pairs from
    several threads at once.

    The ``*_error`` methods are this library's: they record a (task, repeat) pair that failed
    so the next run retries it. Their defaults record nothing, so a storage written for
    AgentScope works unchanged.
    """

    @abstractmethod
    def save_solution_result(
        self, task_id: str, repeat_id: str, output: SolutionOutput, **kwargs: Any
    ) -> None:
        """Save a solution's output."""

    @abstractmethod
    def get_evaluation_result(self, task_id: str, repeat_id: str, metric_name: str) -> MetricResult:
        """A stored metric result. :raises FileNotFoundError: when there is none."""

    @abstractmethod
    def save_evaluation_result(
        self, task_id: str, repeat_id: str, evaluation: MetricResult, **kwargs: Any
    ) -> None:
        """Save a metric result."""

    @abstractmethod
    def get_solution_result(self, task_id: str, repeat_id: str, **kwargs: Any) -> SolutionOutput:
        """A stored solution output. :raises FileNotFoundError: when there is none."""

    @abstractmethod
    def solution_result_exists(self, task_id: str, repeat_id: str) -> bool:
        """Whether a solution output is stored for the pair."""

    @abstractmethod
    def evaluation_result_exists(self, task_id: str, repeat_id: str, metric_name: str) -> bool:
        """Whether the metric's result is stored for the pair."""

    @abstractmethod
    def save_aggregation_result(self, aggregation_result: dict[str, Any], **kwargs: Any) -> None:
        """Save the aggregated results of the whole evaluation."""

    @abstractmethod
    def aggregation_result_exists(self, **kwargs: Any) -> bool:
        """Whether aggregated results are stored."""

    @abstractmethod
    def save_evaluation_meta(self, meta_info: dict[str, Any]) -> None:
        """Save what the evaluation is (name, benchmark, repeats)."""

    @abstractmethod
    def save_task_meta(self, task_id: str, meta_info: dict[str, Any]) -> None:
        """Save what a task is."""

    @abstractmethod
    def save_solution_stats(self, task_id: str, repeat_id: str, stats: dict[str, Any]) -> None:
        """Save a solution's statistics (model calls, tokens, tool calls, agent replies)."""

    @abstractmethod
    def get_solution_stats(self, task_id: str, repeat_id: str) -> dict[str, Any]:
        """A solution's statistics. :raises FileNotFoundError: when there are none."""

    @abstractmethod
    def get_agent_pre_print_hook(self, task_id: str, repeat_id: str) -> PrintHook:
        """A ``pre_print`` hook that records what the solution's agents print."""

    def save_solution_error(self, task_id: str, repeat_id: str, error: dict[str, Any]) -> None:
        """Record that the pair failed (*error*: ``type``, ``message``, ``attempts``,
        ``created_at``). The default records nothing."""
        return None

    def get_solution_error(self, task_id: str, repeat_id: str) -> dict[str, Any] | None:
        """The failure recorded for the pair, or ``None``. The default has none."""
        return None

    def clear_solution_error(self, task_id: str, repeat_id: str) -> None:
        """Forget the failure recorded for the pair (it has now succeeded)."""
        return None


class FileEvaluatorStorage(EvaluatorStorageBase):
    """Results in a folder, laid out as AgentScope 1.0.21 lays them out::

        save_dir/
            evaluation_meta.json         what was evaluated
            evaluation_result.json       the aggregation
            {task_id}/
                task_meta.json
                {repeat_id}/
                    solution.json        the SolutionOutput
                    stats.json           model calls, tokens, tool calls, agent replies
                    logging.txt          what the agents printed
                    error.json           only while the pair has failed (this library's)
                    evaluation/{metric_name}.json

    A folder written by AgentScope is read here and the other way round. Every JSON file is
    written whole or not at all (to a temporary file, then renamed), so an interrupted run
    never leaves a truncated result for the next run to trip over.

    Task ids name folders and metric names name files, so every method refuses a task id that
    cannot name a folder or is ``evaluation_meta.json`` / ``evaluation_result.json`` (the
    storage's own files beside the task folders), and a metric name that cannot name a file,
    with :class:`~agentscope_rt.exception.EvaluationError` naming it; the evaluators ask for
    every task's paths before any solution runs.

    :param save_dir: the folder (created when first written).
    """

    SOLUTION_FILE_NAME = "solution.json"
    SOLUTION_STATS_FILE_NAME = "stats.json"
    SOLUTION_ERROR_FILE_NAME = "error.json"
    EVALUATION_DIR_NAME = "evaluation"
    EVALUATION_RESULT_FILE = "evaluation_result.json"
    EVALUATION_META_FILE = "evaluation_meta.json"
    TASK_META_FILE = "task_meta.json"
    AGENT_PRINTING_LOG = "logging.txt"

    def __init__(self, save_dir: str | os.PathLike[str]) -> None:
        self.save_dir = os.path.abspath(os.fspath(save_dir))

    def __repr__(self) -> str:
        return f"FileEvaluatorStorage({self.save_dir!r})"

    # -- paths and files -------------------------------------------------------------------

    def _path(self, task_id: str, repeat_id: str | None, *parts: str) -> str:
        check_task_id(task_id, (self.EVALUATION_META_FILE, self.EVALUATION_RESULT_FILE))
        if repeat_id is not None:
            check_repeat_id(repeat_id)
        components = [task_id, *([repeat_id] if repeat_id is not None else []), *parts]
        return os.path.join(self.save_dir, *components)

    def _write_json(self, path: str, data: Any) -> None:
        text = json.dumps(data, ensure_ascii=False, indent=4)
        # A name of this thread's own (no two threads write one pair's file at once, and a
        # leftover from a killed process is simply overwritten): cheaper than mkstemp's
        # exclusive random names, which cost four times a plain create on this kind of disk.
        tmp = f"{path}.{os.getpid()}-{threading.get_ident()}.tmp"
        try:
            f = open(tmp, "w", encoding="utf-8")  # noqa: SIM115 - closed below, then renamed
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            f = open(tmp, "w", encoding="utf-8")  # noqa: SIM115
        try:
            with f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _read_json(self, path: str, missing: str) -> Any:
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            raise FileNotFoundError(missing) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise EvaluationError(f"{path} is not valid JSON: {exc}") from exc

    @staticmethod
    def _exists(path: str) -> bool:
        return os.path.exists(path) and os.path.getsize(path) > 0

    # -- solutions -------------------------------------------------------------------------

    def save_solution_result(
        self, task_id: str, repeat_id: str, output: SolutionOutput, **kwargs: Any
    ) -> None:
        """Write ``solution.json``.

        :raises MessageFormatError: when the output is not JSON data (nothing is written).
        """
        data = output.to_dict() if isinstance(output, SolutionOutput) else dict(output)
        self._write_json(self._path(task_id, repeat_id, self.SOLUTION_FILE_NAME), data)

    def get_solution_result(self, task_id: str, repeat_id: str, **kwargs: Any) -> SolutionOutput:
        """Read ``solution.json``.

        :raises FileNotFoundError: when it does not exist.
        :raises EvaluationError: when it is not a solution output (naming the file).
        """
        path = self._path(task_id, repeat_id, self.SOLUTION_FILE_NAME)
        data = self._read_json(
            path, f"Solution result for task {task_id} and repeat {repeat_id} not found."
        )
        try:
            return SolutionOutput.from_dict(data)
        except EvaluationError as exc:
            raise EvaluationError(f"{path}: {exc}") from exc

    def solution_result_exists(self, task_id: str, repeat_id: str) -> bool:
        """Whether a non-empty ``solution.json`` exists."""
        return self._exists(self._path(task_id, repeat_id, self.SOLUTION_FILE_NAME))

    # -- metric results --------------------------------------------------------------------

    def _metric_path(self, task_id: str, repeat_id: str, metric_name: str) -> str:
        check_metric_name(metric_name)
        return self._path(task_id, repeat_id, self.EVALUATION_DIR_NAME, f"{metric_name}.json")

    def save_evaluation_result(
        self, task_id: str, repeat_id: str, evaluation: MetricResult, **kwargs: Any
    ) -> None:
        """Write ``evaluation/{metric}.json``."""
        data = evaluation.to_dict() if isinstance(evaluation, MetricResult) else dict(evaluation)
        self._write_json(self._metric_path(task_id, repeat_id, data["name"]), data)

    def get_evaluation_result(self, task_id: str, repeat_id: str, metric_name: str) -> MetricResult:
        """Read ``evaluation/{metric}.json``.

        :raises FileNotFoundError: when it does not exist.
        :raises EvaluationError: when it is not a metric result (naming the file).
        """
        path = self._metric_path(task_id, repeat_id, metric_name)
        data = self._read_json(path, path)
        try:
            return MetricResult.from_dict(data)
        except EvaluationError as exc:
            raise EvaluationError(f"{path}: {exc}") from exc

    def evaluation_result_exists(self, task_id: str, repeat_id: str, metric_name: str) -> bool:
        """Whether a non-empty ``evaluation/{metric}.json`` exists."""
        return self._exists(self._metric_path(task_id, repeat_id, metric_name))

    # -- statistics ------------------------------------------------------------------------

    def save_solution_stats(self, task_id: str, repeat_id: str, stats: dict[str, Any]) -> None:
        """Write ``stats.json`` (replacing an older one: a re-run solution has new figures)."""
        self._write_json(self._path(task_id, repeat_id, self.SOLUTION_STATS_FILE_NAME), stats)

    def get_solution_stats(self, task_id: str, repeat_id: str) -> dict[str, Any]:
        """Read ``stats.json``.

        :raises FileNotFoundError: when it does not exist.
        :raises EvaluationError: when it is not a JSON object.
        """
        path = self._path(task_id, repeat_id, self.SOLUTION_STATS_FILE_NAME)
        data = self._read_json(
            path, f"Solution statistics for task {task_id} and repeat {repeat_id} not found."
        )
        if not isinstance(data, dict):
            raise EvaluationError(f"{path} holds {type(data).__name__}, not an object")
        return data

    # -- failures --------------------------------------------------------------------------

    def save_solution_error(self, task_id: str, repeat_id: str, error: dict[str, Any]) -> None:
        """Write ``error.json``."""
        self._write_json(self._path(task_id, repeat_id, self.SOLUTION_ERROR_FILE_NAME), error)

    def get_solution_error(self, task_id: str, repeat_id: str) -> dict[str, Any] | None:
        """Read ``error.json``, or ``None`` when the pair has no recorded failure."""
        path = self._path(task_id, repeat_id, self.SOLUTION_ERROR_FILE_NAME)
        if not os.path.exists(path):
            return None
        data = self._read_json(path, path)
        return data if isinstance(data, dict) else {"message": str(data)}

    def clear_solution_error(self, task_id: str, repeat_id: str) -> None:
        """Remove ``error.json`` if present."""
        path = self._path(task_id, repeat_id, self.SOLUTION_ERROR_FILE_NAME)
        if os.path.exists(path):
            os.unlink(path)

    # -- the evaluation as a whole ---------------------------------------------------------

    def save_aggregation_result(self, aggregation_result: dict[str, Any], **kwargs: Any) -> None:
        """Write ``evaluation_result.json``."""
        self._write_json(
            os.path.join(self.save_dir, self.EVALUATION_RESULT_FILE), aggregation_result
        )

    def aggregation_result_exists(self, **kwargs: Any) -> bool:
        """Whether a non-empty ``evaluation_result.json`` exists."""
        return self._exists(os.path.join(self.save_dir, self.EVALUATION_RESULT_FILE))

    def get_aggregation_result(self) -> dict[str, Any]:
        """Read ``evaluation_result.json``.

        :raises FileNotFoundError: when it does not exist.
        """
        path = os.path.join(self.save_dir, self.EVALUATION_RESULT_FILE)
        data: dict[str, Any] = self._read_json(path, path)
        return data

    def save_evaluation_meta(self, meta_info: dict[str, Any]) -> None:
        """Write ``evaluation_meta.json``."""
        self._write_json(os.path.join(self.save_dir, self.EVALUATION_META_FILE), meta_info)

    def save_task_meta(self, task_id: str, meta_info: dict[str, Any]) -> None:
        """Write ``{task}/task_meta.json``."""
        self._write_json(self._path(task_id, None, self.TASK_META_FILE), meta_info)

    # -- printing --------------------------------------------------------------------------

    def get_agent_pre_print_hook(self, task_id: str, repeat_id: str) -> PrintHook:
        """A ``pre_print`` hook appending each finished printed message to ``logging.txt``, in
        AgentScope's format (``name: text`` lines, other blocks as indented JSON)."""
        path = self._path(task_id, repeat_id, self.AGENT_PRINTING_LOG)

        def append(text: str) -> None:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "a", encoding="utf-8") as f:
                f.write(text)

        async def pre_print_hook(_agent: Any, kwargs: dict[str, Any]) -> None:
            msg = kwargs.get("msg")
            if msg is None or not kwargs.get("last", False):
                return
            await anyio.to_thread.run_sync(append, printed_text(msg))

        return pre_print_hook


def printed_text(msg: Any) -> str:
    """What AgentScope's print hook writes to ``logging.txt`` for one message."""
    lines: list[str] = []
    for block in msg.get_content_blocks():
        data = block if isinstance(block, dict) else block.to_dict()
        kind = data.get("type")
        if kind == "text":
            lines.append(f"{msg.name}: {data['text']}")
        elif kind == "thinking":
            lines.append(f"{msg.name} (thinking): {data['thinking']}")
        else:
            text = json.dumps(data, ensure_ascii=False, indent=4)
            lines.append(text if lines else f"{msg.name}: {text}")
    return "\n".join(lines) + "\n"
