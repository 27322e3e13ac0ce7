"""The reader interface: turn a source (text, file, URL) into :class:`Document` chunks."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from typing import Any, Literal

from ...message import ImageBlock, TextBlock
from .._document import DocContent, DocMetadata, Document
from ._utils import check_stop

__all__ = ["ReaderBase", "SplitBy", "chunk_blocks", "chunk_groups", "number_chunks"]

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


def chunk_blocks(
    blocks: list[TextBlock | ImageBlock],
    doc_id: str,
    chunk_size: int,
    split_by: SplitBy,
    stop: threading.Event | None = None,
    *,
    as_punkt: bool = False,
) -> list[Document]:
    """The chunks of a document read as a sequence of blocks: each text block is split by
    TextReader's rules, each image is a chunk of its own; all are numbered in order.

    :param as_punkt: split sentences as nltk's punkt does (see
        :func:`~agentscope_rt.rag.split_sentences`), as AgentScope's Office readers do.
    :raises Stop: once *stop* is set, between blocks.
    """
    from ._text_reader import split_text

    contents: list[DocContent] = []
    for block in blocks:
        if stop is not None:
            check_stop(stop)
        if isinstance(block, TextBlock):
            pieces = split_text(block.text, chunk_size, split_by, as_punkt)
            contents.extend(TextBlock(text=t) for t in pieces)
        else:
            contents.append(block)
    return number_chunks(doc_id, contents)


def chunk_groups(
    groups: list[list[TextBlock | ImageBlock]],
    doc_id: str,
    chunk_size: int,
    split_by: SplitBy,
    separate: bool,
    stop: threading.Event | None = None,
    *,
    as_punkt: bool = False,
) -> list[Document]:
    """The chunks of a document read as groups of blocks (sheets, slides): numbered through
    the whole document, or, with *separate*, each group's chunks on their own (AgentScope's
    ``separate_sheet`` / ``separate_slide`` numbering).

    :param as_punkt: as for :func:`chunk_blocks`.
    :raises Stop: once *stop* is set, between blocks.
    """
    if not separate:
        blocks = [block for group in groups for block in group]
        return chunk_blocks(blocks, doc_id, chunk_size, split_by, stop, as_punkt=as_punkt)
    docs: list[Document] = []
    for group in groups:
        docs.extend(chunk_blocks(group, doc_id, chunk_size, split_by, stop, as_punkt=as_punkt))
    return docs
