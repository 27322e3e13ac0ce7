"""The names an evaluation's storage makes files and folders of (task ids, repeat ids, metric
names), checked by the package's one file-name check with this package's error type."""

from __future__ import annotations

from collections.abc import Collection

from .._file_names import NAME_MAX_BYTES, check_file_name
from ..exception import EvaluationError

__all__ = ["METRIC_NAME_MAX_BYTES", "check_metric_name", "check_repeat_id", "check_task_id"]

# What FileEvaluatorStorage adds to a metric's name: ".json", and while the file is written a
# temporary suffix ".{pid}-{thread id}.tmp" (at most 7 and 20 digits).
_TEMPORARY_SUFFIX = len(".4194304-18446744073709551615.tmp")
METRIC_NAME_MAX_BYTES = NAME_MAX_BYTES - len(".json") - _TEMPORARY_SUFFIX
"""The longest metric name, in UTF-8 bytes (its result file is ``{name}.json``)."""


def check_task_id(task_id: object, reserved: Collection[str] = ()) -> str:
    """*task_id*, when it can name the task's folder.

    :param reserved: the storage's own file names beside the task folders.
    :raises EvaluationError: naming the id (cut short) and what is wrong with it.
    """
    return check_file_name(
        task_id,
        "task id",
        EvaluationError,
        reserved=reserved,
        advice="give the task an id that is a plain name of at most 255 bytes",
    )


def check_repeat_id(repeat_id: object) -> str:
    """*repeat_id*, when it can name a folder.

    :raises EvaluationError: naming the id and what is wrong with it.
    """
    return check_file_name(repeat_id, "repeat id", EvaluationError, advice="use '0', '1', ...")


def check_metric_name(name: object) -> str:
    """*name*, when it can name a metric's result file.

    :raises EvaluationError: naming the metric (cut short) and what is wrong with its name.
    """
    return check_file_name(
        name,
        "metric name",
        EvaluationError,
        max_bytes=METRIC_NAME_MAX_BYTES,
        advice=f"rename the metric: a plain name of at most {METRIC_NAME_MAX_BYTES} bytes",
    )
