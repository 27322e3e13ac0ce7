"""Folders written by AgentScope 1.0.21's evaluator are read here, and ours by AgentScope.

tests/data/evaluate/agentscope_1_0_21 was written by AgentScope's GeneralEvaluator and
tests/data/evaluate/agentscope_read_agentscope_rt.json is what AgentScope read from
tests/data/evaluate/agentscope_rt, a folder this library wrote (both made by
_record_agentscope.py on the same benchmark as _sums.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from agentscope_rt.evaluate import (
    FileEvaluatorStorage,
    GeneralEvaluator,
    SolutionOutput,
    Task,
)
from agentscope_rt.message import TextBlock, ToolResultBlock, ToolUseBlock

from ._sums import N_REPEAT, TASKS, Sums, solution

DATA = Path(__file__).resolve().parent.parent / "data" / "evaluate"
AGENTSCOPE_DIR = DATA / "agentscope_1_0_21"
OURS_DIR = DATA / "agentscope_rt"


def _without_timestamps(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timestamps(v) for k, v in value.items() if k != "created_at"}
    if isinstance(value, list):
        return [_without_timestamps(v) for v in value]
    return value


def _tree(folder: Path) -> dict[str, Any]:
    """Every JSON file of an evaluation folder, by relative path, without timestamps."""
    return {
        p.relative_to(folder).as_posix(): _without_timestamps(json.loads(p.read_text("utf-8")))
        for p in sorted(folder.rglob("*.json"))
    }


def test_a_solution_written_by_agentscope_reads_as_blocks() -> None:
    storage = FileEvaluatorStorage(AGENTSCOPE_DIR)
    output = storage.get_solution_result("t1", "0")
    assert output == SolutionOutput(
        success=True,
        output=5,
        trajectory=[
            ToolUseBlock(id="call-1", name="add", input={"a": 2, "b": 3}),
            ToolResultBlock(id="call-1", name="add", output=[TextBlock(text="5")]),
            TextBlock(text="The answer is 5."),
        ],
        meta={"attempt": 1},
    )
    assert output["output"] == 5  # AgentScope's outputs are dicts too
    result = storage.get_evaluation_result("t3", "1", "correct")
    assert (result.name, result.result, result.message) == ("correct", "no", "checked")
    assert storage.get_solution_stats("t2", "0") == {
        "llm": {"scripted-model": 1},
        "agent": 1,
        "tool": {"add": 1},
        "embedding": {},
        "chat_usage": {"scripted-model": {"input_tokens": 20, "output_tokens": 5}},
    }


async def test_a_run_over_agentscope_s_folder_resumes_everything_and_aggregates_alike(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "eval"
    shutil.copytree(AGENTSCOPE_DIR, folder)
    expected = json.loads((AGENTSCOPE_DIR / "evaluation_result.json").read_text("utf-8"))

    async def must_not_run(task: Task, hook: Any) -> SolutionOutput:
        raise AssertionError(f"{task.id} should have resumed from storage")

    storage = FileEvaluatorStorage(folder)
    evaluator = GeneralEvaluator("sums-eval", Sums(), N_REPEAT, storage, n_workers=4)
    await evaluator.run(must_not_run)

    ours = json.loads((folder / "evaluation_result.json").read_text("utf-8"))
    for repeat in ours["repeats"].values():
        assert repeat.pop("failed_ids") == []
    assert ours == expected
    assert not list(folder.rglob("error.json"))


async def test_our_folder_has_agentscope_s_files_and_contents(tmp_path: Path) -> None:
    storage = FileEvaluatorStorage(tmp_path / "eval")
    await GeneralEvaluator("sums-eval", Sums(), N_REPEAT, storage, n_workers=3).run(solution)

    ours, theirs = _tree(tmp_path / "eval"), _tree(AGENTSCOPE_DIR)
    for repeat in ours["evaluation_result.json"]["repeats"].values():
        assert repeat.pop("failed_ids") == []
    assert ours == theirs


def test_agentscope_read_every_file_of_a_folder_we_wrote() -> None:
    # What AgentScope 1.0.21 read from OURS_DIR (its storage's getters, then a resumed run of
    # its GeneralEvaluator that called no solution and aggregated).
    record = json.loads((DATA / "agentscope_read_agentscope_rt.json").read_text("utf-8"))
    ours = FileEvaluatorStorage(OURS_DIR)
    for tid, _, _ in TASKS:
        for repeat in map(str, range(N_REPEAT)):
            read = record["pairs"][f"{tid}/{repeat}"]
            assert read["solution"] == ours.get_solution_result(tid, repeat).to_dict()
            assert read["stats"] == ours.get_solution_stats(tid, repeat)
            for name, result in read["metrics"].items():
                stored = ours.get_evaluation_result(tid, repeat, name).to_dict()
                assert result == _without_timestamps(stored)
    theirs = _without_timestamps(record["aggregation"])
    assert theirs == _tree(AGENTSCOPE_DIR)["evaluation_result.json"]


def test_the_folder_agentscope_read_is_what_we_write_today(tmp_path: Path) -> None:
    # OURS_DIR stays representative: today's code writes the same files.
    import anyio

    storage = FileEvaluatorStorage(tmp_path / "eval")
    evaluator = GeneralEvaluator("sums-eval", Sums(), N_REPEAT, storage, n_workers=2)
    anyio.run(evaluator.run, solution)
    assert _tree(tmp_path / "eval") == _tree(OURS_DIR)
