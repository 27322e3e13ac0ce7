"""Built-in text file tools, optionally confined to a root directory.

The module-level :func:`view_text_file`, :func:`write_text_file` and :func:`insert_text_file`
accept any path, as in AgentScope. :class:`TextFileTools` offers the same three tools as
methods confined to one directory: relative paths are taken inside the root, and a path that
resolves outside it — through ``..``, an absolute path, or a symbolic link anywhere along the
way — is refused with a message the model can read. Register the bound methods::

    files = TextFileTools("/srv/workspace")
    for tool in files.tools():
        toolkit.register_tool_function(tool)

Writes are atomic: new content goes to a temporary file in the same directory, which then
replaces the target with ``os.replace``; a crash leaves the old or the new file, never a torn
one. Edits of one file are serialised (a lock per resolved path, held across the read, the
change and the write), so concurrent edits never lose one another.

All file system work runs in a worker thread that the caller does not wait for once it is
cancelled: an interrupt or an enclosing timeout takes effect at once even when the file system
hangs (a stale network mount); the abandoned thread finishes its atomic write, or not, in the
background. Only regular files are read or written: FIFOs, sockets and devices, which can block
forever or never end, are refused before anything is opened. A view returns at most
:data:`MAX_VIEW_CHARS` characters and says where it stopped; a range is read only as far as it
reaches.

Limits: confinement checks the resolved path and then opens it; a process that can swap a
directory for a symlink inside the root between those two steps can defeat it. It protects
against paths a model writes, not against a hostile local user.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import anyio

from ._execution import text_response
from ._response import ToolResponse

__all__ = ["TextFileTools", "insert_text_file", "view_text_file", "write_text_file"]

_EXTRA_VIEW_LINES = 5

MAX_VIEW_CHARS = 100_000
"""The most file content one view returns (about 25k tokens); longer views are cut at a line
boundary and say how to see the rest."""

_READ_CHUNK = 1 << 20


class _ToolInputError(Exception):
    """A problem the model caused; its message is returned as the tool result."""


def _resolve(file_path: str, root: str | None) -> str:
    if not isinstance(file_path, str) or not file_path or "\x00" in file_path:
        raise _ToolInputError(f"InvalidArgumentsError: invalid file path {file_path!r}.")
    if root is None:
        return os.path.expanduser(file_path)
    candidate = file_path if os.path.isabs(file_path) else os.path.join(root, file_path)
    real = os.path.realpath(candidate)
    if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
        raise _ToolInputError(
            f"PermissionError: The path '{file_path}' is outside the allowed directory "
            f"'{root}'. Only files inside that directory can be used; give a path relative to it."
        )
    return real


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _not_regular(file_path: str, mode: int) -> _ToolInputError:
    return _ToolInputError(
        f"Error: The path {file_path} is {_kind(mode)}, not a regular file; the text file "
        "tools only read and write regular files."
    )


def _check_target(path: str, file_path: str) -> bool:
    """Whether *path* exists; refuses anything there that is not a regular file (no open)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(mode):
        raise _ToolInputError(f"Error: The path {file_path} is a directory, not a file.")
    if not stat.S_ISREG(mode):
        raise _not_regular(file_path, mode)
    return True


@contextlib.contextmanager
def _open_regular(path: str, file_path: str, binary: bool = False) -> Iterator[Any]:
    """Open a regular file for reading; anything else is refused without blocking.

    ``O_NONBLOCK`` keeps the open itself from waiting for a FIFO's writer, and the check runs
    on the opened descriptor, so a file swapped in between cannot slip through.
    """
    # A socket cannot even be opened; stat names it (stat never blocks) before open is tried.
    _check_target(path, file_path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(file_path, mode)
        os.set_blocking(fd, True)
        file = os.fdopen(fd, "rb") if binary else os.fdopen(fd, encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise
    with file:
        yield file


def _read_lines(path: str, file_path: str) -> list[str]:
    with _open_regular(path, file_path) as file:
        lines: list[str] = file.readlines()
        return lines


def _decode_line(raw: bytes) -> str:
    """A line as text mode would read it (UTF-8, ``\\r\\n`` read as ``\\n``)."""
    if raw.endswith(b"\r\n"):
        raw = raw[:-2] + b"\n"
    return raw.decode("utf-8")


def _count_lines(path: str, file_path: str) -> int:
    """Lines in the file, counted in bounded memory (a last line without newline counts)."""
    count = 0
    last = b"\n"
    with _open_regular(path, file_path, binary=True) as file:
        while chunk := file.read(_READ_CHUNK):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")


class _FileLock:
    """A lock for one path; weakly referenced so unused paths cost nothing."""

    __slots__ = ("__weakref__", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()


_FILE_LOCKS: weakref.WeakValueDictionary[str, _FileLock] = weakref.WeakValueDictionary()
_FILE_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def _editing(path: str) -> Iterator[None]:
    """Hold the edit lock of *path* (its resolved form) in this worker thread.

    A thread lock, not an anyio one: an edit whose caller was cancelled goes on in its thread,
    and the next edit of the file must still wait for it.
    """
    key = os.path.realpath(path)
    with _FILE_LOCKS_GUARD:
        holder = _FILE_LOCKS.get(key)
        if holder is None:
            holder = _FILE_LOCKS[key] = _FileLock()
    with holder.lock:
        yield


def _create_temp(directory: str, mode: int) -> tuple[int, str]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = os.path.join(directory, f".tmp_{os.urandom(6).hex()}")
        try:
            return os.open(tmp, flags, mode), tmp
        except FileExistsError:
            continue


def _atomic_write(path: str, text: str) -> None:
    directory = os.path.dirname(path) or "."
    try:
        existing_mode: int | None = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        existing_mode = None
    # A new file gets 0o666 less the umask, applied by the kernel at creation: reading the
    # umask in Python means setting it, which would race with other threads creating files.
    fd, tmp = _create_temp(directory, 0o600 if existing_mode is not None else 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        if existing_mode is not None:
            os.chmod(tmp, existing_mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _numbered(lines: list[str], start: int) -> str:
    return "".join(f"{index + start}: {line}" for index, line in enumerate(lines))


def _check_ranges(ranges: Any, n_lines: int) -> tuple[int, int]:
    """Turn ``[start, end]`` (1-based, inclusive; negatives count from the end) into a range."""
    _check_range_format(ranges)
    start, end = (i if i >= 0 else n_lines + i + 1 for i in ranges)
    if start < 1:
        start = 1
    if start > end:
        raise _ToolInputError(
            f"InvalidArgumentError: The start line is greater than the end line in the given "
            f"range {ranges}."
        )
    return start, end


def _check_range_format(ranges: Any) -> None:
    if not (
        isinstance(ranges, list)
        and len(ranges) == 2
        and all(isinstance(i, int) and not isinstance(i, bool) for i in ranges)
    ):
        raise _ToolInputError(
            "InvalidArgumentError: Invalid range format. Expected a list of two integers, but "
            f"got {ranges}."
        )


def _view_ranges(old_n: int, new_n: int, start: int, end: int) -> tuple[int, int]:
    view_start = max(1, start - _EXTRA_VIEW_LINES)
    view_end = min(end + (new_n - old_n) + _EXTRA_VIEW_LINES, new_n)
    return view_start, view_end


def _ensure_newline(text: str) -> str:
    return text if text.endswith("\n") or not text else text + "\n"


# -- the operations (run in a worker thread) --------------------------------------------------


def _view(file_path: str, ranges: list[int] | None, root: str | None) -> str:
    path = _resolve(file_path, root)
    if not os.path.exists(path):
        raise _ToolInputError(f"Error: The file {file_path} does not exist.")
    if os.path.isdir(path):
        raise _ToolInputError(f"Error: The path {file_path} is not a file.")
    if ranges is None:
        snippet, shown, more = _read_view(path, file_path, 1, None)
        text = f"The content of {file_path}:\n```\n{snippet}```"
        if more:
            text += (
                f"\nThe file is longer than {MAX_VIEW_CHARS} characters: only lines 1-{shown} "
                f"are shown. View the rest with `ranges`, e.g. [{shown + 1}, {shown + 200}]."
            )
        return text
    _check_range_format(ranges)
    # Counting lines means reading the whole file: only negative indexes need it.
    n_lines = _count_lines(path, file_path) if min(ranges) < 0 else 0
    start, end = _check_ranges(ranges, n_lines)
    snippet, shown, more = _read_view(path, file_path, start, end)
    if shown < start:
        raise _ToolInputError(
            f"InvalidArgumentError: The range '{ranges}' is out of bounds for the file "
            f"'{file_path}', which has only {shown} lines."
        )
    text = f"The content of {file_path} in {ranges} lines:\n```\n{snippet}```"
    if more:
        text += (
            f"\nThe range holds more than {MAX_VIEW_CHARS} characters: only lines "
            f"{start}-{shown} are shown. View the rest with `ranges`, e.g. "
            f"[{shown + 1}, {end}]."
        )
    return text


def _read_view(path: str, file_path: str, start: int, end: int | None) -> tuple[str, int, bool]:
    """Numbered lines *start*..*end* (to the end of the file when None), read only as far as
    needed and cut after :data:`MAX_VIEW_CHARS` characters.

    :returns: the numbered text, the number of the last line read (the file's line count when
        it ended before *start*), and whether the view was cut short.
    """
    parts: list[str] = []
    size = 0
    number = 0
    # Binary lines decoded one by one: bytes past the range are never decoded (nor read, but
    # for the read-ahead buffer), so what lies beyond cannot fail the view.
    with _open_regular(path, file_path, binary=True) as file:
        for number, raw in enumerate(file, 1):
            if number < start:
                continue
            if end is not None and number > end:
                return "".join(parts), number - 1, False
            line = _decode_line(raw)
            numbered = f"{number}: {line}"
            if size + len(numbered) > MAX_VIEW_CHARS:
                if not parts:  # one huge line: show its beginning rather than nothing
                    parts.append(numbered[:MAX_VIEW_CHARS] + "\n")
                    return "".join(parts), number, True
                return "".join(parts), number - 1, True
            parts.append(numbered)
            size += len(numbered)
    return "".join(parts), number, False


def _write(file_path: str, content: str, ranges: list[int] | None, root: str | None) -> str:
    path = _resolve(file_path, root)
    with _editing(path):
        return _write_locked(path, file_path, content, ranges)


def _write_locked(path: str, file_path: str, content: str, ranges: list[int] | None) -> str:
    exists = _check_target(path, file_path)
    if not os.path.isdir(os.path.dirname(path) or "."):
        raise _ToolInputError(
            f"Error: The directory of {file_path} does not exist; create it first."
        )
    if not exists:
        _atomic_write(path, content)
        if ranges:
            return (
                f"Create and write {file_path} successfully. The ranges {ranges} is ignored "
                "because the file does not exist."
            )
        return f"Create and write {file_path} successfully."
    if ranges is None:
        _atomic_write(path, content)
        return f"Overwrite {file_path} successfully."
    lines = _read_lines(path, file_path)
    start, end = _check_ranges(ranges, len(lines))
    if start > len(lines):
        raise _ToolInputError(
            f"Error: The start line {start} is invalid. The file only has {len(lines)} lines."
        )
    tail = lines[end:]
    replacement = _ensure_newline(content) if tail else content
    new_text = "".join([*lines[: start - 1], replacement, *tail])
    _atomic_write(path, new_text)
    new_lines = new_text.splitlines(keepends=True)
    view_start, view_end = _view_ranges(len(lines), len(new_lines), start, end)
    snippet = _numbered(new_lines[view_start - 1 : view_end], view_start)
    return f"Write {file_path} successfully. The new content snippet:\n```\n{snippet}```"


def _insert(file_path: str, content: str, line_number: int, root: str | None) -> str:
    if isinstance(line_number, bool) or not isinstance(line_number, int) or line_number <= 0:
        raise _ToolInputError(f"InvalidArgumentsError: The line number {line_number} is invalid.")
    path = _resolve(file_path, root)
    with _editing(path):
        return _insert_locked(path, file_path, content, line_number)


def _insert_locked(path: str, file_path: str, content: str, line_number: int) -> str:
    if not _check_target(path, file_path):
        raise _ToolInputError(f"InvalidArgumentsError: The target file {file_path} does not exist.")
    lines = _read_lines(path, file_path)
    if line_number > len(lines) + 1:
        raise _ToolInputError(
            f"InvalidArgumentsError: The given line_number ({line_number}) is not in the valid "
            f"range [1, {len(lines) + 1}]."
        )
    head, tail = lines[: line_number - 1], lines[line_number - 1 :]
    if head and not head[-1].endswith("\n"):
        head[-1] += "\n"
    # Content put before a line ends its own line; appended content is written as given, as
    # AgentScope does (and as write_text_file does at the end of a file), so a file keeps
    # ending without a newline when the content has none.
    inserted = _ensure_newline(content) if tail else content
    new_text = "".join([*head, inserted, *tail])
    _atomic_write(path, new_text)
    new_lines = new_text.splitlines(keepends=True)
    start, end = _view_ranges(len(lines), len(new_lines), line_number, line_number)
    snippet = _numbered(new_lines[start - 1 : end], start)
    return (
        f"Insert content into {file_path} at line {line_number} successfully. The new content "
        f"between lines {start}-{end} is:\n```\n{snippet}```"
    )


async def _run(operation: Callable[..., str], *args: Any) -> ToolResponse:
    try:
        # Not waited for once cancelled: a hung file system must not hold up an interrupt.
        text = await anyio.to_thread.run_sync(operation, *args, abandon_on_cancel=True)
    except _ToolInputError as exc:
        text = str(exc)
    except (OSError, UnicodeDecodeError) as exc:
        text = f"Error: {type(exc).__name__}: {exc}"
    return text_response(text)


# -- unconfined tools (AgentScope's) -----------------------------------------------------------


async def view_text_file(file_path: str, ranges: list[int] | None = None) -> ToolResponse:
    """View the file content in the specified range with line numbers. If `ranges` is not
    provided, the entire file will be returned.

    Args:
        file_path (`str`):
            The target file path.
        ranges (`list[int] | None`):
            The range of lines to be viewed (e.g. lines 1 to 100: [1, 100]), inclusive. If
            not provided, the entire file will be returned. To view the last 100 lines, use
            [-100, -1].
    """
    return await _run(_view, file_path, ranges, None)


async def write_text_file(
    file_path: str, content: str, ranges: list[int] | None = None
) -> ToolResponse:
    """Create/Replace/Overwrite content in a text file. When `ranges` is provided, the content
    will be replaced in the specified range. Otherwise, the entire file (if exists) will be
    overwritten.

    Args:
        file_path (`str`):
            The target file path.
        content (`str`):
            The content to be written.
        ranges (`list[int] | None`):
            The range of lines to be replaced, e.g. [3, 5] for lines 3 to 5 inclusive. If
            `None`, the entire file will be overwritten.
    """
    return await _run(_write, file_path, content, ranges, None)


async def insert_text_file(file_path: str, content: str, line_number: int) -> ToolResponse:
    """Insert the content at the specified line number in a text file.

    Args:
        file_path (`str`):
            The target file path.
        content (`str`):
            The content to be inserted.
        line_number (`int`):
            The line number at which the content should be inserted, starting from 1. Use
            the number of lines plus one to append to the end of the file.
    """
    return await _run(_insert, file_path, content, line_number, None)


# -- confined tools ----------------------------------------------------------------------------


class TextFileTools:
    """The three text file tools, confined to the directory *root*.

    :param root: an existing directory; it is resolved once (symlinks included).
    :raises ValueError: if *root* is not an existing directory.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        resolved = os.path.realpath(os.fspath(root))
        if not os.path.isdir(resolved):
            raise ValueError(f"root must be an existing directory, got {os.fspath(root)!r}")
        self.root = resolved

    def tools(self) -> list[Callable[..., Any]]:
        """The bound tool methods, ready for ``Toolkit.register_tool_function``."""
        return [self.view_text_file, self.write_text_file, self.insert_text_file]

    async def view_text_file(self, file_path: str, ranges: list[int] | None = None) -> ToolResponse:
        """View the file content in the specified range with line numbers. If `ranges` is not
        provided, the entire file will be returned. Paths are relative to the working
        directory; paths outside it are refused.

        Args:
            file_path (`str`):
                The target file path.
            ranges (`list[int] | None`):
                The range of lines to be viewed (e.g. lines 1 to 100: [1, 100]), inclusive.
                If not provided, the entire file will be returned. To view the last 100
                lines, use [-100, -1].
        """
        return await _run(_view, file_path, ranges, self.root)

    async def write_text_file(
        self, file_path: str, content: str, ranges: list[int] | None = None
    ) -> ToolResponse:
        """Create/Replace/Overwrite content in a text file. When `ranges` is provided, the
        content will be replaced in the specified range. Otherwise, the entire file (if
        exists) will be overwritten. Paths are relative to the working directory; paths
        outside it are refused.

        Args:
            file_path (`str`):
                The target file path.
            content (`str`):
                The content to be written.
            ranges (`list[int] | None`):
                The range of lines to be replaced, e.g. [3, 5] for lines 3 to 5 inclusive. If
                `None`, the entire file will be overwritten.
        """
        return await _run(_write, file_path, content, ranges, self.root)

    async def insert_text_file(
        self, file_path: str, content: str, line_number: int
    ) -> ToolResponse:
        """Insert the content at the specified line number in a text file. Paths are relative
        to the working directory; paths outside it are refused.

        Args:
            file_path (`str`):
                The target file path.
            content (`str`):
                The content to be inserted.
            line_number (`int`):
                The line number at which the content should be inserted, starting from 1. Use
                the number of lines plus one to append to the end of the file.
        """
        return await _run(_insert, file_path, content, line_number, self.root)
