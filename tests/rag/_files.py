"""Small real files for the reader tests, written with the libraries themselves (and a PDF
written by hand: no PDF writer with text support is a dependency)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path


def png_bytes(rgb: tuple[int, int, int] = (255, 0, 0)) -> bytes:
    """A valid 1x1 PNG of colour *rgb*."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00" + bytes(rgb))
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def write_pdf(path: Path, pages: list[str]) -> Path:
    """A PDF with one line of Helvetica text per page, cross-reference table and all."""
    objects: list[bytes] = []
    n = len(pages)
    # 1: catalog, 2: pages, 3: font, then per page: page object, content stream.
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(n))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, text in enumerate(pages):
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {5 + 2 * i} 0 R "
            "/Resources << /Font << /F1 3 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    path.write_bytes(pdf_of(objects))
    return path


def pdf_of(objects: list[bytes]) -> bytes:
    """A PDF file of *objects* (numbered from 1, the first the catalog), with its
    cross-reference table and trailer."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def write_docx(path: Path, *, image: bool = True) -> Path:
    """A Word document: two paragraphs, a table, a paragraph with a picture, a last paragraph."""
    import io

    import docx

    document = docx.Document()
    document.add_paragraph("First paragraph of the report.")
    document.add_paragraph("Second paragraph follows it.")
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate([["Name", "Age"], ["Alice", "30"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    if image:
        document.add_picture(io.BytesIO(png_bytes()))
    document.add_paragraph("Closing words.")
    document.save(str(path))
    return path


def write_xlsx(path: Path, *, image: bool = False) -> Path:
    """A workbook: sheet "People" with a header row and two rows, an empty sheet, sheet "Notes",
    and a chart sheet."""
    import io

    import openpyxl
    from openpyxl.drawing.image import Image

    workbook = openpyxl.Workbook()
    people = workbook.active
    people.title = "People"
    for row in [["Name", "Age", "City"], ["Alice", 25, "New York"], ["Bob", 30, "Lon|don"]]:
        people.append(row)
    workbook.create_sheet("Empty")
    notes = workbook.create_sheet("Notes")
    notes["A1"] = "Remember the milk."
    # A chart sheet holds no cells: the reader passes over it.
    from openpyxl.chart import BarChart, Reference

    chart = BarChart()
    chart.add_data(Reference(people, min_col=2, min_row=2, max_row=3))
    workbook.create_chartsheet("Chart").add_chart(chart)
    if image:
        picture = Image(io.BytesIO(png_bytes()))
        people.add_image(picture, "E2")
    workbook.save(str(path))
    return path


def write_pptx(path: Path, *, image: bool = True) -> Path:
    """A deck: slide 1 with a title and a table, slide 2 with a picture then a text box."""
    import io

    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    slide.shapes.title.text = "Quarterly results"
    table = slide.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for r, row in enumerate([["Quarter", "Revenue"], ["Q1", "100"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    slide = deck.slides.add_slide(deck.slide_layouts[6])  # blank
    if image:
        slide.shapes.add_picture(io.BytesIO(png_bytes()), Inches(1), Inches(1))
    box = slide.shapes.add_textbox(Inches(1), Inches(3), Inches(4), Inches(1))
    box.text_frame.text = "Thank you."
    deck.save(str(path))
    return path
