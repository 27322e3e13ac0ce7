"""Every code block of the documentation runs, on asyncio and on trio, or says why it does not.

The pages are docs/*.md and README.md (docs/migration.md has its own conventions and test:
tests/test_migration_guide.py). See tests/docs/_snippets.py for the rules a page follows.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ._snippets import ROOT, Block, blocks, problems, run_block, runnable

PAGES = sorted(
    [p for p in (ROOT / "docs").glob("*.md") if p.name != "migration.md"] + [ROOT / "README.md"]
)
ALL_BLOCKS = [block for page in PAGES for block in blocks(page)]
RUN_PAGES = [page for page in PAGES if runnable(blocks(page))]


def test_every_block_is_marked_as_the_rules_say() -> None:
    found = [problem for block in ALL_BLOCKS for problem in problems(block)]
    assert not found, "\n".join(found)


def test_most_python_blocks_run() -> None:
    # The marker is for what cannot run here (a paid API, a server elsewhere), not an escape.
    python = [b for b in ALL_BLOCKS if b.language == "python"]
    skipped = [b for b in python if b.not_run is not None]
    assert len(python) >= 50
    assert len(skipped) * 3 <= len(python), [b.where for b in skipped]


def test_no_page_installs_from_pypi() -> None:
    # The package is not published: an install line must work from a clone.
    for page in [*PAGES, ROOT / "docs" / "migration.md"]:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"pip install [\"']?agentscope-rt\b", text), page.name


def test_the_parser_reads_markers_and_languages(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    text = (
        "# t\n\n```python\nx = 1\n```\n\n<!-- not-run: needs a key -->\n```python\ny\n```\n\n"
        "```bash\npip install x\n```\n\n<!-- not-run: -->\n```text\nout\n```\n"
    )
    page.write_text(text, encoding="utf-8")
    found = blocks(page, name="page.md")
    assert [(b.language, b.not_run, b.line) for b in found] == [
        ("python", None, 3),
        ("python", "needs a key", 8),
        ("bash", None, 12),
        ("text", "", 17),
    ]
    assert [b.code for b in runnable(found)] == ["x = 1\n"]
    assert [len(problems(b)) for b in found] == [0, 0, 1, 1]


@pytest.mark.parametrize("page", RUN_PAGES, ids=[p.relative_to(ROOT).as_posix() for p in RUN_PAGES])
async def test_a_page_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # Pages fall back to the local model without a key: never reach a paid API from a test.
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DASHSCOPE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    namespace: dict[str, Any] = {"__name__": f"doc_{page.stem}"}
    for block in runnable(blocks(page)):
        await _run(block, namespace)


async def _run(block: Block, namespace: dict[str, Any]) -> None:
    try:
        await run_block(block, namespace)
    except Exception as exc:
        raise AssertionError(f"the block at {block.where} failed: {exc!r}") from exc
