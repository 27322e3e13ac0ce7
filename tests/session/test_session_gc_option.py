"""Sessions leave Python's garbage collector alone unless asked: holding it off while a state is
encoded or decoded is the explicit, process-wide ``pause_gc`` option (off by default)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from agentscope_rt.module import StateModule
from agentscope_rt.session import JSONSession, SessionBase, SQLiteSession


class _Watching(StateModule):
    """Records whether the collector was on each time its state is taken or loaded (it runs
    inside the session's encoding and decoding)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[bool] = []

    def state_dict(self) -> dict[str, Any]:
        self.seen.append(gc.isenabled())
        return {"value": 1}

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        self.seen.append(gc.isenabled())


def _sessions(tmp_path: Path, **options: Any) -> list[SessionBase]:
    return [JSONSession(tmp_path / "json", **options), SQLiteSession(tmp_path / "s.db", **options)]


async def test_by_default_a_session_never_disables_the_garbage_collector(tmp_path: Path) -> None:
    assert gc.isenabled()
    for session in _sessions(tmp_path):
        watching = _Watching()
        await session.save_session_state("s", module=watching)
        await session.load_session_state("s", module=watching)
        # Taken for the save, taken again before the load (for a roll-back), loaded.
        assert watching.seen and all(watching.seen), type(session).__name__


async def test_pause_gc_holds_the_collector_off_and_gives_it_back(tmp_path: Path) -> None:
    for session in _sessions(tmp_path, pause_gc=True):
        watching = _Watching()
        await session.save_session_state("s", module=watching)
        assert watching.seen == [False]
        assert gc.isenabled()
        await session.load_session_state("s", module=watching)
        assert watching.seen[-1] is False
        assert gc.isenabled()


async def test_pause_gc_leaves_a_disabled_collector_disabled(tmp_path: Path) -> None:
    gc.disable()
    try:
        for session in _sessions(tmp_path, pause_gc=True):
            await session.save_session_state("s", module=_Watching())
            await session.load_session_state("s", module=_Watching())
            assert not gc.isenabled()
    finally:
        gc.enable()


def test_pause_gc_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        SQLiteSession("s.db", True)  # type: ignore[misc]
