"""What an example prints is read by a person: its results, not pages of tool-call JSON or a
library's notice that asks nothing of the reader."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .test_new_examples import EXAMPLES, ROOT

pytest.importorskip("ray")

# 85_evaluate prints two metric tables and a few result lines: about 50. Its 36 agents' console
# output (tool calls as JSON, ~900 lines) belongs in each task's logging.txt.
MAX_LINES = 80


def test_the_evaluation_example_prints_results_not_its_agents_json() -> None:
    env = {
        **os.environ,
        "AGENTSCOPE_RT_EXAMPLES": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("AGENTSCOPE_RT_DISABLE_CONSOLE_OUTPUT", None)  # printed as a user would see it
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "85_evaluate.py")],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert len(lines) <= MAX_LINES, "\n".join(lines[:40])
    assert '"tool_use"' not in done.stdout
    assert "same as GeneralEvaluator's: True" in done.stdout
    # Ray's notice that token authentication is on (its default) is left out.
    assert "Token authentication" not in done.stdout + done.stderr
