"""The PDF reader: the text of every page (pypdf), chunked as :class:`TextReader` does."""

from __future__ import annotations

import hashlib
import os
import threading

from ...exception import ReaderError
from .._document import Document
from ._reader_base import ReaderBase, SplitBy, check_chunking
from ._text_reader import TextReader
from ._utils import Stop, check_file, check_stop, corrupt, require, run_stoppable

__all__ = ["PDFReader"]


def _extract(path: str | os.PathLike[str], stop: threading.Event) -> tuple[str, str]:
    """(file name, text of all pages joined by a blank line); runs in a worker thread.

    :raises Stop: once *stop* is set, between pages.
    """
    pypdf = require("pypdf", package="pypdf", extra="pdf", user="PDFReader")
    name = check_file(path, (".pdf",), "a PDF file")
    with open(name, "rb") as file:
        head = file.read(1024)
    if b"%PDF-" not in head:
        raise ReaderError(
            f"cannot read {name!r} as a PDF file: it does not start with a PDF header",
            path=name,
        )
    try:
        reader = pypdf.PdfReader(name)
        if reader.is_encrypted and not reader.decrypt(""):
            raise ReaderError(
                f"cannot read {name!r}: the PDF is encrypted; decrypt it first", path=name
            )
        pages = []
        for page in reader.pages:
            check_stop(stop)
            pages.append(page.extract_text() or "")
    except (ReaderError, Stop):
        raise
    except Exception as exc:  # pypdf raises many kinds of error for damaged files
        raise corrupt(name, "a PDF file", exc) from exc
    text = "\n\n".join(pages)
    if not text.strip():
        raise ReaderError(
            f"cannot read {name!r}: its {len(pages)} page(s) hold no extractable text (a scan?); "
            "run OCR on it first",
            path=name,
        )
    return name, text


class PDFReader(ReaderBase):
    """Read a PDF file's text and split it into chunks.

    The pages' texts are joined with a blank line and chunked as :class:`TextReader` does. Every
    chunk's ``doc_id`` is :meth:`get_doc_id` of the path. Needs the ``pdf`` extra (pypdf).

    :param chunk_size: the most characters in a chunk.
    :param split_by: ``"char"``, ``"sentence"`` or ``"paragraph"``.
    :raises ValueError: for a non-positive *chunk_size* or an unknown *split_by*.
    """

    def __init__(self, chunk_size: int = 512, split_by: SplitBy = "sentence") -> None:
        check_chunking(chunk_size, split_by)
        self.chunk_size = chunk_size
        self.split_by: SplitBy = split_by
        self._text_reader = TextReader(chunk_size, split_by)

    async def __call__(self, pdf_path: str | os.PathLike[str]) -> list[Document]:
        """Read and chunk the PDF file at *pdf_path*.

        Cancelling the call (a timeout around it) takes effect at once; the worker thread stops
        parsing at the next page.

        :raises ReaderError: for a missing, empty, non-PDF, encrypted, damaged or text-less file.
        :raises ImportError: if pypdf is not installed (the ``pdf`` extra).
        """
        return await run_stoppable(self._read, pdf_path)

    def _read(self, pdf_path: str | os.PathLike[str], stop: threading.Event) -> list[Document]:
        # Chunking a long text takes long too (seconds for megabytes): it runs in the worker
        # thread as well.
        _, text = _extract(pdf_path, stop)
        check_stop(stop)
        return self._text_reader.chunk(text, self.get_doc_id(pdf_path))

    def get_doc_id(self, pdf_path: str | os.PathLike[str]) -> str:
        """The document id of the file at *pdf_path*: the hex SHA-256 of the path as given."""
        return hashlib.sha256(os.fspath(pdf_path).encode("utf-8")).hexdigest()
