"""Durable replies killed at exact points, with the agent's memory in memory or in a database.

The child program of ``tests/react/test_react_durable.py`` (a five-step task run by a durable
agent) kills itself with SIGKILL at one exact point: right after its input was recorded in
memory, right after a tool result was recorded but before it was checkpointed, or right after
the reply's last checkpoint. Running the program again must end with the same answer and a
consistent memory: the input recorded once, every tool call answered exactly once, no
completed step run twice, and a finished reply returned instead of being started again.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from . import _durable_child

CHILD = _durable_child.__file__
TASK = _durable_child.TASK
ANSWER = "All 5 steps are done: 1, 2, 3, 4, 5."
MEMORIES = ["in_memory", "sqlite"]


def _run(
    tmp_path: Path, backend: str, memory: str, kill_at: str = "", mode: str = ""
) -> dict[str, Any] | None:
    """Run the child once; its summary, or None when it killed itself."""
    child = subprocess.run(
        [
            sys.executable,
            CHILD,
            str(tmp_path / "session.db"),
            backend,
            str(tmp_path / "steps.log"),
            memory,
            kill_at,
            mode,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = child.stdout.splitlines()
    if lines and lines[-1].startswith("{"):
        assert child.returncode == 0, child.stderr
        return json.loads(lines[-1])  # type: ignore[no-any-return]
    assert child.returncode == -9, child.stderr  # it killed itself where it was told to
    return None


def _check_consistent(final: dict[str, Any], log: Path) -> None:
    memory = final["memory"]
    assert final["answer"] == ANSWER
    assert [e for e in memory if e[0] == "user"] == [["user", TASK]], memory
    calls = [e[1] for e in memory if e[0] == "call"]
    results = [e[1] for e in memory if e[0] == "result"]
    assert calls == results, memory
    assert len(set(calls)) == len(calls), memory
    ran = Counter(int(n) for n in log.read_text().split())
    attempts = Counter(e[2] for e in memory if e[0] == "call")
    assert all(ran[n] <= attempts[n] for n in ran), (ran, attempts)
    done = Counter(e[2] for e in memory if e[0] == "result" and e[2] != "cut off")
    assert all(v == 1 for v in done.values()), memory


@pytest.mark.parametrize("memory", MEMORIES)
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_reply_killed_after_recording_its_input_records_it_once(
    backend: str, memory: str, tmp_path: Path
) -> None:
    final = None
    for _ in range(3):  # killed again and again at the same point, as long as it gets there
        final = _run(tmp_path, backend, memory, "input")
        if final is not None:
            break
    final = final or _run(tmp_path, backend, memory)
    assert final is not None
    _check_consistent(final, tmp_path / "steps.log")


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
@pytest.mark.parametrize("step", [1, 3])
@pytest.mark.parametrize("memory", MEMORIES)
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_reply_killed_between_a_result_and_its_checkpoint_answers_each_call_once(
    backend: str, memory: str, step: int, mode: str, tmp_path: Path
) -> None:
    assert _run(tmp_path, backend, memory, f"result-{step}", mode) is None
    final = _run(tmp_path, backend, memory, "", mode)
    assert final is not None
    _check_consistent(final, tmp_path / "steps.log")


@pytest.mark.parametrize("memory", MEMORIES)
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_reply_killed_after_its_last_checkpoint_is_returned_not_started_again(
    backend: str, memory: str, tmp_path: Path
) -> None:
    assert _run(tmp_path, backend, memory, "final") is None
    log = tmp_path / "steps.log"
    ran = log.read_text()
    final = _run(tmp_path, backend, memory)
    assert final is not None
    _check_consistent(final, log)
    assert log.read_text() == ran  # nothing ran again
    # The finished reply, as it was: one reasoning step per step, then the answer.
    assert len([e for e in final["memory"] if e[0] == "call"]) == 5
    assert final["memory"][-1] == ["assistant", ANSWER]
