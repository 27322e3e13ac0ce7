"""Documents small on disk and large once read, for the reader tests: a PDF of many pages
sharing one content stream, and Office archives whose parts expand far beyond their size."""

from __future__ import annotations

import zipfile
from pathlib import Path

from ._files import pdf_of


def many_page_pdf(pages: int, text: str = "A sentence on a page. Another one.") -> bytes:
    """A valid PDF of *pages* pages that all show *text* (one content stream and one font,
    shared: about 150 bytes a page)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, below
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    first = len(objects) + 1
    kids = " ".join(f"{first + i} 0 R" for i in range(pages))
    objects[1] = f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode()
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
    )
    objects.extend([page] * pages)
    return pdf_of(objects)


def inflate_member(source: Path, target: Path, member: str, extra: bytes) -> None:
    """Copy the Office file *source* to *target* with *extra* added to the XML part *member*
    just before its last closing tag (deflated, so a long run of one byte costs little)."""
    with (
        zipfile.ZipFile(source) as archive,
        zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out,
    ):
        for info in archive.infolist():
            data = archive.read(info.filename)
            if info.filename == member:
                cut = data.rindex(b"</")
                data = data[:cut] + extra + data[cut:]
            out.writestr(info.filename, data, compress_type=zipfile.ZIP_DEFLATED)
