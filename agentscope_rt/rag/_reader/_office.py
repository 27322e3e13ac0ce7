"""What the Office readers (Word, Excel, PowerPoint) share: their chunking, table and zip-limit
arguments, and one way to read: parse the file into groups of blocks (the document, or its
sheets or slides) in a stoppable worker thread, then chunk them there too."""

from __future__ import annotations

import os
import threading
from abc import abstractmethod
from typing import Literal

from ...message import ImageBlock, TextBlock
from .._document import Document
from ._reader_base import ReaderBase, SplitBy, check_chunking, check_table_format
from ._text_reader import chunk_groups
from ._utils import check_zip_limits, run_stoppable

__all__ = ["OfficeReader"]


class OfficeReader(ReaderBase):
    """Base of the readers of zipped Office files.

    A subclass calls :meth:`_set_options` from its ``__init__``, implements
    :meth:`_read_groups` (and ``get_doc_id``), and its ``__call__`` returns
    ``await self._read_file(path)``.
    """

    chunk_size: int
    split_by: SplitBy
    include_image: bool
    separate_table: bool
    table_format: Literal["markdown", "json"]
    max_unzipped_size: int
    max_zip_ratio: float

    def _set_options(
        self,
        chunk_size: int,
        split_by: SplitBy,
        include_image: bool,
        separate_table: bool,
        table_format: Literal["markdown", "json"],
        max_unzipped_size: int,
        max_zip_ratio: float,
    ) -> None:
        """Check and keep the arguments every Office reader takes.

        :raises ValueError: for invalid chunking arguments, table format or limits.
        """
        check_chunking(chunk_size, split_by)
        check_table_format(table_format)
        check_zip_limits(max_unzipped_size, max_zip_ratio)
        self.max_unzipped_size = max_unzipped_size
        self.max_zip_ratio = max_zip_ratio
        self.chunk_size = chunk_size
        self.split_by = split_by
        self.include_image = include_image
        self.separate_table = separate_table
        self.table_format = table_format

    @property
    def _separate_groups(self) -> bool:
        """Whether each group's chunks are numbered on their own (``separate_sheet`` /
        ``separate_slide``); false unless a subclass says otherwise."""
        return False

    @abstractmethod
    def _read_groups(
        self, path: str | os.PathLike[str], stop: threading.Event
    ) -> list[list[TextBlock | ImageBlock]]:
        """Parse the file at *path* into groups of blocks, in document order (in a worker
        thread, calling :func:`check_stop` between steps).

        :raises ReaderError: for a file that cannot be read.
        """

    async def _read_file(self, path: str | os.PathLike[str]) -> list[Document]:
        """The chunks of the file at *path*, read and chunked in a worker thread that stops
        at its next step once the caller is cancelled."""
        return await run_stoppable(self._read, path)

    def _read(self, path: str | os.PathLike[str], stop: threading.Event) -> list[Document]:
        # Chunking a large file takes long too: it runs in the worker thread as well.
        groups = self._read_groups(path, stop)
        doc_id = self.get_doc_id(path)
        # Sentences as AgentScope's nltk splitter cuts them (the readers build their blocks
        # its way): a blank line does not end one.
        return chunk_groups(
            groups,
            doc_id,
            self.chunk_size,
            self.split_by,
            self._separate_groups,
            stop,
            as_punkt=True,
        )
