"""The evaluation page's quick start, run as written, solves the benchmark it evaluates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..docs._snippets import blocks, run_block, runnable
from .conftest import ROOT


async def test_the_quick_start_scores_every_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    quick_start = runnable(blocks(ROOT / "docs" / "evaluate.md"))[0]
    assert "GeneralEvaluator(" in quick_start.code and "ArithmeticBenchmark()" in quick_start.code
    namespace: dict[str, Any] = {"__name__": "evaluate_quick_start"}
    await run_block(quick_start, namespace)
    saved = tmp_path / "results"
    result = json.loads((saved / "evaluation_result.json").read_text("utf-8"))["repeats"]["0"]
    assert result["metrics"]["correct"]["aggregation"] == {"correct": 1.0}
    assert result["metrics"]["abs_error"]["aggregation"]["max"] == 0.0
    assert not list(saved.glob("*/*/error.json"))  # no solution failed
    assert len(list(saved.glob("arith-*/0/solution.json"))) == 36
