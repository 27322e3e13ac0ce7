"""Run a GeneralEvaluator in a process of its own; used by test_interrupt.py.

``python -m tests.evaluate._interrupted_run FOLDER BACKEND interrupt|finish``: with
``interrupt``, the solution of task t5 presses Ctrl+C (SIGINT to this process) and waits; with
``finish`` every solution answers. Each solution run prints ``ran tN`` on stdout.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import anyio

from agentscope_rt.evaluate import FileEvaluatorStorage, GeneralEvaluator, SolutionOutput, Task

from ._sums import Sums

TASKS = [(f"t{i}", i, 1) for i in range(10)]


async def main(folder: str, mode: str) -> None:
    async def solution(task: Task, hook: Any) -> SolutionOutput:
        print(f"ran {task.id}", flush=True)
        if mode == "interrupt" and task.id == "t5":
            os.kill(os.getpid(), signal.SIGINT)
            await anyio.sleep_forever()
        return SolutionOutput(True, task.input["a"] + task.input["b"], [])

    storage = FileEvaluatorStorage(folder)
    await GeneralEvaluator("ctrl-c", Sums(TASKS), 1, storage, n_workers=2).run(solution)


if __name__ == "__main__":
    # Ctrl+C is what this run stands for, from whatever the test suite was started by: a job
    # started in the background (``nohup ... &``) hands its children SIGINT ignored, and then
    # the SIGINT sent above would do nothing and the run would wait forever.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    anyio.run(main, sys.argv[1], sys.argv[3], backend=sys.argv[2])
