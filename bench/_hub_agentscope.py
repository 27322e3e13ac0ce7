"""AgentScope's half of the MsgHub benchmark; run by ``bench_hub.py`` with an AgentScope venv.

Usage: ``python _hub_agentscope.py`` warms up (a small hub), prints ``{"version": ...}`` and then
serves commands: for each JSON line read from stdin it runs one workload and prints one JSON
line (so that ``bench_hub.py`` can interleave AgentScope's runs with its own). Commands:

* ``{"op": "hub", "size": N, "rounds": R, "repeats": K}`` -> ``{"deliveries": D, "seconds": S}``
  (K runs, each with a fresh hub, summed; K defaults to 1)
* ``{"op": "fanout", "count": N}`` -> ``{"seconds": S}``
* ``{"op": "hub_peak", "size": N, "rounds": R}`` and ``{"op": "fanout_peak", "count": N}`` ->
  ``{"peak": bytes}`` (the same workload under ``tracemalloc``)

An empty line or the end of stdin stops the worker. The workloads match ``bench_hub.py``: a
``Talker`` agent that replies with a fixed short message and appends what it observes to a list;
each command runs in its own ``asyncio.run`` (as agentscope-rt's runs use one ``anyio.run`` each).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import time
import tracemalloc
from collections.abc import Callable, Coroutine
from typing import Any

os.environ["AGENTSCOPE_DISABLE_CONSOLE_OUTPUT"] = "true"

import agentscope
from agentscope.agent import AgentBase
from agentscope.message import Msg
from agentscope.pipeline import MsgHub, fanout_pipeline


class Talker(AgentBase):
    """Replies with a fixed short message; remembers everything it hears."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.memory: list[Any] = []

    async def reply(self, msg: Any = None, **kwargs: Any) -> Msg:
        return Msg(self.name, "ok", "assistant")

    async def observe(self, msg: Any) -> None:
        if msg is not None:
            self.memory.append(msg)

    async def handle_interrupt(self, *args: Any, **kwargs: Any) -> Msg:
        return Msg(self.name, "interrupted", "assistant")


async def hub(size: int, rounds: int) -> tuple[int, float]:
    """*rounds* rounds of every agent speaking once in a hub of *size*; deliveries, seconds."""
    agents = [Talker(f"agent{i}") for i in range(size)]
    async with MsgHub(agents, name="bench"):
        started = time.perf_counter()
        for _ in range(rounds):
            for agent in agents:
                await agent()
        elapsed = time.perf_counter() - started
    deliveries = sum(len(agent.memory) for agent in agents)
    expected = rounds * size * (size - 1)
    if deliveries != expected:
        raise RuntimeError(f"hub lost messages: {deliveries} delivered, {expected} expected")
    return deliveries, elapsed


async def fanout(count: int) -> float:
    """``fanout_pipeline`` over *count* agents with one message; seconds."""
    agents = [Talker(f"agent{i}") for i in range(count)]
    msg = Msg("user", "hello", "user")
    started = time.perf_counter()
    results = await fanout_pipeline(agents, msg)
    elapsed = time.perf_counter() - started
    if len(results) != count:
        raise RuntimeError("fanout lost replies")
    return elapsed


def traced(coro_fn: Callable[..., Coroutine[Any, Any, Any]], *args: int) -> int:
    """Peak bytes of Python allocations while running ``coro_fn(*args)``."""
    gc.collect()
    tracemalloc.start()
    try:
        asyncio.run(coro_fn(*args))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def serve(command: dict[str, Any]) -> dict[str, Any]:
    """Run one command; its JSON answer."""
    op = command["op"]
    gc.collect()
    if op == "hub":
        deliveries, seconds = 0, 0.0
        for _ in range(command.get("repeats", 1)):
            run_deliveries, run_seconds = asyncio.run(hub(command["size"], command["rounds"]))
            deliveries += run_deliveries
            seconds += run_seconds
        return {"deliveries": deliveries, "seconds": seconds}
    if op == "fanout":
        return {"seconds": asyncio.run(fanout(command["count"]))}
    if op == "hub_peak":
        return {"peak": traced(hub, command["size"], command["rounds"])}
    if op == "fanout_peak":
        return {"peak": traced(fanout, command["count"])}
    raise ValueError(f"unknown command {command!r}")


def main() -> None:
    asyncio.run(hub(10, 2))  # warm-up
    print(json.dumps({"version": agentscope.__version__}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            break
        print(json.dumps(serve(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
