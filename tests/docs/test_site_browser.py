"""The documentation site, built strictly and opened in a real browser (Debian's Chromium).

The test builds the site with ``mkdocs build --strict`` (as ``nox -s docs`` does), serves it
on 127.0.0.1 and, in headless Chromium, opens the home page, follows its link to a quick
start, opens an API page and the concurrency page (its diagrams drawn), and searches. It fails
on a console error, an uncaught page error, a failed or refused request (an asset missing, or
one the site would fetch from the network) and any HTTP error. Screenshots go to
``$DOCS_SCREENSHOT_DIR`` when set, else to the test's temporary folder.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from ..studio._browser import open_browser
from ._site import SiteBuild

TIMEOUT_MS = 30_000
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="module")
def site(site_build: SiteBuild) -> Path:
    assert site_build.returncode == 0 and not site_build.warnings(), site_build.output
    return site_build.folder


@contextlib.contextmanager
def served(folder: Path) -> Iterator[str]:
    """``folder`` served over HTTP on 127.0.0.1 (a free port) for the block's duration."""
    server = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1", "0"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # "Serving HTTP on 127.0.0.1 port 41234 (...)"
        port = re.search(r"port (\d+)", line)
        assert port, line
        yield f"http://127.0.0.1:{port.group(1)}"
    finally:
        server.terminate()
        server.wait(timeout=10)


class Problems:
    """What went wrong while pages were open: console errors, page errors, failed requests."""

    def __init__(self, page: Page, origin: str) -> None:
        self.found: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.found.append(f"page error: {error}"))
        page.on("requestfailed", self._failed)
        page.on("response", self._response)
        # Nothing may come from outside the site: a CDN asset would be missing offline.
        page.route(re.compile(r"^(?!" + re.escape(origin) + r")"), self._refuse)

    def _failed(self, request: object) -> None:
        failure = str(getattr(request, "failure", ""))
        # A request the browser dropped because the test moved to another page is no missing
        # asset (a missing one answers 404, which _response reports).
        if "ERR_ABORTED" not in failure:
            self.found.append(f"failed: {getattr(request, 'url', '?')} {failure}")

    def _console(self, message: object) -> None:
        if getattr(message, "type", "") == "error":
            self.found.append(f"console error: {getattr(message, 'text', message)}")

    def _response(self, response: object) -> None:
        status = getattr(response, "status", 200)
        if status >= 400:
            self.found.append(f"HTTP {status}: {getattr(response, 'url', '')}")

    def _refuse(self, route: object) -> None:
        self.found.append(f"outside request: {route.request.url}")  # type: ignore[attr-defined]
        route.abort()  # type: ignore[attr-defined]


def test_the_site_works_in_a_browser(site: Path, tmp_path: Path) -> None:
    shots = Path(os.environ.get("DOCS_SCREENSHOT_DIR") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    with served(site) as origin, open_browser(tmp_path / "profile") as browser:
        page = browser.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        problems = Problems(page, origin)

        # The home page, then its link to the trio quick start.
        page.goto(f"{origin}/index.html")
        expect(page.locator("article h1")).to_have_text(re.compile("agentscope-rt"))
        page.screenshot(path=shots / "home.png", full_page=False)
        page.locator("article").get_by_role("link", name="quick start with trio").click()
        expect(page).to_have_url(re.compile(r"quickstart_trio\.html$"))
        expect(page.locator("article h1")).to_have_text(re.compile("Quick start with trio"))
        expect(page.locator("article pre code").nth(1)).to_contain_text("trio.run(main)")
        page.screenshot(path=shots / "quickstart_trio.png")

        # An API page, rendered from the docstrings.
        page.goto(f"{origin}/api/agent.html")
        heading = page.locator("[id='agentscope_rt.agent.ReActAgent']")
        expect(heading).to_be_visible()
        expect(page.locator("article")).to_contain_text("interrupt")
        page.screenshot(path=shots / "api_agent.png")

        # The concurrency page: its mermaid diagrams are drawn (the site's own mermaid). Material
        # swaps each <pre class="mermaid"> for a <div class="mermaid"> holding the drawing in
        # a closed shadow root, so the drawing is checked by its size.
        page.goto(f"{origin}/concurrency.html")
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")  # drawn when seen
        expect(page.locator("article div.mermaid")).to_have_count(4)
        expect(page.locator("article pre.mermaid")).to_have_count(0)
        for diagram in page.locator("article div.mermaid").all():
            box = diagram.bounding_box()
            assert box is not None and box["height"] > 50, box
        page.locator("article div.mermaid").nth(1).scroll_into_view_if_needed()
        page.screenshot(path=shots / "concurrency.png")

        # Search (Material's index, in a web worker), then open a result.
        search = page.locator("input.md-search__input")
        search.click()
        search.press_sequentially("MsgHub", delay=50)  # typed: the search runs on key presses
        expect(page.locator(".md-search-result__meta")).to_contain_text("matching")
        hit = page.locator("a.md-search-result__link").filter(has_text="MsgHub").first
        expect(hit).to_be_visible()
        page.screenshot(path=shots / "search.png")
        hit.click()
        expect(page.locator("article")).to_contain_text("MsgHub")

        assert not problems.found, "\n".join(problems.found)
