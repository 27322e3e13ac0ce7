"""The three-task benchmark of _record_agentscope.py, built with agentscope-rt, and its
solution (it opens the spans AgentScope's tracing opens, on a tracer provider that feeds the
evaluator's statistics processor)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from opentelemetry.sdk.trace import TracerProvider

from agentscope_rt.evaluate import (
    BenchmarkBase,
    MetricBase,
    MetricResult,
    MetricType,
    SolutionOutput,
    Task,
    solution_stats_processor,
)
from agentscope_rt.message import TextBlock, ToolResultBlock, ToolUseBlock

TASKS = [("t1", 2, 3), ("t2", 10, 32), ("t3", 7, 8)]
N_REPEAT = 2
_provider: list[TracerProvider] = []


def tracer_provider() -> TracerProvider:
    """A tracer provider feeding the statistics processor (one per process: Ray actors make
    their own)."""
    if not _provider:
        provider = TracerProvider()
        provider.add_span_processor(solution_stats_processor())
        _provider.append(provider)
    return _provider[0]


class Correct(MetricBase):
    def __init__(self, expected: int) -> None:
        super().__init__("correct", MetricType.CATEGORY, "exact answer", ["yes", "no"])
        self.expected = expected

    async def __call__(self, solution: SolutionOutput) -> MetricResult:
        ok = solution.output == self.expected
        return MetricResult(name="correct", result="yes" if ok else "no", message="checked")


class Distance(MetricBase):
    def __init__(self, expected: int) -> None:
        super().__init__("distance", MetricType.NUMERICAL, "absolute error")
        self.expected = expected

    async def __call__(self, solution: SolutionOutput) -> MetricResult:
        return MetricResult(name="distance", result=abs(solution.output - self.expected))


class Sums(BenchmarkBase):
    def __init__(self, tasks: list[tuple[str, int, int]] = TASKS) -> None:
        super().__init__("sums", "add two numbers")
        self.tasks = [
            Task(
                id=tid,
                input={"a": a, "b": b},
                ground_truth=a + b,
                metrics=[Correct(a + b), Distance(a + b)],
                tags={"kind": "sum"},
                metadata={"note": "not stored"},
            )
            for tid, a, b in tasks
        ]

    def __iter__(self) -> Iterator[Task]:
        return iter(self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)

    def __getitem__(self, index: int) -> Task:
        return self.tasks[index]


async def solution(task: Task, pre_print_hook: Any) -> SolutionOutput:
    """Task t3 is answered wrongly on purpose; one reply, one model call, one tool call."""
    a, b = task.input["a"], task.input["b"]
    answer = a + b + (1 if task.id == "t3" else 0)
    tracer = tracer_provider().get_tracer("test")
    with tracer.start_as_current_span(
        "reply", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        with tracer.start_as_current_span(
            "chat",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "scripted-model",
                "gen_ai.usage.input_tokens": 10 + a,
                "gen_ai.usage.output_tokens": 5,
            },
        ):
            pass
        with tracer.start_as_current_span(
            "tool", attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add"}
        ):
            pass
    return SolutionOutput(
        success=True,
        output=answer,
        trajectory=[
            ToolUseBlock(id="call-1", name="add", input={"a": a, "b": b}),
            ToolResultBlock(id="call-1", name="add", output=[TextBlock(text=str(answer))]),
            TextBlock(text=f"The answer is {answer}."),
        ],
        meta={"attempt": 1},
    )


async def solution_with_pid(task: Task, pre_print_hook: Any) -> SolutionOutput:
    """:func:`solution`, with the process that ran it in ``meta["pid"]``."""
    import os

    output = await solution(task, pre_print_hook)
    output.meta = {**(output.meta or {}), "pid": os.getpid()}
    return output


async def failing_on_t2(task: Task, pre_print_hook: Any) -> SolutionOutput:
    """:func:`solution`, except that task t2 raises."""
    if task.id == "t2":
        raise ValueError("t2 is broken")
    return await solution(task, pre_print_hook)


async def hanging_on_t3(task: Task, pre_print_hook: Any) -> SolutionOutput:
    """:func:`solution`, except that task t3 never finishes."""
    if task.id == "t3":
        import anyio

        await anyio.sleep_forever()
    return await solution(task, pre_print_hook)


class NamedOtherwise(MetricBase):
    """A metric whose result for task *task_id* is named ``a/b`` (not after the metric)."""

    def __init__(self, task_id: str) -> None:
        super().__init__("named", MetricType.NUMERICAL, "names its result badly for one task")
        self.task_id = task_id

    async def __call__(self, solution: SolutionOutput) -> MetricResult:
        bad = solution.meta is not None and solution.meta.get("task") == self.task_id
        return MetricResult(name="a/b" if bad else "named", result=1)


def with_badly_named_result(bench: Sums, task_id: str) -> Sums:
    """*bench*, every task also measured by :class:`NamedOtherwise` for *task_id*."""
    for task in bench.tasks:
        task.metrics.append(NamedOtherwise(task_id))
    return bench


async def solution_naming_its_task(task: Task, pre_print_hook: Any) -> SolutionOutput:
    """:func:`solution`, with the task's id in ``meta["task"]``."""
    output = await solution(task, pre_print_hook)
    output.meta = {**(output.meta or {}), "task": task.id}
    return output


async def dying_on_t2(task: Task, pre_print_hook: Any) -> SolutionOutput:
    """:func:`solution`, except that task t2 ends the process running it."""
    if task.id == "t2":
        import os

        os._exit(3)
    return await solution(task, pre_print_hook)
