"""Headless Chromium for the studio tests: Debian's system browser driven by playwright.

No browser is ever downloaded: playwright is pointed at ``/usr/bin/chromium`` (the noxfile
installs Debian's package when it is missing) with a fresh profile folder. Playwright's sync
API runs in the worker thread that calls :func:`open_browser`; the runtime under test keeps its
own event loop (asyncio or trio) in the main thread.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from playwright.sync_api import BrowserContext, sync_playwright

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextlib.contextmanager
def open_browser(profile: Path) -> Iterator[BrowserContext]:
    """A browser context on a fresh profile in *profile*; closed on exit."""
    os.environ["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] = "1"
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport={"width": 1500, "height": 950},
        )
        try:
            yield context
        finally:
            context.close()
