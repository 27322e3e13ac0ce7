"""A timeout around a read takes effect at once, and the reader's worker thread stops at its
next step instead of parsing the rest of a large file for nothing."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.rag import PDFReader

from ._large_documents import many_page_pdf

PAGES = 20_000


def threads_in(filename: str) -> int:
    """How many threads are running code of the module file *filename* right now."""
    count = 0
    for frame in sys._current_frames().values():
        current: Any = frame
        while current is not None:
            if current.f_code.co_filename.endswith(filename):
                count += 1
                break
            current = current.f_back
    return count


@pytest.fixture
def big_pdf(tmp_path: Path) -> Path:
    path = tmp_path / "big.pdf"
    path.write_bytes(many_page_pdf(PAGES))
    return path


async def test_a_timeout_around_a_pdf_read_stops_the_worker_thread(
    big_pdf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pypdf

    extracted = 0
    real = pypdf.PageObject.extract_text

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal extracted
        extracted += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pypdf.PageObject, "extract_text", counting)
    result = None
    with anyio.fail_after(120):
        with anyio.move_on_after(0.5) as scope:
            result = await PDFReader()(big_pdf)
        assert scope.cancelled_caught and result is None
        # The abandoned thread stops at its next page.
        # (Polled: nothing signals from a thread no one waits for any more.)
        while threads_in("_pdf_reader.py"):  # noqa: ASYNC110
            await anyio.sleep(0.05)
    assert extracted < PAGES


async def test_an_uncancelled_read_still_reads_every_page(tmp_path: Path) -> None:
    path = tmp_path / "some.pdf"
    path.write_bytes(many_page_pdf(30, text="Hello there."))
    docs = await PDFReader()(path)
    assert [d.metadata.content["text"] for d in docs] == ["Hello there."] * 30  # type: ignore[index]
