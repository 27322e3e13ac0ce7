"""Readers: text, PDF, Word, Excel, PowerPoint and images into :class:`Document` chunks."""

from ._excel_reader import ExcelReader
from ._image_reader import ImageReader
from ._pdf_reader import PDFReader
from ._ppt_reader import PowerPointReader
from ._read_files import read_files
from ._reader_base import ReaderBase
from ._text_reader import TextReader, split_text
from ._utils import split_sentences
from ._word_reader import WordReader

__all__ = [
    "ExcelReader",
    "ImageReader",
    "PDFReader",
    "PowerPointReader",
    "ReaderBase",
    "TextReader",
    "WordReader",
    "read_files",
    "split_sentences",
    "split_text",
]
