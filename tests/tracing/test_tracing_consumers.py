"""The runtime's spans reach the evaluator's statistics and the studio, and both leave the
process's tracing as they found it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentscope_rt import tracing
from agentscope_rt.agent import ReActAgent
from agentscope_rt.evaluate import FileEvaluatorStorage, GeneralEvaluator, SolutionOutput, Task
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel, reply, tool_call
from agentscope_rt.studio import serve
from agentscope_rt.tool import Toolkit, ToolResponse

from ..evaluate._sums import Sums


async def add(a: int, b: int) -> ToolResponse:
    """Add two numbers.

    Args:
        a: the first.
        b: the second.
    """
    from agentscope_rt.message import TextBlock

    return ToolResponse(content=[TextBlock(text=str(a + b))])


async def solve(task: Task, hook: Any) -> SolutionOutput:
    a, b = task.input["a"], task.input["b"]
    toolkit = Toolkit()
    toolkit.register_tool_function(add)
    agent = ReActAgent(
        name="Solver",
        sys_prompt="",
        model=ScriptedChatModel(
            [reply(tool_call("add", {"a": a, "b": b}, id="c1")), reply(str(a + b))],
            model_name="scripted-sums",
        ),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
    )
    agent.set_console_output_enabled(False)
    answer = await agent(Msg("user", f"{a}+{b}?", "user"))
    return SolutionOutput(True, int(answer.get_text_content() or "0"), [])


async def test_an_evaluation_counts_the_runtimes_own_calls(tmp_path: Path) -> None:
    before = tracing.is_tracing_enabled()
    evaluator = GeneralEvaluator(
        "real", Sums(), 1, FileEvaluatorStorage(tmp_path), n_workers=3, progress=False
    )
    await evaluator.run(solve)
    assert tracing.is_tracing_enabled() == before
    for task_id in ("t1", "t2", "t3"):
        stats = json.loads((tmp_path / task_id / "0" / "stats.json").read_text("utf-8"))
        assert stats["agent"] == 1, stats
        assert sum(stats["llm"].values()) == 2, stats
        assert stats["tool"] == {"add": 1}, stats


async def test_the_studio_turns_tracing_on_only_while_it_serves() -> None:
    before = tracing.is_tracing_enabled()
    async with serve():
        assert tracing.is_tracing_enabled()
    assert tracing.is_tracing_enabled() == before
