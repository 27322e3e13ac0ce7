"""Write and read evaluation folders with AgentScope 1.0.21, for the storage-compatibility tests.

Run with an interpreter that has ``agentscope==1.0.21`` installed (``bench/_agentscope_env.py``
makes one):

    python tests/evaluate/_record_agentscope.py write tests/data/evaluate/agentscope_1_0_21
    python tests/evaluate/_record_agentscope.py read tests/data/evaluate/agentscope_rt \
        > tests/data/evaluate/agentscope_read_agentscope_rt.json

``write`` runs AgentScope's GeneralEvaluator on the three-task benchmark below (two repeats);
the solution opens the spans AgentScope's tracing opens (an agent reply, a model call with
token usage, a tool call), so ``stats.json`` holds figures. ``read`` loads every file of a
folder through AgentScope's FileEvaluatorStorage, then runs AgentScope's GeneralEvaluator on it
with a solution that fails if called (everything must resume from the folder) and prints what
it read and the aggregation it wrote, as JSON. tests/evaluate/test_storage_compat.py builds the
same benchmark with agentscope-rt.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from agentscope.evaluate import (
    BenchmarkBase,
    FileEvaluatorStorage,
    GeneralEvaluator,
    MetricBase,
    MetricResult,
    MetricType,
    SolutionOutput,
    Task,
)
from opentelemetry import trace

# (task id, a, b): the answer is a + b; task "t3"'s solution answers wrongly on purpose.
TASKS = [("t1", 2, 3), ("t2", 10, 32), ("t3", 7, 8)]
N_REPEAT = 2


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
    def __init__(self) -> None:
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
            for tid, a, b in TASKS
        ]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)

    def __getitem__(self, index: int) -> Task:
        return self.tasks[index]


async def solution(task: Task, pre_print_hook: Any) -> SolutionOutput:
    a, b = task.input["a"], task.input["b"]
    answer = a + b + (1 if task.id == "t3" else 0)
    tracer = trace.get_tracer("record")
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
            {"type": "tool_use", "id": "call-1", "name": "add", "input": {"a": a, "b": b}},
            {
                "type": "tool_result",
                "id": "call-1",
                "name": "add",
                "output": [{"type": "text", "text": str(answer)}],
            },
            {"type": "text", "text": f"The answer is {answer}."},
        ],
        meta={"attempt": 1},
    )


async def must_not_run(task: Task, pre_print_hook: Any) -> SolutionOutput:
    raise AssertionError(f"task {task.id} should have resumed from storage")


def read(folder: str) -> dict[str, Any]:
    storage = FileEvaluatorStorage(folder)
    pairs: dict[str, Any] = {}
    for tid, _, _ in TASKS:
        for repeat in map(str, range(N_REPEAT)):
            solution_output = storage.get_solution_result(tid, repeat)
            pairs[f"{tid}/{repeat}"] = {
                "solution": dict(solution_output),
                "stats": storage.get_solution_stats(tid, repeat),
                "metrics": {
                    name: {
                        k: v
                        for k, v in dict(storage.get_evaluation_result(tid, repeat, name)).items()
                        if k != "created_at"
                    }
                    for name in ("correct", "distance")
                },
            }
    evaluator = GeneralEvaluator("sums-eval", Sums(), N_REPEAT, storage, n_workers=1)
    asyncio.run(evaluator.run(must_not_run))
    with open(f"{folder}/evaluation_result.json", encoding="utf-8") as f:
        aggregation = json.load(f)
    return {"pairs": pairs, "aggregation": aggregation}


def main() -> None:
    command, folder = sys.argv[1], sys.argv[2]
    if command == "write":
        storage = FileEvaluatorStorage(folder)
        evaluator = GeneralEvaluator("sums-eval", Sums(), N_REPEAT, storage, n_workers=1)
        asyncio.run(evaluator.run(solution))
    else:
        # The aggregation printout goes to stderr; stdout holds the JSON alone.
        stdout, sys.stdout = sys.stdout, sys.stderr
        result = read(folder)
        sys.stdout = stdout
        json.dump(result, sys.stdout, indent=2, sort_keys=True)
        print()


if __name__ == "__main__":
    main()
