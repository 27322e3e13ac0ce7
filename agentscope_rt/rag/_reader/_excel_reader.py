"""The Excel reader: each sheet of an ``.xlsx`` workbook (openpyxl) as a table, with its
images, as AgentScope's ``ExcelReader``.

A sheet becomes one text block: ``Sheet: <name>`` (unless ``include_sheet_names`` is off) and
its used cells as a Markdown table (first row as header) or as JSON rows. Fully blank rows and
trailing blank columns are left out. With ``include_image`` the sheet's images follow, ordered
by the row they are anchored at. Text is then chunked as :class:`TextReader` does.

Unlike AgentScope (which parses through pandas, whose header row never reaches the text), every
row is kept, and cell coordinates are the real ones.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from typing import Any, Literal

from ...exception import ReaderError
from ...message import ImageBlock, TextBlock
from .._document import Document
from ._office import OfficeReader
from ._reader_base import SplitBy
from ._utils import (
    DEFAULT_MAX_UNZIPPED_SIZE,
    DEFAULT_MAX_ZIP_RATIO,
    TABLE_JSON_PREFIX,
    Stop,
    cell_text,
    check_file,
    check_stop,
    check_zip,
    corrupt,
    image_block,
    require,
)

__all__ = ["ExcelReader"]


def _column_name(index: int) -> str:
    """The Excel column name of the 0-based column *index* (A, ..., Z, AA, ...)."""
    name = ""
    index += 1
    while index > 0:
        index, rest = divmod(index - 1, 26)
        name = chr(ord("A") + rest) + name
    return name


def _sheet_rows(worksheet: Any, stop: threading.Event) -> list[tuple[int, list[str]]]:
    """(1-based row number, cell texts) of every row holding something, trimmed on the right
    to the widest used column.

    :raises Stop: once *stop* is set, between rows.
    """
    rows = []
    width = 0
    for number, values in enumerate(worksheet.iter_rows(values_only=True), start=1):
        check_stop(stop)
        cells = [cell_text(v) for v in values]
        used = max((i + 1 for i, c in enumerate(cells) if c), default=0)
        if used:
            rows.append((number, cells))
            width = max(width, used)
    return [(number, [*cells[:width], *[""] * (width - len(cells))]) for number, cells in rows]


def _sheet_images(worksheet: Any) -> list[tuple[int, ImageBlock]]:
    """(0-based anchor row, image) of each image in the sheet."""
    images = []
    for image in getattr(worksheet, "_images", []):
        data = image._data()
        anchor = getattr(image.anchor, "_from", None)
        row = anchor.row if anchor is not None else 0
        images.append((row, image_block(data)))
    return images


class ExcelReader(OfficeReader):
    """Read the sheets (and optionally images) of an Excel workbook (``.xlsx``, ``.xlsm``).

    Needs the ``office`` extra (openpyxl). Every chunk's ``doc_id`` is :meth:`get_doc_id` of the
    path. Cached formula results are read, not the formulas.

    :param chunk_size: the most characters in a text chunk.
    :param split_by: ``"char"``, ``"sentence"`` or ``"paragraph"``.
    :param include_sheet_names: start each sheet's text with ``Sheet: <name>``.
    :param include_cell_coordinates: prefix each cell with its coordinate (``[B2] 25``) in
        Markdown, or key JSON rows by coordinate (``{"B2": "25"}``).
    :param include_image: make each image in a sheet a chunk.
    :param separate_sheet: number each sheet's chunks on their own (AgentScope's numbering).
    :param separate_table: start a new text block at each table (each sheet's table already is
        a block of its own; kept for AgentScope's signature).
    :param table_format: ``"markdown"`` or ``"json"`` (the system-info line, then one JSON
        array per row).
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
        include_sheet_names: bool = True,
        include_cell_coordinates: bool = False,
        include_image: bool = False,
        separate_sheet: bool = False,
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
        self.include_sheet_names = include_sheet_names
        self.include_cell_coordinates = include_cell_coordinates
        self.separate_sheet = separate_sheet

    async def __call__(self, excel_path: str | os.PathLike[str]) -> list[Document]:
        """Read and chunk the workbook at *excel_path*, sheet by sheet.

        Cancelling the call (a timeout around it) takes effect at once; the worker thread stops
        at its next step.

        :raises ReaderError: for a missing, empty, non-xlsx (including legacy ``.xls``) or
            damaged file, or one whose parts expand beyond *max_unzipped_size* or
            *max_zip_ratio*.
        :raises ImportError: if openpyxl is not installed (the ``office`` extra).
        """
        return await self._read_file(excel_path)

    @property
    def _separate_groups(self) -> bool:
        return self.separate_sheet

    def _read_groups(
        self, excel_path: str | os.PathLike[str], stop: threading.Event
    ) -> list[list[TextBlock | ImageBlock]]:
        openpyxl = require("openpyxl", package="openpyxl", extra="office", user="ExcelReader")
        name = os.fspath(excel_path)
        if name.lower().endswith(".xls"):
            raise ReaderError(
                f"cannot read {name!r}: the legacy .xls format is not supported; save it as "
                ".xlsx first",
                path=name,
            )
        name = check_file(name, (".xlsx", ".xlsm"), "an Excel workbook")
        check_zip(name, "an Excel workbook", self.max_unzipped_size, self.max_zip_ratio)
        try:
            # Images are only loaded by the full (not read-only) mode.
            workbook = openpyxl.load_workbook(
                name, read_only=not self.include_image, data_only=True
            )
        except Exception as exc:  # zipfile, lxml and openpyxl errors for damaged files
            raise corrupt(name, "an Excel workbook", exc) from exc
        try:
            # worksheets leaves out chart sheets, which hold no cells.
            return [self._sheet_blocks(sheet, sheet.title, stop) for sheet in workbook.worksheets]
        except Stop:
            raise
        except Exception as exc:  # read-only mode parses sheets lazily, here
            raise corrupt(name, "an Excel workbook", exc) from exc
        finally:
            workbook.close()

    def _sheet_blocks(
        self, worksheet: Any, title: str, stop: threading.Event
    ) -> list[TextBlock | ImageBlock]:
        rows = _sheet_rows(worksheet, stop)
        if not rows:
            return []
        header = f"Sheet: {title}" if self.include_sheet_names else None
        text = (
            self._markdown(rows, header)
            if self.table_format == "markdown"
            else (self._json(rows, header))
        )
        blocks: list[TextBlock | ImageBlock] = [TextBlock(text=text)]
        if self.include_image:
            images = sorted(_sheet_images(worksheet), key=lambda item: item[0])
            blocks.extend(image for _, image in images)
        return blocks

    def _cell(self, text: str, row: int, column: int) -> str:
        escaped = text.replace("|", "\\|")
        if self.include_cell_coordinates:
            return f"[{_column_name(column)}{row}] {escaped}"
        return escaped

    def _markdown(self, rows: list[tuple[int, list[str]]], header: str | None) -> str:
        width = len(rows[0][1])
        lines = [header] if header else []
        for index, (number, cells) in enumerate(rows):
            lines.append(
                "| " + " | ".join(self._cell(c, number, i) for i, c in enumerate(cells)) + " |"
            )
            if index == 0:
                lines.append("| " + " | ".join(["---"] * width) + " |")
        return "\n".join(lines) + "\n"

    def _json(self, rows: list[tuple[int, list[str]]], header: str | None) -> str:
        lines = [header] if header else []
        lines.append(TABLE_JSON_PREFIX)
        for number, cells in rows:
            if self.include_cell_coordinates:
                row: Any = {f"{_column_name(i)}{number}": c for i, c in enumerate(cells)}
            else:
                row = cells
            lines.append(json.dumps(row, ensure_ascii=False))
        return "\n".join(lines)

    def get_doc_id(self, excel_path: str | os.PathLike[str]) -> str:
        """The document id of the file at *excel_path*: the hex SHA-256 of the path as given."""
        return hashlib.sha256(os.fspath(excel_path).encode("utf-8")).hexdigest()
