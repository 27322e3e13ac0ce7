"""The Word reader: text, tables and images of a ``.docx`` file (python-docx), in document
order, as AgentScope's ``WordReader``.

Paragraphs are joined into one text block with line breaks; a table joins the text around it
(as Markdown, or as AgentScope's JSON form) unless ``separate_table`` asks for a block of its
own; each image is a chunk of its own. Text blocks are then chunked as :class:`TextReader` does.
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import Any, Literal

from ...message import ImageBlock, TextBlock
from .._document import Document
from ._office import OfficeReader
from ._reader_base import SplitBy
from ._utils import (
    DEFAULT_MAX_UNZIPPED_SIZE,
    DEFAULT_MAX_ZIP_RATIO,
    check_file,
    check_stop,
    check_zip,
    corrupt,
    image_block,
    require,
    table_text,
)

__all__ = ["WordReader"]

# VML (legacy Word drawings) is not in python-docx's namespace map.
_VML_NS = "{urn:schemas-microsoft-com:vml}"


def _paragraph_text(element: Any, qn: Any) -> str:
    """All text of a paragraph, including revisions, hyperlinks and text boxes."""
    text = "".join(t.text for t in element.iter(qn("w:t")) if t.text)
    if not text:
        # Text boxes whose runs are not w:t descendants of this paragraph's own runs.
        for box in [*element.iter(qn("w:txbxContent")), *element.iter(_VML_NS + "textbox")]:
            for t in box.iter(qn("w:t")):
                if t.text:
                    text += t.text
    return text.strip()


def _table_rows(element: Any, qn: Any) -> list[list[str]]:
    """A table's cells as text, row by row; paragraphs inside a cell are joined by line breaks."""
    rows: list[list[str]] = []
    for tr in element.findall(qn("w:tr")):
        row: list[str] = []
        for tc in tr.findall(qn("w:tc")):
            paragraphs = []
            for p in tc.findall(qn("w:p")):
                text = "".join(t.text for t in p.iter(qn("w:t")) if t.text)
                if text:
                    paragraphs.append(text)
            row.append("\n".join(paragraphs))
        rows.append(row)
    return rows


def _has_picture(element: Any, qn: Any) -> bool:
    """Whether a paragraph holds a drawing or a legacy VML picture (embedded or not)."""
    return any(True for _ in element.iter(qn("w:drawing"), qn("w:pict")))


def _paragraph_images(element: Any, part: Any, qn: Any) -> list[ImageBlock]:
    """The images embedded in a paragraph (DrawingML blips and legacy VML image data)."""
    rel_ids = [blip.get(qn("r:embed")) for blip in element.iter(qn("a:blip"))]
    rel_ids += [data.get(qn("r:id")) for data in element.iter(_VML_NS + "imagedata")]
    images = []
    for rel_id in rel_ids:
        if not rel_id or rel_id not in part.related_parts:
            continue
        image = part.related_parts[rel_id]
        images.append(image_block(image.blob, image.content_type))
    return images


class WordReader(OfficeReader):
    """Read the text, tables and images of a Word document (``.docx``) and chunk them.

    Needs the ``office`` extra (python-docx). Every chunk's ``doc_id`` is :meth:`get_doc_id`
    of the path.

    :param chunk_size: the most characters in a text chunk.
    :param split_by: ``"char"``, ``"sentence"`` or ``"paragraph"``.
    :param include_image: make each embedded image a chunk (the embedding model must accept
        images).
    :param separate_table: start a new text block at each table (and after it), so a table is
        not cut across chunks with the text around it; a table longer than *chunk_size* is
        still cut.
    :param table_format: ``"markdown"``, or ``"json"`` (AgentScope's system-info line and the
        rows as a JSON array; better when cells hold line breaks).
    :param max_unzipped_size: the most bytes the file's parts may expand to, together
        (default 256 MiB); a larger file is refused before it is parsed.
    :param max_zip_ratio: the most a part larger than 1 MiB may expand relative to its
        compressed size (default 100); a zip bomb expands thousands of times.
    :raises ValueError: for invalid chunking arguments, table format or limits.
    """

    def __init__(
        self,
        chunk_size: int = 512,
        split_by: SplitBy = "sentence",
        include_image: bool = True,
        separate_table: bool = False,
        table_format: Literal["markdown", "json"] = "markdown",
        max_unzipped_size: int = DEFAULT_MAX_UNZIPPED_SIZE,
        max_zip_ratio: float = DEFAULT_MAX_ZIP_RATIO,
    ) -> None:
        self._set_options(
            chunk_size,
            split_by,
            include_image,
            separate_table,
            table_format,
            max_unzipped_size,
            max_zip_ratio,
        )

    async def __call__(self, word_path: str | os.PathLike[str]) -> list[Document]:
        """Read and chunk the ``.docx`` file at *word_path*; text, tables and images come in
        document order.

        Cancelling the call (a timeout around it) takes effect at once; the worker thread stops
        at its next step.

        :raises ReaderError: for a missing, empty, non-docx or damaged file, or one whose parts
            expand beyond *max_unzipped_size* or *max_zip_ratio*.
        :raises ImportError: if python-docx is not installed (the ``office`` extra).
        """
        return await self._read_file(word_path)

    def _read_groups(
        self, word_path: str | os.PathLike[str], stop: threading.Event
    ) -> list[list[TextBlock | ImageBlock]]:
        # The whole document is one group: its chunks are numbered through.
        return [self._read_blocks(word_path, stop)]

    def _read_blocks(
        self, word_path: str | os.PathLike[str], stop: threading.Event
    ) -> list[TextBlock | ImageBlock]:
        docx = require("docx", package="python-docx", extra="office", user="WordReader")
        from docx.oxml.ns import qn

        name = check_file(word_path, (".docx",), "a Word document")
        check_zip(name, "a Word document", self.max_unzipped_size, self.max_zip_ratio)
        try:
            document = docx.Document(name)
        except Exception as exc:  # zipfile, lxml and python-docx errors for damaged files
            raise corrupt(name, "a Word document", exc) from exc

        blocks: list[TextBlock | ImageBlock] = []
        last: str | None = None
        paragraph_tag, table_tag = qn("w:p"), qn("w:tbl")
        for element in document.element.body.iterchildren():
            check_stop(stop)
            if element.tag == paragraph_tag:
                text = _paragraph_text(element, qn)
                if self.include_image and _has_picture(element, qn):
                    # The paragraph's text, even none, opens a new block after its pictures
                    # (AgentScope's rule): the text after a picture starts with a line break.
                    blocks.extend(_paragraph_images(element, document.part, qn))
                    last = "image"
                if last == "text" or (last == "table" and not self.separate_table):
                    blocks[-1]["text"] += "\n" + text
                else:
                    blocks.append(TextBlock(text=text))
                last = "text"
            elif element.tag == table_tag:
                rows = _table_rows(element, qn)
                text = table_text(rows, self.table_format)
                if not self.separate_table and last in ("text", "table"):
                    blocks[-1]["text"] += "\n" + text
                else:
                    blocks.append(TextBlock(text=text))
                last = "table"
        return blocks

    def get_doc_id(self, word_path: str | os.PathLike[str]) -> str:
        """The document id of the file at *word_path*: the hex MD5 of the path as given
        (AgentScope's scheme)."""
        return hashlib.md5(os.fspath(word_path).encode("utf-8"), usedforsecurity=False).hexdigest()
