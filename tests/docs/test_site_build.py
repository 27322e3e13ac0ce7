"""The documentation site builds with no warning, and every page is reachable from its menu.

``mkdocs build --strict`` fails on a warning only when the warning is printed (``--quiet``
drops it and the build exits 0), so the build here is not quiet and its output is read too.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ._site import SiteBuild, build_site
from ._snippets import ROOT

PAGES = sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md"])


def test_the_site_builds_strictly_without_a_warning(site_build: SiteBuild) -> None:
    assert site_build.warnings() == [], site_build.output
    assert site_build.returncode == 0, site_build.output
    assert (site_build.folder / "index.html").is_file()


def test_a_strict_build_fails_on_a_warning(tmp_path: Path) -> None:
    # The check above must be able to fail: a page with a link to a missing heading.
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[there](#nowhere)\n", encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\nvalidation:\n  anchors: warn\n", encoding="utf-8"
    )
    built = build_site(tmp_path / "site", root=tmp_path)
    assert built.returncode != 0
    assert any("#nowhere" in line for line in built.warnings()), built.output


def _glued_headings(text: str) -> list[int]:
    """Lines of a heading written right under a table row (Markdown reads it as one more row)."""
    lines = text.splitlines()
    return [
        number + 1
        for number, line in enumerate(lines)
        if number and line.startswith("#") and lines[number - 1].lstrip().startswith("|")
    ]


def test_no_heading_is_glued_to_a_table() -> None:
    found = {
        page.name: glued
        for page in PAGES
        if (glued := _glued_headings(page.read_text(encoding="utf-8")))
    }
    assert found == {}, "put a blank line between the table and the heading"


def test_the_glued_heading_check_finds_one() -> None:
    assert _glued_headings("| a | b |\n| --- | --- |\n| 1 | 2 |\n## Next\n\n## Fine\n") == [4]


def _nav_pages(nav: object) -> set[str]:
    if isinstance(nav, str):
        return {nav}
    if isinstance(nav, list):
        return set().union(*(_nav_pages(item) for item in nav))
    if isinstance(nav, dict):
        return set().union(*(_nav_pages(item) for item in nav.values()))
    return set()


def test_every_page_is_in_the_navigation() -> None:
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    # The file names Python objects (!!python/name:...) that only MkDocs' loader resolves.
    nav = yaml.safe_load(re.sub(r"!!python/name:\S+", "null", text))["nav"]
    pages = {page.name for page in (ROOT / "docs").glob("*.md")}
    assert sorted(pages - _nav_pages(nav)) == []


def test_the_api_pages_show_no_raw_cross_reference(site_build: SiteBuild) -> None:
    # A docstring's :class:`~agentscope_rt.tool.ToolResponse` is a link (or, for an object with
    # no entry, its plain name), never the Sphinx source text.
    raw = re.compile(r"~agentscope_rt\.|:(?:class|func|meth|data|attr|exc|mod|obj):")
    found = {
        page.relative_to(site_build.folder).as_posix(): len(hits)
        for page in site_build.folder.rglob("*.html")
        if (hits := raw.findall(page.read_text(encoding="utf-8")))
    }
    assert found == {}
    tool_page = (site_build.folder / "api" / "mcp.html").read_text(encoding="utf-8")
    assert 'href="tool.html#agentscope_rt.tool.ToolResponse"><code>ToolResponse</code></a>' in (
        tool_page
    )
