"""Finding and running the code blocks of the documentation pages (and README.md).

Rules the pages follow (checked by tests/docs/test_doc_snippets.py):

* A ``python`` block runs. The blocks of one page run in order in one namespace, like notebook
  cells, in a temporary working directory; a block may ``await`` at top level (it is awaited on
  the test's backend), and a block that starts its own event loop (``anyio.run``,
  ``trio.run``, ``asyncio.run``) runs in a worker thread.
* A block preceded by ``<!-- not-run: <reason> -->`` is not run; the reason is required.
* ``bash``, ``sh``, ``shell`` and ``console`` blocks are commands: they must carry a
  ``not-run`` marker (the tests do not install packages or start sessions).
* Other blocks (``text``, ``json``, ``mermaid``, ``markdown``, no language) are output or data.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread

ROOT = Path(__file__).resolve().parents[2]
RUN_LANGUAGES = {"python", "py"}
COMMAND_LANGUAGES = {"bash", "sh", "shell", "console"}
_FENCE = re.compile(
    r"(?:^<!--\s*not-run:(?P<reason>[^\n]*?)-->\n)?^```(?P<lang>[\w-]*)[^\n]*\n(?P<code>.*?)^```$",
    re.M | re.S,
)
_OWN_LOOP = re.compile(r"\b(?:anyio|trio|asyncio)\.run\(")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str
    line: int
    language: str
    code: str
    not_run: str | None  # the reason given, None when there is no marker

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(page: Path, name: str | None = None) -> list[Block]:
    """Every fenced block of ``page``, in order (``name``: how errors name the page, by default
    its path in the repository)."""
    text = page.read_text(encoding="utf-8")
    name = name or page.relative_to(ROOT).as_posix()
    found = []
    for match in _FENCE.finditer(text):
        reason = match.group("reason")
        found.append(
            Block(
                page=name,
                line=text.count("\n", 0, match.start("lang")) + 1,
                language=match.group("lang").lower(),
                code=match.group("code"),
                not_run=None if reason is None else reason.strip(),
            )
        )
    return found


def problems(block: Block) -> list[str]:
    """What is wrong with how ``block`` is marked (an empty list when nothing is)."""
    if block.not_run is not None and not block.not_run:
        return [f"{block.where}: a not-run marker needs a reason"]
    if block.language in COMMAND_LANGUAGES and block.not_run is None:
        return [f"{block.where}: a {block.language} block needs <!-- not-run: reason -->"]
    return []


def runnable(page_blocks: list[Block]) -> list[Block]:
    return [b for b in page_blocks if b.language in RUN_LANGUAGES and b.not_run is None]


async def run_block(block: Block, namespace: dict[str, Any]) -> None:
    """Run one block in ``namespace``: awaited on the current loop, or in a worker thread when it
    starts an event loop of its own. An exception propagates with the page and line in its
    traceback's file name."""
    # Line numbers in tracebacks point into the page: the code starts after the fence line.
    source = "\n" * block.line + block.code
    if _OWN_LOOP.search(block.code):
        code = compile(source, block.page, "exec")
        await anyio.to_thread.run_sync(exec, code, namespace)
        return
    code = compile(source, block.page, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, namespace)
    if isinstance(result, Awaitable):
        await result
