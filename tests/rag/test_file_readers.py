"""PDF, Word, Excel, PowerPoint and image readers on real files written by the tests, and the
errors for files they cannot read."""

from __future__ import annotations

import hashlib
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from agentscope_rt.exception import ReaderError
from agentscope_rt.rag import (
    ExcelReader,
    ImageReader,
    PDFReader,
    PowerPointReader,
    TextReader,
    WordReader,
)

from ._files import png_bytes, write_docx, write_pdf, write_pptx, write_xlsx


def _texts(docs: list) -> list:
    return [
        d.metadata.content["text"] if d.metadata.content.type == "text" else d.metadata.content.type
        for d in docs
    ]


def _check_numbering(docs: list, doc_id: str) -> None:
    assert [d.metadata.chunk_id for d in docs] == list(range(len(docs)))
    assert {d.metadata.total_chunks for d in docs} == {len(docs)}
    assert {d.metadata.doc_id for d in docs} == {doc_id}
    assert len({d.id for d in docs}) == len(docs)


async def test_pdf_pages_are_joined_and_chunked(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "report.pdf", ["Hello PDF world. It has (parens).", "Page two."])
    docs = await PDFReader(chunk_size=100, split_by="sentence")(path)
    assert _texts(docs) == ["Hello PDF world.", "It has (parens).", "Page two."]
    _check_numbering(docs, hashlib.sha256(str(path).encode()).hexdigest())
    assert PDFReader().get_doc_id(path) == docs[0].metadata.doc_id
    again = await PDFReader(chunk_size=100, split_by="sentence")(str(path))
    assert [d.id for d in again] == [d.id for d in docs]
    by_char = await PDFReader(chunk_size=10, split_by="char")(path)
    assert "".join(_texts(by_char)) == "Hello PDF world. It has (parens).\n\nPage two."


async def test_word_text_tables_and_images_in_order(tmp_path: Path) -> None:
    path = write_docx(tmp_path / "report.docx")
    docs = await WordReader(chunk_size=200, split_by="paragraph")(path)
    table = "| Name | Age |\n| --- | --- |\n| Alice | 30 |"
    assert _texts(docs) == [
        "First paragraph of the report.",
        "Second paragraph follows it.",
        *table.split("\n"),
        "image",
        "Closing words.",
    ]
    image = docs[5].metadata.content
    assert image.source.media_type == "image/png" and image.source.data
    _check_numbering(docs, hashlib.md5(str(path).encode()).hexdigest())

    # separate_table puts the table in a block of its own; "char" keeps the blocks' line breaks.
    # The picture's paragraph opens a block of its own, empty (as in AgentScope), so the text
    # after the picture starts with a line break.
    docs = await WordReader(chunk_size=1000, split_by="char", separate_table=True)(path)
    assert _texts(docs) == [
        "First paragraph of the report.\nSecond paragraph follows it.",
        table + "\n",
        "image",
        "\nClosing words.",
    ]
    docs = await WordReader(1000, "char", include_image=False, table_format="json")(path)
    assert _texts(docs) == [
        "First paragraph of the report.\nSecond paragraph follows it.\n"
        "<system-info>A table loaded as a JSON array:</system-info>\n"
        # The picture's paragraph, without its picture, is an empty line (as in AgentScope).
        '[["Name", "Age"], ["Alice", "30"]]\n\nClosing words.'
    ]


async def test_excel_sheets_keep_their_header_rows(tmp_path: Path) -> None:
    path = write_xlsx(tmp_path / "people.xlsx", image=True)
    docs = await ExcelReader(chunk_size=500, split_by="char")(path)
    assert _texts(docs) == [
        "Sheet: People\n| Name | Age | City |\n| --- | --- | --- |\n"
        "| Alice | 25 | New York |\n| Bob | 30 | Lon\\|don |\n",
        "Sheet: Notes\n| Remember the milk. |\n| --- |\n",
    ]
    _check_numbering(docs, hashlib.sha256(str(path).encode()).hexdigest())

    reader = ExcelReader(
        500, "char", include_cell_coordinates=True, include_image=True, table_format="json"
    )
    docs = await reader(path)
    assert _texts(docs) == [
        "Sheet: People\n<system-info>A table loaded as a JSON array:</system-info>\n"
        '{"A1": "Name", "B1": "Age", "C1": "City"}\n'
        '{"A2": "Alice", "B2": "25", "C2": "New York"}\n'
        '{"A3": "Bob", "B3": "30", "C3": "Lon|don"}',
        "image",
        "Sheet: Notes\n<system-info>A table loaded as a JSON array:</system-info>\n"
        '{"A1": "Remember the milk."}',
    ]
    assert docs[1].metadata.content.source.media_type == "image/png"

    docs = await ExcelReader(500, "char", include_sheet_names=False, separate_sheet=True)(path)
    assert [d.metadata.chunk_id for d in docs] == [0, 0]
    assert not any("Sheet:" in t for t in _texts(docs))


async def test_powerpoint_slides_with_markers_tables_and_pictures(tmp_path: Path) -> None:
    path = write_pptx(tmp_path / "deck.pptx")
    docs = await PowerPointReader(chunk_size=500, split_by="char")(path)
    assert _texts(docs) == [
        "<slide index=1>\nQuarterly results\n| Quarter | Revenue |\n| --- | --- |\n"
        "| Q1 | 100 |\n\n</slide>",
        "image",
        "<slide index=2>\nThank you.\n</slide>",
    ]
    _check_numbering(docs, hashlib.sha256(str(path).encode()).hexdigest())
    docs = await PowerPointReader(
        500, "char", include_image=False, slide_prefix=None, slide_suffix=None
    )(path)
    assert _texts(docs) == [
        "Quarterly results\n| Quarter | Revenue |\n| --- | --- |\n| Q1 | 100 |\n",
        "Thank you.",
    ]
    docs = await PowerPointReader(500, "char", separate_slide=True)(path)
    assert [d.metadata.chunk_id for d in docs] == [0, 0, 1]


async def test_images_are_one_chunk_each(tmp_path: Path) -> None:
    local = tmp_path / "cat.png"
    local.write_bytes(png_bytes())
    urls = ["https://example.com/a.png", str(local)]
    docs = await ImageReader()(urls)
    assert [d.metadata.content.source.url for d in docs] == urls
    assert [d.metadata.doc_id for d in docs] == [hashlib.md5(u.encode()).hexdigest() for u in urls]
    assert all(d.metadata.total_chunks == 1 for d in docs)
    with pytest.raises(ReaderError, match="no such file"):
        await ImageReader()(str(tmp_path / "missing.png"))
    # A pathlib.Path names one image, as its string does.
    (doc,) = await ImageReader()(local)
    assert doc.metadata.content.source.url == str(local)
    assert doc.metadata.doc_id == ImageReader().get_doc_id(local) == docs[1].metadata.doc_id


_READERS = [
    (PDFReader, ".pdf"),
    (WordReader, ".docx"),
    (ExcelReader, ".xlsx"),
    (PowerPointReader, ".pptx"),
]


@pytest.mark.parametrize(("reader", "suffix"), _READERS, ids=[r.__name__ for r, _ in _READERS])
async def test_bad_files_raise_reader_errors_naming_them(
    tmp_path: Path, reader: type, suffix: str
) -> None:
    empty = tmp_path / f"empty{suffix}"
    empty.write_bytes(b"")
    corrupt = tmp_path / f"corrupt{suffix}"
    corrupt.write_bytes(
        b"%PDF-1.4\n" + b"\x00garbage" * 50 if suffix == ".pdf" else b"PK\x03\x04junk"
    )
    wrong = tmp_path / "notes.txt"
    wrong.write_text("plain text", encoding="utf-8")
    cases = [
        (tmp_path / f"missing{suffix}", "no such file"),
        (empty, "empty"),
        (corrupt, "damaged"),
        (wrong, "expected"),
    ]
    for path, message in cases:
        with pytest.raises(ReaderError, match=message) as info:
            await reader()(path)
        assert info.value.path == str(path)
        assert str(path) in str(info.value)


async def test_a_pdf_without_a_header_and_a_legacy_xls_are_refused(tmp_path: Path) -> None:
    fake = tmp_path / "fake.pdf"
    fake.write_bytes(b"just text")
    with pytest.raises(ReaderError, match="PDF header"):
        await PDFReader()(fake)
    legacy = tmp_path / "old.xls"
    legacy.write_bytes(b"\xd0\xcf\x11\xe0")
    with pytest.raises(ReaderError, match=r"\.xls format is not supported"):
        await ExcelReader()(legacy)


async def test_a_missing_parser_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_pdf(tmp_path / "a.pdf", ["text"])
    # None in sys.modules makes `import pypdf` fail as if it were not installed.
    monkeypatch.setitem(sys.modules, "pypdf", None)
    with pytest.raises(ImportError, match=r'\'pdf\' extra .*pip install -e "\.\[pdf\]"'):
        await PDFReader()(path)
    monkeypatch.setitem(sys.modules, "docx", None)
    with pytest.raises(ImportError, match=r'\'office\' extra .*pip install -e "\.\[office\]"'):
        await WordReader()(write_pdf(tmp_path / "b.docx", ["x"]))


def test_invalid_reader_arguments() -> None:
    with pytest.raises(ValueError, match="table_format"):
        WordReader(table_format="html")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="chunk_size"):
        PDFReader(chunk_size=0)
    with pytest.raises(ValueError, match="split_by"):
        PowerPointReader(split_by="words")  # type: ignore[arg-type]


async def test_chunking_runs_in_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Splitting a large text into chunks and numbering them takes seconds (a 5 MB text: about
    # ten): it is done where the file is read, off the event loop.
    from agentscope_rt.rag._reader import _text_reader

    loop_thread = threading.get_ident()
    threads: list[int] = []
    split_text = _text_reader.split_text

    def recording_split_text(*args: Any) -> list[str]:
        threads.append(threading.get_ident())
        return split_text(*args)

    monkeypatch.setattr(_text_reader, "split_text", recording_split_text)
    text = tmp_path / "a.txt"
    text.write_text("One. Two.", encoding="utf-8")
    sources = [
        (TextReader(), text),
        (PDFReader(), write_pdf(tmp_path / "a.pdf", ["Page one."])),
        (WordReader(), write_docx(tmp_path / "a.docx")),
        (ExcelReader(), write_xlsx(tmp_path / "a.xlsx")),
        (PowerPointReader(), write_pptx(tmp_path / "a.pptx")),
    ]
    for reader, path in sources:
        threads.clear()
        assert await reader(path)
        assert threads and loop_thread not in threads, type(reader).__name__
    threads.clear()
    assert await TextReader()("Text given as a string. Two sentences.")
    assert threads and loop_thread not in threads


async def test_a_slide_prefix_that_cannot_be_formatted_is_refused_when_built(
    tmp_path: Path,
) -> None:
    # It failed at the first read, reported as a damaged file.
    with pytest.raises(ValueError, match=r"slide_prefix.*\{index\}"):
        PowerPointReader(slide_prefix="<slide {n}>")
    with pytest.raises(ValueError, match="slide_prefix"):
        PowerPointReader(slide_prefix="<slide {index")
    with pytest.raises(TypeError, match="slide_suffix"):
        PowerPointReader(slide_suffix=3)  # type: ignore[arg-type]
    docs = await PowerPointReader(500, "char", slide_prefix="[{index}]")(
        write_pptx(tmp_path / "a.pptx", image=False)
    )
    assert docs[0].metadata.content["text"].startswith("[1]\n")
