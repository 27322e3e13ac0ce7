"""The reader interface: turn a source (text, file, URL) into :class:`Document` chunks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal

from .._document import DocContent, DocMetadata, Document

__all__ = ["ReaderBase", "SplitBy", "check_chunking", "check_table_format", "number_chunks"]

SplitBy = Literal["char", "sentence", "paragraph"]
_SPLIT_MODES = ("char", "sentence", "paragraph")


class ReaderBase(ABC):
    """Base class of readers: read data, split it into chunks, wrap each chunk in a
    :class:`Document`.

    A reader's ``__call__`` is a coroutine that does its blocking work (file access, parsing)
    in worker threads, so it never stalls the event loop, and raises
    :class:`~agentscope_rt.exception.ReaderError` for a file it cannot read.
    """

    @abstractmethod
    async def __call__(self, *args: Any, **kwargs: Any) -> list[Document]:
        """Read the input and return its chunks, in document order."""

    def get_doc_id(self, *args: Any, **kwargs: Any) -> str:
        """The document id :meth:`__call__` gives the chunks of this input, so an application
        can check whether a knowledge base already holds it (or delete it) before reading.

        Optional, as in AgentScope.

        :raises NotImplementedError: unless a subclass implements it.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement get_doc_id")


def check_chunking(chunk_size: int, split_by: str) -> None:
    """Validate the chunking arguments every text-bearing reader takes.

    :raises ValueError: for a *chunk_size* that is not a positive integer, or an unknown
        *split_by*.
    """
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size <= 0:
        raise ValueError(f"The chunk_size must be a positive integer, got {chunk_size!r}")
    if split_by not in _SPLIT_MODES:
        raise ValueError(
            f"The split_by must be one of 'char', 'sentence' or 'paragraph', got {split_by!r}"
        )


def check_table_format(table_format: str) -> None:
    """:raises ValueError: for a table format other than ``"markdown"`` or ``"json"``."""
    if table_format not in ("markdown", "json"):
        raise ValueError(
            f"The table_format must be one of 'markdown' or 'json', got {table_format!r}"
        )


def number_chunks(doc_id: str, contents: list[DocContent]) -> list[Document]:
    """One :class:`Document` per content, numbered in order, all of document *doc_id*.

    Each document's id is derived from (doc_id, position, content), see
    :func:`~agentscope_rt.rag.chunk_id_of`.
    """
    total = len(contents)
    return [
        Document(DocMetadata(content=content, doc_id=doc_id, chunk_id=index, total_chunks=total))
        for index, content in enumerate(contents)
    ]
