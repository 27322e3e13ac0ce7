"""MkDocs hook: one API reference page per public package of ``agentscope_rt``.

Each page is generated at build time (``::: agentscope_rt.<package>``, rendered by mkdocstrings
from the docstrings) and listed under "API reference" in the navigation. The order comes from
``extra.api_packages`` in mkdocs.yml; a public package missing from that list still gets a page,
after the listed ones, so a new package is never left out of the reference.
"""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

PACKAGE = "agentscope_rt"
ROOT = Path(__file__).resolve().parents[2]
SECTION = "API reference"
# The docstrings cross-reference in Sphinx's roles (:class:`Msg`), which mkdocstrings renders as
# the role's text followed by the code: keep the code, drop the role.
_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|data|attr|exc|mod|obj|const):(?=<code>)")
# A role naming a full path (:class:`~agentscope_rt.tool.ToolResponse`) becomes a link to that
# object's entry, which autorefs resolves after every page is rendered; Sphinx's "~" shows the
# last name only. A path with no entry (a private module's name) stays as plain code.
_PATH_ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|data|attr|exc|mod|obj|const):"
    rf"<code>(?P<tilde>~?)(?P<path>{PACKAGE}(?:\.\w+)+)</code>"
)


def api_packages(config: MkDocsConfig) -> list[str]:
    """The public packages to document, listed ones first (in their order), then the rest."""
    found = sorted(
        info.name
        for info in pkgutil.iter_modules([str(ROOT / PACKAGE)])
        if info.ispkg and not info.name.startswith("_")
    )
    listed = [name for name in config.extra.get("api_packages", []) if name in found]
    return listed + [name for name in found if name not in listed]


def _page(package: str) -> str:
    return f"api/{package}.md"


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    section = [{f"{PACKAGE}.{name}": _page(name)} for name in api_packages(config)]
    config.nav = [*(config.nav or []), {SECTION: section}]
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for name in api_packages(config):
        content = f"# `{PACKAGE}.{name}`\n\n::: {PACKAGE}.{name}\n"
        files.append(File.generated(config, _page(name), content=content))
    return files


def _reference(match: re.Match[str]) -> str:
    path = match["path"]
    shown = path.rsplit(".", 1)[-1] if match["tilde"] else path
    return f'<autoref identifier="{path}" optional><code>{shown}</code></autoref>'


def on_page_content(html: str, **_: object) -> str:
    return _ROLE.sub("", _PATH_ROLE.sub(_reference, html))
