"""Names that become file or folder names: the one check of every such name in the package
(evaluation task ids and metric names, session ids), made when the name is given rather than
when a file is first written, so a bad name fails before any work is done.

A name passes when it can be one path component on the platforms this runs on: a non-empty
string, not ``.`` or ``..``, holding no ``/``, ``\\`` or NUL, encodable as UTF-8 (no lone
surrogate), at most 255 bytes long in UTF-8 (less what the caller appends to it), and none of
the names the caller keeps for its own files.
"""

from __future__ import annotations

from collections.abc import Collection

__all__ = ["NAME_MAX_BYTES", "check_file_name", "file_name_problem", "shown_name"]

NAME_MAX_BYTES = 255
"""The longest file name, in bytes, most file systems allow (ext4, APFS, NTFS in UTF-16 units)."""

_SEPARATORS = {"/": "'/'", "\\": "'\\'", "\x00": "NUL"}
_SHOWN_CHARS = 60


def shown_name(name: object) -> str:
    """*name* as an error message shows it: its ``repr``, cut short when long."""
    text = repr(name)
    if len(text) <= _SHOWN_CHARS:
        return text
    return f"{text[: _SHOWN_CHARS - 3]}... ({len(text)} characters)"


def file_name_problem(
    name: object, *, max_bytes: int | None = NAME_MAX_BYTES, reserved: Collection[str] = ()
) -> str | None:
    """Why *name* cannot be one path component (a phrase), or ``None`` when it can.

    :param max_bytes: the longest the name may be in UTF-8 (``None``: no limit, for a caller
        that shortens long names itself).
    :param reserved: names the caller keeps for its own files.
    """
    if not isinstance(name, str):
        return f"it is a {type(name).__name__}, not a str"
    if not name:
        return "it is empty"
    if name in (".", ".."):
        return "'.' and '..' name folders that exist already"
    bad = [shown for char, shown in _SEPARATORS.items() if char in name]
    if bad:
        return f"it holds {' and '.join(bad)}, which no file name can hold"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "it holds a lone surrogate, which no file name can hold"
    if max_bytes is not None and size > max_bytes:
        return f"it is {size} bytes long in UTF-8, over the {max_bytes} allowed here"
    if name in reserved:
        return "that name is kept for a file of the storage's own"
    return None


def check_file_name(
    name: object,
    what: str,
    error: type[Exception] = ValueError,
    *,
    max_bytes: int | None = NAME_MAX_BYTES,
    reserved: Collection[str] = (),
    advice: str = "choose a shorter, plain name",
) -> str:
    """*name*, when it can be one path component (see the module's docs).

    :param what: what the name is, for the message (``"task id"``).
    :param error: the exception class raised (the caller's documented type).
    :param max_bytes: see :func:`file_name_problem`.
    :param reserved: see :func:`file_name_problem`.
    :param advice: what the user should do, ending the message.
    :raises error: naming *what*, the name (cut short), the problem and *advice*.
    """
    problem = file_name_problem(name, max_bytes=max_bytes, reserved=reserved)
    if problem is not None or not isinstance(name, str):
        raise error(f"{what} {shown_name(name)} cannot name a file: {problem}; {advice}")
    return name
