"""AgentScope's half of the evaluation benchmark; run by ``bench_evaluate.py`` with AgentScope's
venv (with Ray installed beside it).

Usage: ``python _evaluate_agentscope.py general|ray FOLDER`` prints one JSON object,
``{"seconds": ..., "stored": ...}``: the workload of ``bench_evaluate._run_ours`` with
AgentScope's classes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pathlib
import sys
import time
from typing import Any

os.environ["AGENTSCOPE_DISABLE_CONSOLE_OUTPUT"] = "true"
logging.disable(logging.CRITICAL)

from agentscope.evaluate import (  # noqa: E402
    BenchmarkBase,
    FileEvaluatorStorage,
    GeneralEvaluator,
    MetricBase,
    MetricResult,
    MetricType,
    RayEvaluator,
    SolutionOutput,
    Task,
)

TASKS = 1_000
LATENCY_S = 0.05
N_WORKERS = 8
RAY_CPUS = 2


class Exact(MetricBase):
    def __init__(self) -> None:
        super().__init__("exact", MetricType.CATEGORY, "exact answer", ["yes", "no"])

    async def __call__(self, solution: SolutionOutput) -> MetricResult:
        return MetricResult("exact", "yes" if solution.output == solution.meta else "no")


class Scripted(BenchmarkBase):
    def __init__(self) -> None:
        super().__init__("scripted", "one simulated model call per task")
        self.tasks = [Task(f"task-{i:04d}", i, 2 * i, [Exact()]) for i in range(TASKS)]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)

    def __getitem__(self, index: int) -> Task:
        return self.tasks[index]


async def solution(task: Task, hook: Any) -> SolutionOutput:
    await asyncio.sleep(LATENCY_S)  # the model call
    return SolutionOutput(True, 2 * task.input, [], meta=task.ground_truth)


def main(kind: str, folder: str) -> dict[str, Any]:
    storage = FileEvaluatorStorage(folder)
    if kind == "ray":
        import ray

        ray.init(num_cpus=RAY_CPUS, include_dashboard=False, log_to_driver=False)
        evaluator: Any = RayEvaluator("bench", Scripted(), 1, storage, n_workers=N_WORKERS)
    else:
        evaluator = GeneralEvaluator("bench", Scripted(), 1, storage, n_workers=N_WORKERS)
    start = time.perf_counter()
    asyncio.run(evaluator.run(solution))
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "stored": len(list(pathlib.Path(folder).rglob("exact.json")))}


if __name__ == "__main__":
    real_stdout, sys.stdout = sys.stdout, sys.stderr  # the evaluator prints its summary
    result = main(sys.argv[1], sys.argv[2])
    real_stdout.write(json.dumps(result) + "\n")
