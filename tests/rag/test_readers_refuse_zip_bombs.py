"""Office readers bound what they decompress: a small .docx, .pptx or .xlsx whose parts expand
far beyond its size (a zip bomb) is refused with ReaderError before it is parsed, the limits
are the readers' constructor arguments, and a part's declared size cannot be understated."""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentscope_rt.exception import ReaderError
from agentscope_rt.rag import ExcelReader, PowerPointReader, WordReader
from agentscope_rt.rag._reader._utils import DEFAULT_MAX_ZIP_RATIO

from ._files import write_docx, write_pptx, write_xlsx
from ._large_documents import inflate_member

# Blank space in XML comments: 24 MiB that deflate to about 24 KiB (in comments of 64 KiB: the
# XML parser refuses a single node of more than 10 MB).
FILLER = (b"<!--" + b" " * (64 * 1024) + b"-->") * 384

KINDS: dict[str, tuple[Callable[..., Path], str, Callable[..., Any]]] = {
    "docx": (write_docx, "word/document.xml", WordReader),
    "pptx": (write_pptx, "ppt/slides/slide1.xml", PowerPointReader),
    "xlsx": (write_xlsx, "xl/worksheets/sheet1.xml", ExcelReader),
}


@pytest.fixture(params=list(KINDS))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def bomb(folder: Path, kind: str) -> Path:
    write, member, _ = KINDS[kind]
    plain = write(folder / f"plain.{kind}")
    path = folder / f"bomb.{kind}"
    inflate_member(plain, path, member, FILLER)
    return path


def test_the_bomb_is_small_on_disk_and_large_inside(tmp_path: Path, kind: str) -> None:
    path = bomb(tmp_path, kind)
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(KINDS[kind][1])
    assert path.stat().st_size < 200_000
    assert info.file_size > DEFAULT_MAX_ZIP_RATIO * info.compress_size


async def test_a_part_expanding_beyond_the_ratio_is_refused(tmp_path: Path, kind: str) -> None:
    path = bomb(tmp_path, kind)
    with pytest.raises(ReaderError, match="max_zip_ratio") as caught:
        await KINDS[kind][2]()(path)
    assert caught.value.path == str(path)


async def test_a_file_expanding_beyond_max_unzipped_size_is_refused(
    tmp_path: Path, kind: str
) -> None:
    write, _, reader = KINDS[kind]
    path = write(tmp_path / f"plain.{kind}")
    assert await reader()(path)  # within the defaults
    with pytest.raises(ReaderError, match="max_unzipped_size"):
        await reader(max_unzipped_size=4096)(path)


async def test_an_application_trusting_its_files_raises_the_limits(
    tmp_path: Path, kind: str
) -> None:
    path = bomb(tmp_path, kind)
    docs = await KINDS[kind][2](max_zip_ratio=100_000)(path)
    assert docs


async def test_a_part_declaring_less_than_it_holds_is_refused(tmp_path: Path) -> None:
    """Declared sizes cannot lie: the parser reads no more than a part declares, and then the
    part fails its checksum."""
    path = bomb(tmp_path, "docx")
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        names = [info.filename for info in archive.infolist()]
    # Rewrite document.xml's uncompressed size in the central directory to a modest 64 KiB.
    at = data.find(b"PK\x01\x02")
    while at != -1:
        name_length = struct.unpack("<H", data[at + 28 : at + 30])[0]
        if data[at + 46 : at + 46 + name_length] == b"word/document.xml":
            data[at + 24 : at + 28] = struct.pack("<I", 64 * 1024)
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(data))
    assert "word/document.xml" in names
    with pytest.raises(ReaderError, match="damaged"):
        await WordReader()(path)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"max_unzipped_size": 0}, "max_unzipped_size"),
        ({"max_unzipped_size": 1.5}, "max_unzipped_size"),
        ({"max_zip_ratio": 0.5}, "max_zip_ratio"),
        ({"max_zip_ratio": True}, "max_zip_ratio"),
        ({"max_zip_ratio": float("nan")}, "max_zip_ratio"),
    ],
)
def test_the_limits_are_checked(kind: str, arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KINDS[kind][2](**arguments)
