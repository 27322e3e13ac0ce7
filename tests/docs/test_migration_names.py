"""docs/migration.md's table of AgentScope 1.x public names matches AgentScope and this package.

The names are the ``__all__`` of AgentScope 1.0.21's public packages, kept in
tests/data/agentscope_1x_public_names.tsv. Every name has one row in the table; a row that says
``present`` imports from the matching ``agentscope_rt`` module, a ``moved`` row from the module
it names, and an ``absent`` row gives a reason.
"""

from __future__ import annotations

import importlib
import re

from ._snippets import ROOT

SECTION = "## Every AgentScope 1.x public name"
NAMES = ROOT / "tests" / "data" / "agentscope_1x_public_names.tsv"
_ROW = re.compile(r"^\| `(?P<name>[^`]+)` \| (?P<status>[^|]+) \| (?P<notes>[^|]*) \|$")


def _expected() -> list[tuple[str, str]]:
    lines = NAMES.read_text(encoding="utf-8").splitlines()
    return [tuple(line.split("\t")) for line in lines if line and not line.startswith("#")]  # type: ignore[misc]


def _table() -> dict[tuple[str, str], tuple[str, str]]:
    text = (ROOT / "docs" / "migration.md").read_text(encoding="utf-8")
    assert SECTION in text
    rows: dict[tuple[str, str], tuple[str, str]] = {}
    module = None
    for line in text.split(SECTION, 1)[1].splitlines():
        heading = re.fullmatch(r"### `([\w.]+)`", line)
        if heading:
            module = heading.group(1)
            continue
        row = _ROW.match(line)
        if row and module:
            key = (module, row.group("name"))
            assert key not in rows, f"two rows for {key}"
            rows[key] = (row.group("status").strip(), row.group("notes").strip())
    return rows


def test_every_agentscope_name_has_one_row() -> None:
    expected = _expected()
    table = _table()
    assert len(expected) >= 200
    assert sorted(table) == sorted(set(expected))


def test_present_and_moved_names_import_and_absent_ones_say_why() -> None:
    for (module, name), (status, notes) in _table().items():
        if status == "present":
            where = module.replace("agentscope", "agentscope_rt", 1)
        elif status.startswith("moved: "):
            where = status.removeprefix("moved: ").strip("`")
        else:
            assert status == "absent", (module, name, status)
            assert len(notes) > 20, (module, name)
            continue
        assert hasattr(importlib.import_module(where), name), f"{where}.{name} ({status})"
