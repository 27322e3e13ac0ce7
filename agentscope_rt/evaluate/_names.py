"""Names that become file and folder names in an evaluation's storage."""

from __future__ import annotations

from typing import Any

from ..exception import EvaluationError

_FORBIDDEN = frozenset("/\\\x00")


def check_file_name(name: Any, what: str) -> None:
    """Check that *name* can be one path component on every platform this runs on.

    :raises EvaluationError: for a non-string, an empty name, ``.`` / ``..``, or a name holding
        a path separator or a NUL character.
    """
    if not isinstance(name, str):
        raise EvaluationError(f"{what} must be a str, not {type(name).__name__}")
    if name in ("", ".", "..") or any(ch in _FORBIDDEN for ch in name):
        raise EvaluationError(
            f"{what} {name!r} cannot name a file (it must be non-empty, not '.' or '..', and "
            "hold no '/', '\\' or NUL)"
        )
