"""Evaluating a ReAct agent on the shipped arithmetic benchmark, in parallel and on Ray.

The agent is scripted (no API key, no model download): its model reads the question, calls the
``calculate`` tool with the expression, and answers with the tool's result; every model call
takes 50 ms, as a fast API model would. The benchmark is
:class:`~agentscope_rt.evaluate.ArithmeticBenchmark` (36 tasks, two metrics).

1. :class:`~agentscope_rt.evaluate.GeneralEvaluator` runs 8 solutions at once, with a progress
   bar on a terminal. The first run is interrupted halfway (here by a cancel scope; Ctrl+C does
   the same); the second run resumes from the results folder and solves only what is left.
2. :class:`~agentscope_rt.evaluate.RayEvaluator` runs the same evaluation on a local Ray cluster
   (the ``ray`` extra): the pairs are spread over two actors, and the results are the same.

Results are written in AgentScope's layout under ``~/.cache/agentscope_rt_examples/evaluate``
(replaced by each run).

Run: ``python examples/85_evaluate.py`` (asyncio) or ``python examples/85_evaluate.py trio``.

What to look for: the results stored when the first run is interrupted (about half: the
solution that cancels it is not stored), the second run solving only the ones left (the two
add up to 36), the metrics (all correct), what the agent of one task printed (each agent's
console output goes to its task's ``logging.txt``, not to the screen), and the Ray run's
metrics equal to the first.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from _paths import example_folder
from _ray import start_local_ray

from agentscope_rt.agent import ReActAgent
from agentscope_rt.evaluate import (
    ArithmeticBenchmark,
    FileEvaluatorStorage,
    GeneralEvaluator,
    RayEvaluator,
    SolutionOutput,
    Task,
    evaluate_expression,
)
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import ChatResponse, FunctionChatModel, reply, tool_call
from agentscope_rt.tool import Toolkit, ToolResponse

MODEL_LATENCY_S = 0.05


def calculate(expression: str) -> ToolResponse:
    """Compute an integer arithmetic expression (+, -, *, //, %, ** and parentheses).

    Args:
        expression: the expression, e.g. "(3 + 4) * 5".
    """
    try:
        value = str(evaluate_expression(expression))
    except ValueError as exc:
        value = f"error: {exc}"
    return ToolResponse(content=[TextBlock(text=value)])


async def scripted_model(messages: list[dict[str, Any]], tools: Any) -> ChatResponse:
    """Call the calculator on the question's expression, then answer with its result."""
    await anyio.sleep(MODEL_LATENCY_S)
    last = messages[-1]
    if last["role"] == "tool":
        return reply(f"The answer is {last['content']}.")
    question = next(m for m in messages if m["role"] == "user")["content"]
    question = question if isinstance(question, str) else question[0]["text"]
    expression = re.fullmatch(r"What is (.+)\?", question.strip()).group(1)  # type: ignore[union-attr]
    return reply(tool_call("calculate", {"expression": expression}))


async def solution(task: Task, pre_print_hook: Any) -> SolutionOutput:
    """One ReAct agent per task; its tool calls and results are the trajectory."""
    toolkit = Toolkit()
    toolkit.register_tool_function(calculate)
    agent = ReActAgent(
        name="Calc",
        sys_prompt="Answer with the calculator.",
        model=FunctionChatModel(scripted_model, model_name="scripted"),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
    )
    # 36 agents' tool calls as JSON would bury the results: what each would print goes to its
    # task's logging.txt through the hook instead.
    agent.set_console_output_enabled(False)
    agent.register_instance_hook("pre_print", "save_logging", pre_print_hook)
    answer = await agent(Msg("user", task.input["question"], "user"))
    trajectory = [
        block
        for msg in await agent.memory.get_memory()
        for block in msg.get_content_blocks()
        if block.type in ("tool_use", "tool_result")
    ]
    number = re.search(r"-?\d+", answer.get_text_content() or "")
    return SolutionOutput(
        success=number is not None,
        output=int(number.group()) if number else None,
        trajectory=[*trajectory, TextBlock(text=answer.get_text_content() or "")],
    )


def count_results(folder: Path) -> int:
    return len(list(folder.rglob("solution.json")))


def summary(folder: Path) -> dict[str, Any]:
    result = json.loads((folder / "evaluation_result.json").read_text(encoding="utf-8"))
    metrics = result["repeats"]["0"]["metrics"]
    return {
        "correct": metrics["correct"]["aggregation"],
        "abs_error": metrics["abs_error"]["aggregation"],
    }


async def general(folder: Path) -> None:
    bench = ArithmeticBenchmark()
    storage = FileEvaluatorStorage(folder)
    evaluator = GeneralEvaluator("arithmetic-react", bench, 1, storage, n_workers=8)
    solved: list[str] = []

    print("1) GeneralEvaluator, 8 at once; interrupted after 18 of 36 tasks")
    with anyio.CancelScope() as scope:

        async def until_half(task: Task, hook: Any) -> SolutionOutput:
            output = await solution(task, hook)
            solved.append(task.id)
            if len(solved) == 18:
                scope.cancel()
            return output

        await evaluator.run(until_half)
    print(f"   interrupted: {count_results(folder)} results stored")

    again: list[str] = []

    async def counting(task: Task, hook: Any) -> SolutionOutput:
        again.append(task.id)
        return await solution(task, hook)

    start = time.perf_counter()
    await evaluator.run(counting)
    print(f"   resumed: solved the {len(again)} left in {time.perf_counter() - start:.2f} s")
    print(f"   {summary(folder)}")
    pair = folder / "arith-00" / "0"
    log = (pair / "logging.txt").read_text(encoding="utf-8")
    print(f"   what the agent printed for arith-00: {log.splitlines()[-1]!r}")
    # Filled from the runtime's spans when tracing is on (docs/evaluate.md), else zeros.
    stats = json.loads((pair / "stats.json").read_text(encoding="utf-8"))
    print(f"   its statistics: {stats}")


async def on_ray(folder: Path, reference: Path) -> None:
    print("\n2) RayEvaluator on a local Ray cluster (2 CPUs: 2 actors)")
    evaluator = RayEvaluator(
        "arithmetic-react", ArithmeticBenchmark(), 1, FileEvaluatorStorage(folder), n_workers=8
    )
    start = time.perf_counter()
    await evaluator.run(solution)
    print(f"   36 tasks in {time.perf_counter() - start:.2f} s (actors included)")
    same = summary(folder) == summary(reference)
    print(f"   {summary(folder)}; same as GeneralEvaluator's: {same}")


async def main() -> None:
    out = example_folder("evaluate")
    shutil.rmtree(out, ignore_errors=True)
    await general(out / "general")
    await on_ray(out / "ray", out / "general")
    print(f"\nresults in {out}")


if __name__ == "__main__":
    import ray

    start_local_ray()
    try:
        anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
    finally:
        ray.shutdown()
