"""An embedding cache of one ``.npy`` file per identifier, as AgentScope's.

Guarantees, beyond AgentScope's:

* **No torn files.** A file is written to a temporary name in the cache directory and renamed
  into place (``os.replace``, atomic on POSIX and Windows), so a reader — another task,
  another process, or AgentScope itself — sees the old file, the new one, or none, never a
  half-written one. A file that cannot be read (damaged by something else), or whose header
  disagrees with its size (a small file claiming millions of rows), counts as a miss, is
  logged, and is replaced by the next store under its identifier; its rows are never built.
* **Never blocks the event loop.** All file work, and encoding the vectors, runs in worker
  threads.
* **Bounded.** After each write the oldest files (by modification time; reads do not touch
  it, so eviction is first-in first-out, as in AgentScope) are removed until at most
  ``max_file_number`` files and ``max_cache_size`` MB remain. Eviction is serialised within
  the process, and files another process removed meanwhile are skipped.

Files are named ``sha256(json.dumps(identifier, ensure_ascii=False)).npy`` and hold
``np.save``'s float64 matrix, so the directory can be shared with AgentScope.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
from typing import Any, BinaryIO

import anyio.to_thread

from ..types import Embedding, JSONSerializableObject
from ._cache_base import EmbeddingCacheBase
from ._npy import (
    MAX_HEADER_SIZE,
    NpyFormatError,
    check_size,
    dumps_npy,
    loads_npy,
    read_header,
)

__all__ = ["FileEmbeddingCache"]

logger = logging.getLogger(__name__)

_SUFFIX = ".npy"
_TEMP_PREFIX = ".tmp-"


class FileEmbeddingCache(EmbeddingCacheBase):
    """Keeps each request's embeddings in a file of *cache_dir*.

    :param cache_dir: the directory (created on first use).
    :param max_file_number: keep at most this many files (``None``: no limit).
    :param max_cache_size: keep at most this many megabytes (MiB) of files (``None``: no
        limit).
    :raises ValueError: for a negative limit.
    """

    def __init__(
        self,
        cache_dir: str = "./.cache/embeddings",
        max_file_number: int | None = None,
        max_cache_size: int | float | None = None,
    ) -> None:
        for name, value in (
            ("max_file_number", max_file_number),
            ("max_cache_size", max_cache_size),
        ):
            if value is not None and value < 0:
                raise ValueError(f"FileEmbeddingCache: {name} must be >= 0 or None, not {value!r}")
        self._cache_dir = os.path.abspath(cache_dir)
        self.max_file_number = max_file_number
        self.max_cache_size = max_cache_size
        # Eviction lists and removes files; two threads doing it at once would each remove
        # "the oldest" and together remove too many.
        self._evict_lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"FileEmbeddingCache(cache_dir={self._cache_dir!r}, "
            f"max_file_number={self.max_file_number!r}, max_cache_size={self.max_cache_size!r})"
        )

    @property
    def cache_dir(self) -> str:
        """The directory holding the files (created if missing)."""
        os.makedirs(self._cache_dir, exist_ok=True)
        return self._cache_dir

    @staticmethod
    def _get_filename(identifier: JSONSerializableObject) -> str:
        """The file name of *identifier*, as AgentScope names it.

        :raises TypeError: when *identifier* is not JSON-serialisable.
        """
        text = json.dumps(identifier, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest() + _SUFFIX

    async def store(
        self,
        embeddings: list[Embedding],
        identifier: JSONSerializableObject,
        overwrite: bool = False,
        **kwargs: Any,
    ) -> None:
        """Write *embeddings* to *identifier*'s file (atomically), then evict old files.

        :param overwrite: replace an existing file; when ``False`` an existing one is kept
            (unless it is damaged).
        :raises RuntimeError: when the path exists and is not a file.
        :raises TypeError: when *identifier* is not JSON-serialisable.
        :raises ValueError: when the embeddings differ in length.
        """
        filename = self._get_filename(identifier)
        await anyio.to_thread.run_sync(self._store_sync, filename, embeddings, overwrite)

    def _store_sync(self, filename: str, embeddings: list[Embedding], overwrite: bool) -> None:
        # Encoding is work too (~0.4 s for 10,000 vectors of 384 numbers): done here, off the
        # event loop, before anything is written.
        data = dumps_npy([list(map(float, e)) for e in embeddings])
        directory = self.cache_dir
        path = os.path.join(directory, filename)
        if os.path.exists(path):
            if not os.path.isfile(path):
                raise RuntimeError(f"Path {path} exists but is not a file.")
            # A damaged file (the miss that led here) is replaced, or it would stay a miss.
            if not overwrite and _is_sound(path):
                return
        fd, temp = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=".part", dir=directory)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            os.replace(temp, path)
        except BaseException:
            _remove_quietly(temp)
            raise
        self._evict_sync()

    async def retrieve(self, identifier: JSONSerializableObject) -> list[Embedding] | None:
        """The embeddings in *identifier*'s file, or ``None`` when there is none, or it is
        damaged or inconsistent (logged as a warning).

        :raises TypeError: when *identifier* is not JSON-serialisable.
        """
        path = os.path.join(self._cache_dir, self._get_filename(identifier))
        return await anyio.to_thread.run_sync(_read, path)

    async def remove(self, identifier: JSONSerializableObject) -> None:
        """Delete *identifier*'s file.

        :raises FileNotFoundError: when there is none.
        """
        path = os.path.join(self._cache_dir, self._get_filename(identifier))
        try:
            await anyio.to_thread.run_sync(os.remove, path)
        except FileNotFoundError:
            raise FileNotFoundError(f"File {path} does not exist.") from None

    async def clear(self) -> None:
        """Delete every ``.npy`` file of the directory (other files are left alone)."""
        await anyio.to_thread.run_sync(self._clear_sync)

    def _clear_sync(self) -> None:
        for entry in os.scandir(self.cache_dir):
            if entry.name.endswith(_SUFFIX) and entry.is_file():
                _remove_quietly(entry.path)

    def _get_cache_size(self) -> float:
        """The size of the cached files in MiB."""
        return sum(size for _, _, size, _ in self._files()) / (1024.0 * 1024.0)

    def _files(self) -> list[tuple[float, str, int, str]]:
        """``(mtime, name, size, path)`` of each cached file, oldest first."""
        files = []
        for entry in os.scandir(self.cache_dir):
            if not entry.name.endswith(_SUFFIX) or entry.name.startswith(_TEMP_PREFIX):
                continue
            try:
                if not entry.is_file():
                    continue
                stat = entry.stat()
            except FileNotFoundError:
                continue  # removed meanwhile
            files.append((stat.st_mtime, entry.name, stat.st_size, entry.path))
        files.sort()
        return files

    def _evict_sync(self) -> None:
        if self.max_file_number is None and self.max_cache_size is None:
            return
        with self._evict_lock:
            files = self._files()
            total = sum(f[2] for f in files)
            limit_bytes = None if self.max_cache_size is None else self.max_cache_size * 1024 * 1024
            removed = 0
            while files and (
                (self.max_file_number is not None and len(files) > self.max_file_number)
                or (limit_bytes is not None and total > limit_bytes)
            ):
                _mtime, _name, size, path = files.pop(0)
                _remove_quietly(path)
                total -= size
                removed += 1
            if removed:
                logger.info(
                    "Removed %d cached embedding file(s) to stay within %s files / %s MB.",
                    removed,
                    self.max_file_number,
                    self.max_cache_size,
                )


def _read(path: str) -> list[Embedding] | None:
    """The embeddings in the file at *path*, or ``None`` when there is none, or it is damaged
    or inconsistent (logged): never an exception for what the file holds."""
    try:
        return _read_checked(path)
    except FileNotFoundError:
        return None
    except (OSError, NpyFormatError) as exc:
        logger.warning("Ignoring unreadable embedding cache file %s: %s", path, exc)
        return None


def _read_checked(path: str) -> list[Embedding]:
    """The embeddings in the file at *path*, read only once its header agrees with its size.

    :raises FileNotFoundError: when there is no file.
    :raises NpyFormatError: when the file is damaged, or its header's shape does not match its
        size (a small file may claim millions of rows).
    :raises OSError: when the file cannot be read.
    """
    with open(path, "rb") as file:
        _check_size(file)
        file.seek(0)
        return loads_npy(file.read())


def _check_size(file: BinaryIO) -> None:
    """:raises NpyFormatError: when *file*'s header is damaged or disagrees with its size."""
    size = os.fstat(file.fileno()).st_size
    check_size(read_header(file.read(MAX_HEADER_SIZE + 12)), size)


def _is_sound(path: str) -> bool:
    """Whether the file at *path* is a readable ``.npy`` whose header agrees with its size."""
    try:
        with open(path, "rb") as file:
            _check_size(file)
    except (OSError, NpyFormatError):
        return False
    return True


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
