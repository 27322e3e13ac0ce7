"""Reading many files with one reader, with a progress bar on a terminal."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Sequence

from .._document import Document
from .._progress import ProgressBar
from ._reader_base import ReaderBase
from ._text_reader import TextReader

__all__ = ["read_files"]


async def read_files(
    reader: ReaderBase,
    paths: Sequence[str | os.PathLike[str]],
    *,
    show_progress: bool | None = None,
) -> list[Document]:
    """Read every file in *paths* with *reader*, in order, and return all their chunks.

    A progress bar counts the files on standard error when it is a terminal (or as
    *show_progress* says), and stays silent otherwise.

    A :class:`TextReader` is given each path as a :class:`pathlib.Path`: it reads a plain
    string that names no file as text, but here every item is a file.

    :param show_progress: force the progress bar on or off.
    :raises ReaderError: for the first file that cannot be read (naming it); nothing is
        returned then, so a caller never stores a partial set without knowing.
    :raises TypeError: for one path instead of a list of them.
    """
    if isinstance(paths, str | bytes | os.PathLike):
        raise TypeError(
            f"read_files takes a list of paths, not one {type(paths).__name__}: for one file, "
            "pass [path]"
        )
    as_file = isinstance(reader, TextReader)
    docs: list[Document] = []
    with ProgressBar(len(paths), "reading", enabled=show_progress) as bar:
        for path in paths:
            docs.extend(await reader(pathlib.Path(path) if as_file else path))
            bar.update(label=os.path.basename(os.fspath(path)))
    return docs
