"""Run as a script: agentscope-rt starts Ray under asyncio, then the same process uses it
again under trio (two ``anyio.run`` one after the other), with an agent host or the Ray
evaluator; or, with ``hanging``, a host whose Ray start does not return (``ray.init`` given
an address where nothing answers) under a short ``fail_after``, in both event loops. Prints
one line per event loop; exits non-zero on a failure.

Usage: ``python -m tests.distributed._two_loops host|evaluator|hanging FOLDER``
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio

from agentscope_rt.distributed import AgentHost
from agentscope_rt.evaluate import FileEvaluatorStorage, RayEvaluator
from agentscope_rt.message import Msg
from tests.distributed._agents import make_echo
from tests.evaluate._sums import Sums, solution

# A cluster of this process's own (not one a test session may have started).
RAY_INIT = {"address": "local", "num_cpus": 1, "include_dashboard": False, "log_to_driver": False}
ROOT = Path(__file__).resolve().parent.parent.parent


async def with_host(backend: str, folder: Path) -> str:
    with anyio.fail_after(120):
        async with AgentHost(f"h-{backend}", ray_init_options=RAY_INIT) as host:
            agent = await host.create_agent(make_echo, name=backend)
            reply = await agent(Msg("user", "hi", "user"))
            return reply.get_text_content() or ""


async def with_evaluator(backend: str, folder: Path) -> str:
    storage = FileEvaluatorStorage(folder / backend)
    evaluator = RayEvaluator(
        "e", Sums(), 1, storage, n_workers=2, ray_init_options=RAY_INIT, progress=False
    )
    with anyio.fail_after(120):
        await evaluator.run(solution)
    result = json.loads((folder / backend / "evaluation_result.json").read_text("utf-8"))
    return f"{backend}: {result['repeats']['0']['completed_ids']}"


# A port of this machine where nothing listens (bound, so nothing else takes it meanwhile).
_NOBODY = socket.socket()
_NOBODY.bind(("127.0.0.1", 0))


async def with_hanging_start(backend: str, folder: Path) -> str:
    address = f"127.0.0.1:{_NOBODY.getsockname()[1]}"
    host = AgentHost(f"h-{backend}", ray_init_options={"address": address})
    started = time.monotonic()
    try:
        with anyio.fail_after(3):
            await host.start()
    except TimeoutError:
        return f"{backend}: TimeoutError after {time.monotonic() - started:.1f} s"
    return f"{backend}: started"


def run_two_loops(kind: str, folder: Path) -> list[str]:
    """Run this script with *kind* in a new process; the lines it printed for each loop.

    :raises AssertionError: when it fails (with what it wrote to stderr).
    """
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    # A generous limit, only to turn a hang into a failure (Ray starts twice on 2 cores).
    done = subprocess.run(
        [sys.executable, "-m", "tests.distributed._two_loops", kind, str(folder)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if line.startswith(("asyncio:", "trio:"))]


def main() -> None:
    kind, folder = sys.argv[1], Path(sys.argv[2])
    phase = {"host": with_host, "evaluator": with_evaluator, "hanging": with_hanging_start}[kind]
    for backend in ("asyncio", "trio"):
        print(anyio.run(phase, backend, folder, backend=backend), flush=True)


if __name__ == "__main__":
    main()
