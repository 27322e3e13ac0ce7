"""The program the durable-run tests of agent hosts run (in the test process, or as a
script whose process the test kills): two ReAct noters on one host, in a durable run.

Usage: ``python -m tests.distributed._durable_program FOLDER DB BACKEND`` runs it on a Ray
cluster of its own, A's tool in the last round waiting until the process is killed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import anyio

from agentscope_rt.distributed import AgentHost
from agentscope_rt.durable import DurableRun, SQLiteRunStore, durable_run
from agentscope_rt.message import Msg
from agentscope_rt.pipeline import MsgHub, fanout_pipeline, sequential_pipeline
from tests.distributed._agents import gate, make_noter, read_log

ROUNDS = 2


def transcript(state: dict[str, Any]) -> list[Any]:
    """An agent's memory as (speaker, role, blocks), without ids and times."""
    out = []
    for entry in state["memory"]["content"]:
        msg = entry[0] if isinstance(entry, list) else entry
        content = msg["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        out.append(
            [
                msg["name"],
                msg["role"],
                [{k: v for k, v in block.items() if k != "id"} for block in blocks],
            ]
        )
    return out


async def wait_for(folder: str, what: str, count: int) -> None:
    # The tools say so in the log file, from the host's process.
    while sum(e["what"] == what for e in read_log(folder)) < count:  # noqa: ASYNC110
        await anyio.sleep(0.02)


async def _kill_when_the_tools_wait(
    ray: Any, host: AgentHost, folder: str, waiting: int, killed: list[float]
) -> None:
    await wait_for(folder, "tool-waits", waiting)
    killed.append(time.time())
    # The gates stay: the tools must not end (Ray's kill takes effect a moment later), and
    # the new host must not run them again.
    await anyio.to_thread.run_sync(ray.kill, host.actor)


async def program(
    ray: Any,
    folder: str,
    db: Path,
    killed: list[float] | None = None,
    *,
    fanout: bool = False,
    wait: bool = False,
    ray_init_options: dict[str, Any] | None = None,
) -> tuple[list[list[Any]], DurableRun]:
    """Two noters on one host, in the durable run "r": for ROUNDS rounds, they take turns
    in a hub (or, with *fanout*, answer the same question at once). With *killed*, the host
    is killed in the last round while A's tool waits (with *fanout*, A's and B's); with
    *wait*, that tool waits for good (till something kills this process). Their
    transcripts, and the run."""
    store = SQLiteRunStore(db)
    gated = ("A", "B") if fanout else ("A",)
    try:
        async with AgentHost("h-durable", ray_init_options=ray_init_options) as host:
            agents = await host.create_agents(
                make_noter, [{"name": "A", "folder": folder}, {"name": "B", "folder": folder}]
            )

            async def one_round(round_: int) -> None:
                if fanout:
                    await fanout_pipeline(agents, Msg("user", f"round {round_}", "user"))
                else:
                    await sequential_pipeline(agents)

            hub = MsgHub([] if fanout else agents, announcement=Msg("host", "start", "user"))
            async with durable_run("r", store) as run, hub:
                for round_ in range(ROUNDS):
                    if (killed is None and not wait) or round_ < ROUNDS - 1:
                        await one_round(round_)
                        continue
                    for name in gated:
                        await anyio.Path(gate(folder, name)).touch()
                    async with anyio.create_task_group() as tg:
                        if killed is not None:
                            tg.start_soon(
                                _kill_when_the_tools_wait, ray, host, folder, len(gated), killed
                            )
                        await one_round(round_)
            states = [await anyio.to_thread.run_sync(agent.state_dict) for agent in agents]
    finally:
        await store.aclose()
    return [transcript(state) for state in states], run


def main() -> None:
    folder, db, backend = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    # A cluster of this process's own: it goes when the test kills the process.
    options = {"address": "local", "num_cpus": 1, "include_dashboard": False}
    anyio.run(
        lambda: program(None, folder, db, wait=True, ray_init_options=options), backend=backend
    )


if __name__ == "__main__":
    main()
