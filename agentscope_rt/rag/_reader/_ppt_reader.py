"""The PowerPoint reader: text, tables and pictures of a ``.pptx`` deck (python-pptx), slide by
slide, as AgentScope's ``PowerPointReader``.

Within a slide, the text frames and tables join one text block (a table starts its own when
``separate_table`` is on), opened by ``slide_prefix`` and closed by ``slide_suffix``; each
picture is a chunk of its own. Shapes inside groups are read too (AgentScope skips them). Text
is then chunked as :class:`TextReader` does.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any, Literal

from ...message import ImageBlock, TextBlock
from .._document import Document
from ._office import OfficeReader
from ._reader_base import SplitBy
from ._utils import (
    DEFAULT_MAX_UNZIPPED_SIZE,
    DEFAULT_MAX_ZIP_RATIO,
    Stop,
    cell_text,
    check_file,
    check_stop,
    check_zip,
    corrupt,
    image_block,
    require,
    table_text,
)

__all__ = ["PowerPointReader"]

logger = logging.getLogger(__name__)


def _shapes(shapes: Any, group_type: Any) -> Iterator[Any]:
    """The shapes of a slide in order, with the members of groups in place of the groups."""
    for shape in shapes:
        if shape.shape_type == group_type:
            yield from _shapes(shape.shapes, group_type)
        else:
            yield shape


class PowerPointReader(OfficeReader):
    """Read the text, tables and pictures of a PowerPoint deck (``.pptx``) and chunk them.

    Needs the ``office`` extra (python-pptx). Every chunk's ``doc_id`` is :meth:`get_doc_id` of
    the path.

    :param chunk_size: the most characters in a text chunk.
    :param split_by: ``"char"``, ``"sentence"`` or ``"paragraph"``.
    :param include_image: make each picture a chunk.
    :param separate_slide: number each slide's chunks on their own (AgentScope's numbering).
    :param separate_table: start a new text block at each table.
    :param table_format: ``"markdown"`` or ``"json"``.
    :param slide_prefix: put before a slide's text; ``{index}`` is the 1-based slide number.
        ``None`` for none.
    :param slide_suffix: put after a slide's text; ``None`` for none.
    :param max_unzipped_size: the most bytes the file's parts may expand to, together
        (default 256 MiB); a larger file is refused before it is parsed.
    :param max_zip_ratio: the most a part larger than 1 MiB may expand relative to its
        compressed size (default 100); a zip bomb expands thousands of times.
    :raises ValueError: for invalid chunking arguments, table format or limits, or a *slide_prefix*
        with a field other than ``{index}``.
    :raises TypeError: for a *slide_prefix* or *slide_suffix* that is not a string or None.
    """

    def __init__(
        self,
        chunk_size: int = 512,
        split_by: SplitBy = "sentence",
        include_image: bool = True,
        separate_slide: bool = False,
        separate_table: bool = False,
        table_format: Literal["markdown", "json"] = "markdown",
        slide_prefix: str | None = "<slide index={index}>",
        slide_suffix: str | None = "</slide>",
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
        for name, marker in (("slide_prefix", slide_prefix), ("slide_suffix", slide_suffix)):
            if marker is not None and not isinstance(marker, str):
                raise TypeError(f"{name} must be a string or None, not {type(marker).__name__}")
        if slide_prefix is not None:
            try:
                slide_prefix.format(index=1)
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(
                    f"slide_prefix {slide_prefix!r} cannot be formatted ({type(exc).__name__}: "
                    f"{exc}): it may hold {{index}} (the slide number) and no other field; "
                    "write other braces doubled, {{ and }}"
                ) from None
        self.separate_slide = separate_slide
        self.slide_prefix = slide_prefix
        self.slide_suffix = slide_suffix

    async def __call__(self, ppt_path: str | os.PathLike[str]) -> list[Document]:
        """Read and chunk the deck at *ppt_path*, slide by slide.

        Cancelling the call (a timeout around it) takes effect at once; the worker thread stops
        at its next step.

        :raises ReaderError: for a missing, empty, non-pptx or damaged file, or one whose parts
            expand beyond *max_unzipped_size* or *max_zip_ratio*.
        :raises ImportError: if python-pptx is not installed (the ``office`` extra).
        """
        return await self._read_file(ppt_path)

    @property
    def _separate_groups(self) -> bool:
        return self.separate_slide

    def _read_groups(
        self, ppt_path: str | os.PathLike[str], stop: threading.Event
    ) -> list[list[TextBlock | ImageBlock]]:
        pptx = require("pptx", package="python-pptx", extra="office", user="PowerPointReader")
        from pptx.enum.shapes import MSO_SHAPE_TYPE

        name = check_file(ppt_path, (".pptx",), "a PowerPoint deck")
        check_zip(name, "a PowerPoint deck", self.max_unzipped_size, self.max_zip_ratio)
        try:
            deck = pptx.Presentation(name)
            slides = []
            for index, slide in enumerate(deck.slides):
                check_stop(stop)
                slides.append(self._slide_blocks(slide, index, MSO_SHAPE_TYPE))
            return slides
        except Stop:
            raise
        except Exception as exc:  # zipfile, lxml and python-pptx errors for damaged files
            raise corrupt(name, "a PowerPoint deck", exc) from exc

    def _slide_blocks(
        self, slide: Any, index: int, shape_types: Any
    ) -> list[TextBlock | ImageBlock]:
        header = self.slide_prefix.format(index=index + 1) if self.slide_prefix is not None else ""
        blocks: list[TextBlock | ImageBlock] = []
        last: str | None = None
        headed = False
        for shape in _shapes(slide.shapes, shape_types.GROUP):
            if self.include_image and shape.shape_type == shape_types.PICTURE:
                try:
                    data = shape.image.blob
                except ValueError as exc:
                    # A linked (not embedded) picture: its bytes are not in the file.
                    logger.warning("slide %d: skipped a picture: %s", index + 1, exc)
                    continue
                blocks.append(image_block(data))
                last = "image"
                continue
            if getattr(shape, "has_table", False) and shape.has_table:
                rows = [[cell_text(cell.text) for cell in row.cells] for row in shape.table.rows]
                text = table_text(rows, self.table_format)
                merge = not self.separate_table and last in ("text", "table")
                kind = "table"
            elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
                parts = [p.text.strip() for p in shape.text_frame.paragraphs if p.text.strip()]
                if not parts:
                    continue
                text = "\n".join(parts)
                merge = last == "text" or (last == "table" and not self.separate_table)
                kind = "text"
            else:
                continue
            if not text:
                continue
            if merge and blocks:
                blocks[-1]["text"] += "\n" + text
            else:
                # The prefix opens the slide's first text, even after a picture.
                if not headed and header:
                    text = header + "\n" + text
                headed = True
                blocks.append(TextBlock(text=text))
            last = kind
        if self.slide_suffix is not None and blocks:
            for block in reversed(blocks):
                if isinstance(block, TextBlock):
                    block.text += "\n" + self.slide_suffix
                    break
            else:
                # A slide of pictures only: its markers form a text block of their own.
                text = header + "\n" + self.slide_suffix if header else self.slide_suffix
                blocks.append(TextBlock(text=text))
        return blocks

    def get_doc_id(self, ppt_path: str | os.PathLike[str]) -> str:
        """The document id of the file at *ppt_path*: the hex SHA-256 of the path as given."""
        return hashlib.sha256(os.fspath(ppt_path).encode("utf-8")).hexdigest()
