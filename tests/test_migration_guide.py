"""Every agentscope-rt snippet in docs/migration.md runs, on asyncio and on trio.

A fenced ``python`` block whose first line is ``# agentscope-rt`` is executed in a fresh
namespace, in a temporary working directory; if it defines ``async def main()``, that is awaited
on the test's backend. Blocks starting ``# AgentScope 1.x`` show AgentScope's code and are not
run (AgentScope is not installed in the test environment).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "migration.md"
RUN_MARKER = "# agentscope-rt"
SHOW_MARKER = "# AgentScope 1.x"


def _snippets() -> list[tuple[str, str]]:
    text = GUIDE.read_text(encoding="utf-8")
    heading = "top"
    found: list[tuple[str, str]] = []
    counts: dict[str, int] = {}
    for match in re.finditer(r"^## ([^\n]+)$|^```python\n(.*?)^```$", text, re.M | re.S):
        if match.group(1):
            heading = match.group(1).strip()
            continue
        code = match.group(2)
        first = code.splitlines()[0].strip() if code.strip() else ""
        if first == RUN_MARKER:
            counts[heading] = counts.get(heading, 0) + 1
            found.append((f"{heading} #{counts[heading]}", code))
        elif first != SHOW_MARKER:
            raise AssertionError(
                f"a python block under {heading!r} starts with neither {RUN_MARKER!r} nor "
                f"{SHOW_MARKER!r}: {first!r}"
            )
    return found


SNIPPETS = _snippets()


def test_the_guide_has_snippets_for_its_sections() -> None:
    sections = {name.rsplit(" #", 1)[0] for name, _ in SNIPPETS}
    assert len(SNIPPETS) >= 10
    assert {"Content blocks are attrs classes", "Interrupts are only interrupts", "Sessions"} <= (
        sections
    )


@pytest.mark.parametrize(("name", "code"), SNIPPETS, ids=[name for name, _ in SNIPPETS])
async def test_a_migration_snippet_runs(
    name: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": f"migration_snippet_{abs(hash(name))}"}
    exec(compile(code, f"docs/migration.md [{name}]", "exec"), namespace)
    main = namespace.get("main")
    if main is not None:
        await main()
