"""Per-solution statistics: spans are counted into the solution whose root span they descend
from, however the solutions interleave (tasks, child tasks, worker threads)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel

from agentscope_rt.evaluate import (
    FileEvaluatorStorage,
    GeneralEvaluator,
    SolutionOutput,
    SolutionStatsProcessor,
    Task,
)

from ._sums import Sums, tracer_provider

N = 6


def _span(name: str, **attributes: Any) -> None:
    tracer = tracer_provider().get_tracer("test")
    with tracer.start_as_current_span(name, attributes=attributes):
        pass


async def _model_call(model: str, tokens: int) -> None:
    await anyio.lowlevel.checkpoint()  # another solution runs here
    _span(
        "chat",
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.usage.input_tokens": tokens,
            "gen_ai.usage.output_tokens": 1,
        },
    )


def _tool_call_in_a_thread(name: str) -> None:
    _span("tool", **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name})


async def solution(task: Task, hook: Any) -> SolutionOutput:
    i = task.input["a"]
    tracer = tracer_provider().get_tracer("test")
    with tracer.start_as_current_span(
        "reply", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        # i model calls side by side in child tasks, then i tool calls in worker threads.
        async with anyio.create_task_group() as tg:
            for _ in range(i):
                tg.start_soon(_model_call, f"model-{i % 2}", i)
        for _ in range(i):
            await anyio.to_thread.run_sync(_tool_call_in_a_thread, f"tool-{i}")
        _span("embed", **{"gen_ai.operation.name": "embeddings", "gen_ai.request.model": "emb"})
        _span("format", **{"gen_ai.operation.name": "format"})
    return SolutionOutput(True, i, [])


async def test_each_solution_gets_exactly_its_own_spans_under_concurrency(tmp_path: Path) -> None:
    # A span outside any solution is counted nowhere.
    _span("stray", **{"gen_ai.operation.name": "invoke_agent"})
    storage = FileEvaluatorStorage(tmp_path)
    tasks = [(f"t{i}", i, 0) for i in range(1, N + 1)]
    evaluator = GeneralEvaluator("s", Sums(tasks), 2, storage, n_workers=N, progress=False)
    await evaluator.run(solution)

    for i in range(1, N + 1):
        for repeat in ("0", "1"):
            stats = json.loads((tmp_path / f"t{i}" / repeat / "stats.json").read_text("utf-8"))
            model = f"model-{i % 2}"
            assert stats == {
                "llm": {model: i},
                "agent": 1,
                "tool": {f"tool-{i}": i},
                "embedding": {"emb": 1},
                "chat_usage": {model: {"input_tokens": i * i, "output_tokens": i}},
            }, f"t{i}/{repeat}"
    total = json.loads((tmp_path / "evaluation_result.json").read_text("utf-8"))["total_stats"]
    assert total["agent"] == 2 * N
    assert total["llm"] == {
        "model-0": 2 * sum(i for i in range(1, N + 1) if i % 2 == 0),
        "model-1": 2 * sum(i for i in range(1, N + 1) if i % 2 == 1),
    }


async def test_a_solution_that_fails_keeps_the_calls_it_made(tmp_path: Path) -> None:
    async def failing(task: Task, hook: Any) -> SolutionOutput:
        await _model_call("m", 7)
        raise RuntimeError("after one model call")

    storage = FileEvaluatorStorage(tmp_path)
    evaluator = GeneralEvaluator("s", Sums([("t", 1, 1)]), 1, storage, n_workers=1, progress=False)
    await evaluator.run(failing)
    stats = json.loads((tmp_path / "t" / "0" / "stats.json").read_text("utf-8"))
    assert stats["llm"] == {"m": 1}
    assert (tmp_path / "t" / "0" / "error.json").exists()


def test_the_processor_counts_only_the_traces_it_tracks() -> None:
    processor = SolutionStatsProcessor()
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("root") as root:
        trace_id = root.get_span_context().trace_id
        processor.track(trace_id)
        with tracer.start_as_current_span("c", attributes={"gen_ai.operation.name": "chat"}):
            pass
    with tracer.start_as_current_span("other", attributes={"gen_ai.operation.name": "chat"}):
        pass
    assert processor.release(trace_id)["llm"] == {"unknown": 1}
    assert processor.release(trace_id) == {
        "llm": {},
        "agent": 0,
        "tool": {},
        "embedding": {},
        "chat_usage": {},
    }
    assert processor.force_flush() is True
