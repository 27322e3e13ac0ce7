"""Formatter tests read their media from ``data/`` and from temporary folders: both are
allowed for every test here (reading local files is off by default, see
``agentscope_rt.formatter.allow_local_files``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentscope_rt.formatter import allow_local_files


@pytest.fixture(autouse=True)
def allow_test_media(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with allow_local_files(Path(__file__).parent / "data", tmp_path_factory.getbasetemp()):
        yield
