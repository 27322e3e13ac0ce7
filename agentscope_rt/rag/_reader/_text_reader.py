"""The text reader: a string (or a text file) split into chunks by characters, sentences or
paragraphs, as AgentScope's ``TextReader``.

Chunks never overlap and are never merged (AgentScope's rules): ``"char"`` cuts fixed windows of
*chunk_size* characters; ``"sentence"`` makes one chunk per sentence; ``"paragraph"`` one chunk
per non-blank line. A sentence or paragraph longer than *chunk_size* is cut into windows.
Unlike AgentScope, lines and windows of white space only are not made chunks.

Sentences are found by a dependency-free splitter (:func:`split_sentences`) that knows Western
and Chinese/Japanese punctuation, instead of AgentScope's nltk ``punkt`` model (English only,
downloaded at first use, which fails offline). Both keep abbreviations such as "Dr." or "e.g."
inside a sentence; results can differ on unusual punctuation. The splitter also ends a sentence
at a blank line, where nltk would join a heading to the sentence after it. The Office readers
split as nltk does there (``as_punkt``): their blocks join a table to the text below it with a
blank line, which AgentScope's chunks do not cut.
"""

from __future__ import annotations

import hashlib
import os
import threading

import anyio.to_thread

from ...exception import ReaderError
from ...message import ImageBlock, TextBlock
from .._document import DocContent, Document
from ._reader_base import ReaderBase, SplitBy, check_chunking, number_chunks
from ._utils import check_stop, split_sentences

__all__ = ["TextReader", "chunk_blocks", "chunk_groups", "split_text"]

# Longer than any path a file system accepts: such a string is text, not a file name.
_MAX_PATH = 4096


def _windows(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def split_text(text: str, chunk_size: int, split_by: SplitBy, as_punkt: bool = False) -> list[str]:
    """Split *text* into chunks by TextReader's rules (see the module docstring).

    :param as_punkt: split sentences as nltk's punkt does (see :func:`split_sentences`): the
        Office readers' blocks are built for it.
    :raises ValueError: for a non-positive *chunk_size* or an unknown *split_by*.
    """
    check_chunking(chunk_size, split_by)
    if split_by == "char":
        return _windows(text, chunk_size)
    if split_by == "sentence":
        pieces = split_sentences(text, as_punkt=as_punkt)
    else:
        # Blank and whitespace-only lines carry nothing to retrieve.
        pieces = [line for line in text.split("\n") if line.strip()]
    chunks: list[str] = []
    for piece in pieces:
        if len(piece) <= chunk_size:
            chunks.append(piece)
        else:
            # A window of white space only (the tail of a padded line) carries nothing either.
            chunks.extend(w for w in _windows(piece, chunk_size) if w.strip())
    return chunks


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


def _load(text: str | os.PathLike[str]) -> str:
    """The text to chunk: the file's content if *text* names a file, else *text* itself."""
    if isinstance(text, str):
        if len(text) > _MAX_PATH or "\n" in text or not os.path.isfile(text):
            return text
        name = text
    else:
        name = os.fspath(text)
        if not os.path.isfile(name):
            what = "it is not a file" if os.path.exists(name) else "no such file"
            raise ReaderError(f"cannot read {name!r}: {what}", path=name)
    try:
        # utf-8-sig: a byte order mark (as Windows editors write) is not part of the text.
        with open(name, encoding="utf-8-sig") as file:
            content = file.read()
    except UnicodeDecodeError as exc:
        raise ReaderError(
            f"cannot read {name!r} as text: it is not UTF-8 ({exc.reason} at byte "
            f"{exc.start}); convert it to UTF-8 or use the reader for its format",
            path=name,
        ) from None
    except OSError as exc:
        raise ReaderError(f"cannot read {name!r}: {exc.strerror or exc}", path=name) from exc
    if not content.strip():
        raise ReaderError(f"cannot read {name!r}: the file is empty", path=name)
    return content


class TextReader(ReaderBase):
    """Split text into chunks of at most *chunk_size* characters.

    :param chunk_size: the most characters in a chunk.
    :param split_by: ``"char"``, ``"sentence"`` or ``"paragraph"`` (see the module docstring).
    :raises ValueError: for a non-positive *chunk_size* or an unknown *split_by*.
    """

    def __init__(self, chunk_size: int = 512, split_by: SplitBy = "sentence") -> None:
        check_chunking(chunk_size, split_by)
        self.chunk_size = chunk_size
        self.split_by: SplitBy = split_by

    async def __call__(self, text: str | os.PathLike[str]) -> list[Document]:
        """Chunk *text*, or the UTF-8 text file it names.

        A string naming an existing file is read (as AgentScope does); a :class:`os.PathLike`
        must name one. The document id is the SHA-256 of the text (:meth:`get_doc_id`); each
        chunk's id is derived from that id, its position and its content. Empty text gives no
        chunks.

        :raises ReaderError: for a path that is not a readable, non-empty UTF-8 text file.
        """
        # Splitting and numbering take seconds for megabytes of text: in the worker thread too.
        return await anyio.to_thread.run_sync(self._read, text)

    def _read(self, text: str | os.PathLike[str]) -> list[Document]:
        return self.chunk(_load(text))

    def chunk(self, text: str, doc_id: str | None = None) -> list[Document]:
        """The chunks of *text* as documents (no file access; what :meth:`__call__` returns).

        :param doc_id: the document id to give them; :meth:`get_doc_id` of *text* by default.
        """
        pieces: list[DocContent] = [
            TextBlock(text=piece) for piece in split_text(text, self.chunk_size, self.split_by)
        ]
        return number_chunks(self.get_doc_id(text) if doc_id is None else doc_id, pieces)

    def get_doc_id(self, text: str) -> str:
        """The document id of *text*: the hex SHA-256 of its UTF-8 bytes."""
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
