"""What the readers share: file checks, lazy imports of the parsing libraries, the sentence
splitter, table formatting and image media types."""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import threading
import zipfile
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, TypeVar

import anyio.to_thread

from ..._extras import require_extra
from ...exception import ReaderError
from ...message import Base64Source, ImageBlock

__all__ = [
    "DEFAULT_MAX_UNZIPPED_SIZE",
    "DEFAULT_MAX_ZIP_RATIO",
    "Stop",
    "check_file",
    "check_zip",
    "check_zip_limits",
    "image_block",
    "media_type_of",
    "require",
    "run_stoppable",
    "split_sentences",
    "table_text",
    "table_to_json",
    "table_to_markdown",
]


def require(module: str, *, package: str, extra: str, user: str) -> ModuleType:
    """Import *module*, or fail with an ImportError that says how to install it.

    :param package: the PyPI distribution that provides *module*.
    :param extra: the agentscope-rt extra that installs it.
    :param user: the class that needs it, for the message.
    :raises ImportError: if *module* is not installed.
    """
    return require_extra(module, extra=extra, user=f"{user} ({package})")


def check_file(path: str | os.PathLike[str], extensions: Iterable[str], kind: str) -> str:
    """*path* as a string, once it is known to name a non-empty file with a fitting extension.

    Blocking (it asks the file system): call it from a worker thread.

    :param extensions: accepted lower-case suffixes, with their dot (``".pdf"``).
    :param kind: what the file should be, for the message (``"a PDF file"``).
    :raises ReaderError: for a missing file, a directory, another extension or an empty file.
    """
    name = os.fspath(path)
    accepted = tuple(extensions)
    if not os.path.exists(name):
        raise ReaderError(f"cannot read {name!r}: no such file", path=name)
    if not os.path.isfile(name):
        raise ReaderError(f"cannot read {name!r}: it is not a file", path=name)
    if not name.lower().endswith(accepted):
        raise ReaderError(
            f"cannot read {name!r}: expected {kind} ({', '.join(accepted)}); use the reader "
            "for this kind of file, or rename it if it is mislabelled",
            path=name,
        )
    if os.path.getsize(name) == 0:
        raise ReaderError(f"cannot read {name!r}: the file is empty", path=name)
    return name


def corrupt(name: str, kind: str, exc: BaseException) -> ReaderError:
    """The error for a file its parser rejected."""
    return ReaderError(
        f"cannot read {name!r} as {kind}: the file is damaged or not really {kind} "
        f"({type(exc).__name__}: {exc})",
        path=name,
    )


# -- office files are zip archives --------------------------------------------------------------

DEFAULT_MAX_UNZIPPED_SIZE = 256 * 1024 * 1024
"""The most bytes an Office file's members may expand to, together (256 MiB)."""

DEFAULT_MAX_ZIP_RATIO = 100
"""The most a member larger than :data:`_RATIO_GRACE` may expand, relative to its compressed
size (Apache POI's default: real documents' XML compresses 5 to 30 times; a bomb's, thousands)."""

# Members smaller than this may expand any amount: styles and relationship parts compress very
# well and cost nothing.
_RATIO_GRACE = 1024 * 1024


def check_zip_limits(max_unzipped_size: int, max_zip_ratio: float) -> None:
    """:raises ValueError: for a *max_unzipped_size* that is not a positive integer, or a
    *max_zip_ratio* that is not a number of at least 1."""
    if (
        isinstance(max_unzipped_size, bool)
        or not isinstance(max_unzipped_size, int)
        or max_unzipped_size <= 0
    ):
        raise ValueError(
            f"max_unzipped_size must be a positive integer (bytes), got {max_unzipped_size!r}"
        )
    if (
        isinstance(max_zip_ratio, bool)
        or not isinstance(max_zip_ratio, int | float)
        or not max_zip_ratio >= 1
    ):
        raise ValueError(f"max_zip_ratio must be a number of at least 1, got {max_zip_ratio!r}")


def check_zip(name: str, kind: str, max_unzipped_size: int, max_zip_ratio: float) -> None:
    """Refuse an Office file whose members would expand beyond the limits, before a parser
    decompresses anything.

    The sizes checked are the ones the archive declares. They cannot understate what the
    parsers get: python-docx, python-pptx and openpyxl read members through :mod:`zipfile`,
    which yields no more than a member's declared size (and then fails its CRC check).

    Blocking (it reads the archive's directory): call it from a worker thread.

    :raises ReaderError: for a file that is not a zip archive, whose members together declare
        more than *max_unzipped_size* bytes, or with a member larger than 1 MiB declaring more
        than *max_zip_ratio* times its compressed size.
    """
    try:
        with zipfile.ZipFile(name) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as exc:
        raise corrupt(name, kind, exc) from exc
    total = 0
    for member in members:
        total += member.file_size
        if total > max_unzipped_size:
            raise ReaderError(
                f"cannot read {name!r}: its parts expand to more than {max_unzipped_size} bytes "
                f"(max_unzipped_size); raise the reader's max_unzipped_size if you trust the file",
                path=name,
            )
        size, packed = member.file_size, max(member.compress_size, 1)
        if size > _RATIO_GRACE and size > max_zip_ratio * packed:
            raise ReaderError(
                f"cannot read {name!r}: its part {member.filename!r} expands {size // packed} "
                f"times ({packed} to {size} bytes), more than max_zip_ratio={max_zip_ratio:g}; "
                "raise the reader's max_zip_ratio if you trust the file",
                path=name,
            )


# -- giving up when cancelled ---------------------------------------------------------------------

T = TypeVar("T")


class Stop(Exception):
    """Raised in a reader's worker thread once its caller was cancelled: the result would be
    thrown away, so the thread stops at its next step instead of parsing on."""


def check_stop(stop: threading.Event) -> None:
    """:raises Stop: once *stop* is set."""
    if stop.is_set():
        raise Stop


async def run_stoppable(function: Callable[..., T], *args: Any) -> T:
    """``function(*args, stop=event)`` in a worker thread, given up at once when the caller is
    cancelled.

    *function* must call :func:`check_stop` between its steps (pages, paragraphs, slides,
    rows, chunks): once the caller is cancelled the event is set, and the thread, no longer
    waited for, stops at its next check rather than parsing the rest of a large file for
    nothing.
    """
    stop = threading.Event()
    try:
        return await anyio.to_thread.run_sync(
            functools.partial(function, *args, stop=stop), abandon_on_cancel=True
        )
    finally:
        stop.set()


# -- sentences ----------------------------------------------------------------------------------

# A sentence ends at Western terminators followed by white space (or the end of the text), at
# Chinese/Japanese full-width terminators wherever they stand (those scripts put no space after
# them), and at a blank line (a heading or list item without a full stop is still a unit).
# Closing quotes and brackets stay with the sentence they close.
_TERMINATOR = r"""[.!?]+["'”’)\]]*(?=\s|$)|[。！？]+["'”’」』）)\]]*"""
_BOUNDARY = re.compile(_TERMINATOR + r"|\n[ \t]*\n")
# nltk's punkt, which AgentScope's Office readers split with, goes on across blank lines.
_PUNKT_BOUNDARY = re.compile(_TERMINATOR)

# Words after which a full stop does not end a sentence (compared in lower case, without it).
# fmt: off
_ABBREVIATIONS = frozenset((
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "cf",
    "al", "fig", "figs", "no", "nos", "vol", "pp", "ed", "eds", "inc", "ltd", "co", "corp",
    "dept", "est", "approx", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept",
    "oct", "nov", "dec", "mt", "ft", "gen", "col", "lt", "sgt", "capt", "rev", "gov", "sen",
    "rep", "u.s", "u.k", "a.m", "p.m",
))
# fmt: on
_INITIALISM = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")


def _word_start(text: str, end: int) -> int:
    """Where the word ending at *end* starts: after the last space, tab or line break."""
    # Walked back one character at a time: searching the text before *end* for each kind of
    # blank would scan the whole text for a kind it lacks (a file on one line has no line
    # break), at every full stop, quadratic in the text's length. The walk stops at the
    # word's start, and a full stop ending a sentence is followed by a blank, so the words
    # walked never overlap.
    start = end
    while start > 0 and text[start - 1] not in " \n\t":
        start -= 1
    return start


def _ends_with_abbreviation(text: str, dot: int) -> bool:
    """Whether the full stop at *dot* closes an abbreviation rather than a sentence."""
    word = text[_word_start(text, dot) : dot].lstrip("\"'“‘([")
    if not word:
        return False
    if word.lower() in _ABBREVIATIONS or _INITIALISM.fullmatch(word):
        return True
    # A lone capital is an initial ("J. Smith").
    if len(word) == 1 and word.isupper():
        return True
    # A sentence does not go on in lower case: "etc. and so on", "approx. five".
    following = text[dot + 1 : dot + 3].lstrip()
    return bool(following) and following[0].islower()


def split_sentences(text: str, *, as_punkt: bool = False) -> list[str]:
    """Split *text* into sentences, for English and Chinese alike, without any model.

    Sentences are stripped of surrounding white space; empty ones are dropped. A blank line
    ends a sentence.

    :param as_punkt: cut as nltk's punkt does (AgentScope's Office readers): a blank line does
        not end a sentence (a table's trailing line break and the text after it stay together),
        and the first sentence keeps the white space before it (a block of text that opens with
        a line break keeps it, as in AgentScope's chunks).
    """
    sentences: list[str] = []
    start = 0
    boundary = _PUNKT_BOUNDARY if as_punkt else _BOUNDARY
    for match in boundary.finditer(text):
        if match.group()[0] == "." and _ends_with_abbreviation(text, match.start()):
            continue
        _add_sentence(sentences, text[start : match.end()], as_punkt)
        start = match.end()
    _add_sentence(sentences, text[start:], as_punkt)
    return sentences


def _add_sentence(sentences: list[str], piece: str, as_punkt: bool) -> None:
    """Append *piece*, stripped, unless it is white space only; punkt leaves the white space
    before the first sentence in place."""
    if not piece.strip():
        return
    sentences.append(piece.rstrip() if as_punkt and not sentences else piece.strip())


# -- tables and images --------------------------------------------------------------------------


def table_to_markdown(rows: list[list[str]]) -> str:
    """A table as Markdown, its first row as the header (AgentScope's layout).

    Short rows are padded, long rows cut to the header's width; ``|`` in cells is escaped.
    """
    if not rows or not rows[0]:
        return ""
    width = len(rows[0])

    def line(cells: list[str]) -> str:
        cells = [*cells[:width], *[""] * (width - len(cells))]
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |\n"

    return (
        line(rows[0]) + "| " + " | ".join(["---"] * width) + " |\n" + "".join(map(line, rows[1:]))
    )


TABLE_JSON_PREFIX = "<system-info>A table loaded as a JSON array:</system-info>"


def table_to_json(rows: list[list[str]]) -> str:
    """A table as AgentScope's JSON form: the system-info line, then the rows as one array."""
    return TABLE_JSON_PREFIX + "\n" + json.dumps(rows, ensure_ascii=False)


def table_text(rows: list[list[str]], table_format: str) -> str:
    """A table as *table_format* asks: ``"markdown"`` (:func:`table_to_markdown`) or ``"json"``
    (:func:`table_to_json`)."""
    return table_to_markdown(rows) if table_format == "markdown" else table_to_json(rows)


_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)


def media_type_of(data: bytes) -> str:
    """The MIME type of image *data* from its signature; JPEG when unknown (as AgentScope)."""
    for signature, media_type in _SIGNATURES:
        if data.startswith(signature):
            return media_type
    if len(data) > 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return "image/jpeg"


def image_block(data: bytes, media_type: str | None = None) -> ImageBlock:
    """An image block holding *data* as base64, of *media_type* (from the data's signature
    when not given, see :func:`media_type_of`)."""
    source = Base64Source(
        media_type=media_type or media_type_of(data), data=base64.b64encode(data).decode()
    )
    return ImageBlock(source=source)


def cell_text(value: Any) -> str:
    """A spreadsheet or table cell as text: empty for nothing, line breaks normalised."""
    if value is None:
        return ""
    return str(value).strip().replace("\r\n", "\n").replace("\r", "\n")
