"""Ctrl+C stops an evaluation cleanly, and the next run does only what was left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

# Starts the rest of the command line with SIGINT ignored, as a shell starts a background job
# (``nohup ... &``, some CI runners): the run must be interruptible however the suite started.
_AS_A_BACKGROUND_JOB = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


def _run(folder: Path, backend: str, mode: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    child = ["-m", "tests.evaluate._interrupted_run", str(folder), backend, mode]
    return subprocess.run(
        [sys.executable, "-c", _AS_A_BACKGROUND_JOB, *child],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_ctrl_c_stops_the_run_and_the_next_run_resumes(tmp_path: Path, backend: str) -> None:
    interrupted = _run(tmp_path, backend, "interrupt")
    assert interrupted.returncode != 0
    assert "KeyboardInterrupt" in interrupted.stderr
    done = {p.parent.parent.name for p in tmp_path.rglob("solution.json")}
    assert done and "t5" not in done
    assert not list(tmp_path.rglob("error.json")) and not list(tmp_path.rglob("*.tmp"))

    finished = _run(tmp_path, backend, "finish")
    assert finished.returncode == 0, finished.stderr
    ran = {line.split()[1] for line in finished.stdout.splitlines() if line.startswith("ran ")}
    assert ran == {f"t{i}" for i in range(10)} - done
    assert len(list(tmp_path.rglob("solution.json"))) == 10
