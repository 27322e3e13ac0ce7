"""Fixtures shared by the tool tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._media_servers import MediaServer


@pytest.fixture(scope="module")
def media_server() -> Iterator[MediaServer]:
    """One scripted media server per test module (a test's ``server`` fixture resets it)."""
    with MediaServer() as media:
        yield media
