"""The process-wide list of folders local files may be read from, emptied for a test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from agentscope_rt.formatter import allow_local_files, allowed_local_folders, disallow_local_files


@contextmanager
def no_local_folder_allowed() -> Iterator[None]:
    """Inside: no folder is allowed (the default). After: the folders allowed before, and only
    them, whatever the block allowed or raised."""
    before = allowed_local_folders()
    disallow_local_files()
    try:
        yield
    finally:
        disallow_local_files()
        allow_local_files(*before)
