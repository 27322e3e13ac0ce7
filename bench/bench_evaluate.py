"""Evaluation throughput against AgentScope 1.0.21's two evaluators.

Workload (the same on every side; ``_evaluate_agentscope.py`` is AgentScope's half):
``TASKS`` = 1,000 scripted tasks, one repeat; the solution makes one simulated model call
(``anyio.sleep`` / ``asyncio.sleep`` of ``LATENCY_S`` = 50 ms, as a fast API model would
take) and returns the answer; one category metric checks it; results go to a fresh
``FileEvaluatorStorage`` folder (AgentScope's layout on both sides). ``n_workers=8``: at best
8 / 0.05 = 160 tasks/s.

Sides, each in a process of its own: agentscope-rt's ``GeneralEvaluator`` on asyncio and on
trio, its ``RayEvaluator`` (a local Ray cluster with 2 CPUs: 2 actors), AgentScope's
``GeneralEvaluator`` (it ignores ``n_workers`` and runs one task at a time) and its
``RayEvaluator`` (one actor with ``max_concurrency=n_workers``). The Ray rows time ``run()``
alone, after ``ray.init``; they include creating the actors.

Run ``python bench/run.py evaluate`` (writes ``bench/RESULTS.md``) or
``python bench/bench_evaluate.py``.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = pathlib.Path(__file__).parent

TASKS = 1_000
LATENCY_S = 0.05
N_WORKERS = 8
RAY_CPUS = 2


def _run_ours(kind: str, backend: str, folder: str) -> dict[str, Any]:
    import anyio

    from agentscope_rt.evaluate import (
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
        await anyio.sleep(LATENCY_S)  # the model call
        return SolutionOutput(True, 2 * task.input, [], meta=task.ground_truth)

    storage = FileEvaluatorStorage(folder)
    if kind == "ray":
        import ray

        ray.init(num_cpus=RAY_CPUS, include_dashboard=False, log_to_driver=False)
        evaluator: Any = RayEvaluator(
            "bench", Scripted(), 1, storage, n_workers=N_WORKERS, progress=False
        )
    else:
        evaluator = GeneralEvaluator(
            "bench", Scripted(), 1, storage, n_workers=N_WORKERS, progress=False
        )
    start = time.perf_counter()
    anyio.run(evaluator.run, solution, backend=backend)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "stored": len(list(pathlib.Path(folder).rglob("exact.json")))}


def _worker(command: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        out = subprocess.run(
            [*command, folder], capture_output=True, text=True, check=False, timeout=900
        )
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if result["stored"] != TASKS:
        raise RuntimeError(f"{' '.join(command)} stored {result['stored']} of {TASKS} results")
    return result


def main() -> str:
    sys.path.insert(0, str(HERE))
    from _agentscope_env import NEWEST_VERSION, agentscope_python

    theirs_python = str(agentscope_python(NEWEST_VERSION, ("ray",)))
    me = [sys.executable, str(HERE / "bench_evaluate.py"), "--worker"]
    them = [theirs_python, str(HERE / "_evaluate_agentscope.py")]
    rows = [
        ("agentscope-rt GeneralEvaluator, asyncio", [*me, "general", "asyncio"]),
        ("agentscope-rt GeneralEvaluator, trio", [*me, "general", "trio"]),
        ("agentscope-rt RayEvaluator (asyncio caller)", [*me, "ray", "asyncio"]),
        ("agentscope-rt RayEvaluator (trio caller)", [*me, "ray", "trio"]),
        (f"AgentScope {NEWEST_VERSION} GeneralEvaluator", [*them, "general"]),
        (f"AgentScope {NEWEST_VERSION} RayEvaluator", [*them, "ray"]),
    ]
    results = []
    for label, command in rows:
        results.append((label, _worker(command)))
        print(f"{label}: {results[-1][1]['seconds']:.2f} s", file=sys.stderr, flush=True)
    best = N_WORKERS / LATENCY_S
    lines = [
        "## Evaluation: tasks per second",
        "",
        f"{TASKS:,} scripted tasks, one simulated model call of {LATENCY_S * 1000:.0f} ms each, "
        f"one metric, results in a `FileEvaluatorStorage` folder, `n_workers={N_WORKERS}` "
        f"(at best {best:.0f} tasks/s). Ray: a local cluster with {RAY_CPUS} CPUs, timed from "
        "`run()` (actors included), after `ray.init`. One process per row, one run each (on "
        "this shared machine, repeated runs differed by up to 20%).",
        "",
        "| evaluator | seconds | tasks/s | share of the best possible |",
        "|---|---|---|---|",
    ]
    for label, result in results:
        rate = TASKS / result["seconds"]
        lines.append(f"| {label} | {result['seconds']:.2f} | {rate:.1f} | {rate / best:.0%} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        real_stdout, sys.stdout = sys.stdout, sys.stderr  # the evaluators print summaries
        result = _run_ours(sys.argv[2], sys.argv[3], sys.argv[4])
        real_stdout.write(json.dumps(result) + "\n")
    else:
        print(main())
