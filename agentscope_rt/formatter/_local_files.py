"""Which local files may be read and sent to a provider, and the package's own media folder.

A media block may name a local path or a ``file://`` URL; formatters (and the multimodal
embedding) read such a file and send its bytes to the provider. Text from a model, a tool or
a user can put any path there, so reading is off by default: a file is read only when its
real path (symlinks and ``..`` resolved) lies in a folder the application allowed with
:func:`allow_local_files`, or in the package's private media folder, where formatters write
the base64 media of tool results (:func:`saved_media_dir`).

The allow-list is process-wide and replaced as a whole on every change (a tuple), so a
worker thread reading it never sees it half updated.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from types import TracebackType

from ._errors import LocalFileNotAllowedError

__all__ = [
    "LocalFilesGrant",
    "allow_local_files",
    "allowed_local_folders",
    "check_local_file",
    "disallow_local_files",
    "saved_media_dir",
]

_allowed: tuple[str, ...] = ()
_lock = threading.Lock()

_media_dir: str | None = None
_media_dir_pid: int | None = None


class LocalFilesGrant:
    """What one :func:`allow_local_files` call added. The folders stay allowed; used as a
    context manager (``with allow_local_files(folder): ...``), the folders this call added are
    allowed again only until the block ends."""

    __slots__ = ("folders",)

    def __init__(self, folders: tuple[str, ...]) -> None:
        self.folders = folders
        """The folders (real paths) this call added; ones already allowed are not repeated."""

    def __enter__(self) -> LocalFilesGrant:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.folders:
            disallow_local_files(*self.folders)

    def __repr__(self) -> str:
        return f"LocalFilesGrant(folders={self.folders!r})"


def _real_folder(folder: str | os.PathLike[str]) -> str:
    """The real path of *folder* (``~`` expanded, symlinks and ``..`` resolved).

    :raises TypeError: when *folder* is not a string or path.
    :raises ValueError: for an empty string.
    """
    if not isinstance(folder, str | os.PathLike):
        raise TypeError(f"a folder to allow is a str or path, not {type(folder).__name__}")
    text = os.fspath(folder)
    if not isinstance(text, str):
        raise TypeError(f"a folder to allow is a str or path, not {type(text).__name__}")
    if not text:
        raise ValueError("an empty string is not a folder; pass '.' for the working directory")
    return os.path.realpath(os.path.expanduser(text))


def allow_local_files(*folders: str | os.PathLike[str]) -> LocalFilesGrant:
    """Let formatters and the multimodal embedding read local media files under *folders*.

    A media block naming a local path or ``file://`` URL is read (and its bytes sent to the
    provider) only when the file's real path lies in one of the allowed folders or their
    subfolders. Folders are resolved now: ``~`` expanded, a relative folder taken from the
    working directory, symlinks and ``..`` resolved. Nothing is allowed by default;
    ``allow_local_files("/")`` allows every file, as AgentScope does. The package's own media
    folder (:func:`saved_media_dir`) is always allowed.

    :returns: a :class:`LocalFilesGrant`; the folders stay allowed, unless it is used as a
        context manager, which allows them until the ``with`` block ends.
    :raises TypeError: for a folder that is not a str or path.
    :raises ValueError: for an empty string.
    """
    global _allowed
    real = [_real_folder(folder) for folder in folders]
    with _lock:
        added = tuple(dict.fromkeys(f for f in real if f not in _allowed))
        _allowed = _allowed + added
    return LocalFilesGrant(added)


def disallow_local_files(*folders: str | os.PathLike[str]) -> None:
    """Stop allowing *folders* (resolved as :func:`allow_local_files` does), or every folder
    when none is given. Folders that were not allowed are ignored.

    :raises TypeError: for a folder that is not a str or path.
    :raises ValueError: for an empty string.
    """
    global _allowed
    removed = {_real_folder(folder) for folder in folders}
    with _lock:
        _allowed = tuple(f for f in _allowed if removed and f not in removed)


def allowed_local_folders() -> tuple[str, ...]:
    """The folders (real paths) local media files may be read from, besides the package's own
    media folder; empty by default."""
    return _allowed


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder if folder.endswith(os.sep) else folder + os.sep)


def check_local_file(path: str, shown: str) -> str:
    """The real path of *path* when it may be read; blocking (it resolves symlinks).

    :param path: the local path a media block names.
    :param shown: what the block said (a path or ``file://`` URL), for the error message.
    :raises LocalFileNotAllowedError: when the real path is in no allowed folder; the message
        names the path and how to allow it. Raised whether or not the file exists, so a
        refusal says nothing about what is on the disk.
    """
    real = os.path.realpath(os.path.expanduser(path))
    allowed = _allowed
    if any(_inside(real, folder) for folder in allowed):
        return real
    media = _media_dir
    if media is not None and _inside(real, media):
        return real
    resolved = f" (it resolves to {real!r})" if real != path else ""
    where = (
        "no folder is allowed now"
        if not allowed
        else "the allowed folders are " + ", ".join(repr(f) for f in allowed)
    )
    raise LocalFileNotAllowedError(
        f"reading the local file {shown!r}{resolved} is not allowed: local media files are "
        f"read only from folders the application allows, and {where}; call "
        "agentscope_rt.formatter.allow_local_files(folder) with the folder holding it, or send "
        "the media as base64 data or a web URL"
    )


def saved_media_dir() -> str:
    """The package's private media folder, created on first use: a new folder per process,
    readable by its owner only (``0o700``; files in it are written ``0o600``), removed when
    the process exits. Formatters write the base64 media of tool results there, and always
    allow reading it back."""
    global _media_dir, _media_dir_pid
    pid = os.getpid()
    if _media_dir is not None and _media_dir_pid == pid:
        return _media_dir
    with _lock:
        if _media_dir is None or _media_dir_pid != pid:
            # A forked child gets a folder of its own: the parent removes its folder at exit.
            created = os.path.realpath(tempfile.mkdtemp(prefix="agentscope_rt_media_"))
            atexit.register(_remove_media_dir, created, pid)
            _media_dir, _media_dir_pid = created, pid
        return _media_dir


def _remove_media_dir(folder: str, pid: int) -> None:
    if os.getpid() == pid:
        shutil.rmtree(folder, ignore_errors=True)
