"""MsgHub delivery throughput and fanout_pipeline cost, against AgentScope 1.0.x.

Workloads (the same on every side):

* **hub** — N agents (N = 10, 100, 1,000) in one MsgHub; each round every agent speaks once
  (``await agent()``, a trivial reply), so each reply is observed by the N-1 others; observers
  append to a list (their memory). 10 rounds. Reported: deliveries (observe calls) per second.
* **fanout** — ``fanout_pipeline`` over 10,000 trivial agents with one input message (each
  agent gets its own copy). Reported: microseconds per agent.
* **peak memory** — the same workloads again under ``tracemalloc`` (which slows them down, so
  they are timed separately): the peak of Python allocations during the run.

agentscope-rt runs in this process on asyncio and on trio. AgentScope runs the same code
shapes (its ``MsgHub``, ``fanout_pipeline``, an ``AgentBase`` subclass) in its own venv (see
``_agentscope_env.py``), in a subprocess. AgentScope delivers serially in the speaker's task
and needs minutes for N = 1,000 x 10 rounds, so at N = 1,000 it runs 1 round (its rate per
delivery does not improve with more rounds) — the table says so.

Run ``python bench/bench_hub.py`` (prints the markdown section) or ``nox -s bench``. For quick
iterations, ``python bench/bench_hub.py --rt-only [--sizes 10,100] [--no-memory] [--profile]``
measures agentscope-rt alone (no AgentScope subprocess) and prints one line per figure;
``--profile`` adds a cProfile summary of the hub workload.
Targets: at least 10x AgentScope's deliveries/s, roughly linear in N (a flat rate per
delivery), fanout no slower per agent than AgentScope, on both backends.
"""

from __future__ import annotations

import gc
import json
import pathlib
import subprocess
import sys
import time
import tracemalloc
from typing import Any

import anyio

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))

from _agentscope_env import FAST_VERSION, NEWEST_VERSION, agentscope_python  # noqa: E402

from agentscope_rt.agent import AgentBase  # noqa: E402
from agentscope_rt.message import Msg  # noqa: E402
from agentscope_rt.pipeline import MsgHub, fanout_pipeline  # noqa: E402

HUB_SIZES = (10, 100, 1_000)
ROUNDS = 10
AGENTSCOPE_ROUNDS = {10: 10, 100: 10, 1_000: 1}
MEMORY_ROUNDS = 1  # tracemalloc runs: one round is enough to see the hub's own footprint
FANOUT_AGENTS = 10_000
BACKENDS = ("asyncio", "trio")
TARGET_RATIO = 10.0


# -- agentscope-rt -------------------------------------------------------------------------


class Talker(AgentBase):
    """Replies with a fixed short message; remembers everything it hears."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.memory: list[Msg] = []

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        return Msg(self.name, "ok", "assistant")

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        if msg is not None:
            self.memory.append(msg)  # type: ignore[arg-type]


async def _hub_workload(size: int, rounds: int) -> tuple[int, float]:
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


async def _fanout_workload(count: int) -> float:
    agents = [Talker(f"agent{i}") for i in range(count)]
    msg = Msg("user", "hello", "user")
    started = time.perf_counter()
    results = await fanout_pipeline(agents, msg)
    elapsed = time.perf_counter() - started
    if len(results) != count:
        raise RuntimeError("fanout lost replies")
    return elapsed


async def _split_workload(size: int, repeats: int) -> tuple[float, float, float]:
    """Where a hub round's time goes: microseconds per ``await agent()`` outside any hub, per
    ``agent.reply()`` called directly, and per delivery of ``hub.broadcast`` to *size* agents."""
    agents = [Talker(f"agent{i}") for i in range(size)]
    speaker = agents[0]
    started = time.perf_counter()
    for _ in range(repeats):
        await speaker()
    call_us = (time.perf_counter() - started) * 1e6 / repeats
    started = time.perf_counter()
    for _ in range(repeats):
        await speaker.reply()
    reply_us = (time.perf_counter() - started) * 1e6 / repeats
    msg = Msg("host", "ok", "assistant")
    async with MsgHub(agents, name="bench") as hub:
        started = time.perf_counter()
        for _ in range(repeats // 10):
            await hub.broadcast(msg)
        delivery_us = (time.perf_counter() - started) * 1e6 / (repeats // 10 * size)
    return call_us, reply_us, delivery_us


def _traced(fn: Any, *args: Any, backend: str) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        anyio.run(fn, *args, backend=backend)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure_rt(backend: str) -> dict[str, Any]:
    """All workloads on one backend of agentscope-rt."""
    result: dict[str, Any] = {"hub": {}, "hub_peak": {}}
    anyio.run(_hub_workload, 10, 2, backend=backend)  # warm-up
    for size in HUB_SIZES:
        gc.collect()
        deliveries, elapsed = anyio.run(_hub_workload, size, ROUNDS, backend=backend)
        result["hub"][size] = deliveries / elapsed
        result["hub_peak"][size] = _traced(_hub_workload, size, MEMORY_ROUNDS, backend=backend)
    gc.collect()
    result["fanout_us"] = (
        anyio.run(_fanout_workload, FANOUT_AGENTS, backend=backend) * 1e6 / (FANOUT_AGENTS)
    )
    result["fanout_peak"] = _traced(_fanout_workload, FANOUT_AGENTS, backend=backend)
    splits = [anyio.run(_split_workload, 1_000, 5_000, backend=backend) for _ in range(3)]
    result["split"] = tuple(min(split[i] for split in splits) for i in range(3))
    return result


# -- AgentScope (run in its own venv) -----------------------------------------------------

_AGENTSCOPE_SCRIPT = r"""
import asyncio, gc, json, os, sys, time, tracemalloc
os.environ["AGENTSCOPE_DISABLE_CONSOLE_OUTPUT"] = "true"
from agentscope.agent import AgentBase
from agentscope.message import Msg
from agentscope.pipeline import MsgHub, fanout_pipeline

class Talker(AgentBase):
    def __init__(self, name):
        super().__init__()
        self.name = name
        self.memory = []
    async def reply(self, msg=None, **kwargs):
        return Msg(self.name, "ok", "assistant")
    async def observe(self, msg):
        if msg is not None:
            self.memory.append(msg)
    async def handle_interrupt(self, *args, **kwargs):
        return Msg(self.name, "interrupted", "assistant")

async def hub(size, rounds):
    agents = [Talker(f"agent{i}") for i in range(size)]
    async with MsgHub(agents, name="bench"):
        started = time.perf_counter()
        for _ in range(rounds):
            for agent in agents:
                await agent()
        elapsed = time.perf_counter() - started
    deliveries = sum(len(a.memory) for a in agents)
    assert deliveries == rounds * size * (size - 1), deliveries
    return deliveries, elapsed

async def fanout(count):
    agents = [Talker(f"agent{i}") for i in range(count)]
    msg = Msg("user", "hello", "user")
    started = time.perf_counter()
    results = await fanout_pipeline(agents, msg)
    elapsed = time.perf_counter() - started
    assert len(results) == count
    return elapsed

def traced(coro_fn, *args):
    gc.collect()
    tracemalloc.start()
    try:
        asyncio.run(coro_fn(*args))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

config = json.loads(sys.argv[1])
out = {"hub": {}, "hub_peak": {}, "rounds": {}}
asyncio.run(hub(10, 2))
for size, rounds in config["hub"]:
    gc.collect()
    deliveries, elapsed = asyncio.run(hub(size, rounds))
    out["hub"][size] = deliveries / elapsed
    out["rounds"][size] = rounds
    out["hub_peak"][size] = traced(hub, size, config["memory_rounds"])
gc.collect()
out["fanout_us"] = asyncio.run(fanout(config["fanout"])) * 1e6 / config["fanout"]
out["fanout_peak"] = traced(fanout, config["fanout"])
print(json.dumps(out))
"""


def measure_agentscope(version: str) -> dict[str, Any]:
    """All workloads on AgentScope *version*, in a subprocess with its own interpreter.

    :raises RuntimeError: when the venv cannot be prepared or the run fails.
    """
    python = agentscope_python(version)
    config = {
        "hub": [[size, AGENTSCOPE_ROUNDS[size]] for size in HUB_SIZES],
        "memory_rounds": MEMORY_ROUNDS,
        "fanout": FANOUT_AGENTS,
    }
    run = subprocess.run(
        [str(python), "-c", _AGENTSCOPE_SCRIPT, json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if run.returncode != 0:
        raise RuntimeError(f"AgentScope {version} benchmark failed:\n{run.stderr[-3000:]}")
    data = json.loads(run.stdout.strip().splitlines()[-1])
    for key in ("hub", "hub_peak", "rounds"):
        data[key] = {int(k): v for k, v in data[key].items()}
    return data


# -- report ---------------------------------------------------------------------------------


def _mib(value: float) -> str:
    return f"{value / 2**20:,.1f} MiB"


def render(rt: dict[str, dict[str, Any]], agentscope: dict[str, dict[str, Any]]) -> str:
    """The markdown section for the measured figures."""
    versions = list(agentscope)
    baseline = max(versions, key=lambda v: agentscope[v]["hub"][HUB_SIZES[0]])
    lines = [
        "## MsgHub and fanout_pipeline (`bench/bench_hub.py`)",
        "",
        f"Hub: N agents each speak once per round for {ROUNDS} rounds; every reply is observed "
        "by the N-1 others, observers append to memory. Fanout: "
        f"`fanout_pipeline` over {FANOUT_AGENTS:,} trivial agents. Peak memory: tracemalloc, "
        f"separate runs ({MEMORY_ROUNDS} hub round).",
        "",
        "| workload | "
        + " | ".join(f"agentscope-rt {b}" for b in BACKENDS)
        + " | "
        + " | ".join(f"AgentScope {v}" for v in versions)
        + f" | rt / AgentScope {baseline} |",
        "|---" * (2 + len(BACKENDS) + len(versions)) + "|",
    ]
    for size in HUB_SIZES:
        rt_cells = [f"{rt[b]['hub'][size]:,.0f}/s" for b in BACKENDS]
        as_cells = []
        for v in versions:
            rounds = agentscope[v]["rounds"][size]
            note = "" if rounds == ROUNDS else f" ({rounds} round)"
            as_cells.append(f"{agentscope[v]['hub'][size]:,.0f}/s{note}")
        ratio = min(rt[b]["hub"][size] for b in BACKENDS) / agentscope[baseline]["hub"][size]
        lines.append(
            f"| hub N={size:,}: deliveries/s | "
            + " | ".join(rt_cells + as_cells)
            + f" | {ratio:,.1f}x |"
        )
    for size in HUB_SIZES:
        rt_cells = [_mib(rt[b]["hub_peak"][size]) for b in BACKENDS]
        as_cells = [_mib(agentscope[v]["hub_peak"][size]) for v in versions]
        ratio = (
            max(rt[b]["hub_peak"][size] for b in BACKENDS) / agentscope[baseline]["hub_peak"][size]
        )
        lines.append(
            f"| hub N={size:,}: peak memory | "
            + " | ".join(rt_cells + as_cells)
            + f" | {ratio:.2f}x |"
        )
    rt_cells = [f"{rt[b]['fanout_us']:.1f} us" for b in BACKENDS]
    as_cells = [f"{agentscope[v]['fanout_us']:.1f} us" for v in versions]
    ratio = max(rt[b]["fanout_us"] for b in BACKENDS) / agentscope[baseline]["fanout_us"]
    lines.append(
        f"| fanout {FANOUT_AGENTS:,}: time per agent | "
        + " | ".join(rt_cells + as_cells)
        + f" | {ratio:.2f}x |"
    )
    rt_cells = [_mib(rt[b]["fanout_peak"]) for b in BACKENDS]
    as_cells = [_mib(agentscope[v]["fanout_peak"]) for v in versions]
    ratio = max(rt[b]["fanout_peak"] for b in BACKENDS) / agentscope[baseline]["fanout_peak"]
    lines.append(
        f"| fanout {FANOUT_AGENTS:,}: peak memory | "
        + " | ".join(rt_cells + as_cells)
        + f" | {ratio:.2f}x |"
    )
    slowest = min(
        rt[b]["hub"][size] / agentscope[baseline]["hub"][size]
        for b in BACKENDS
        for size in HUB_SIZES
    )
    # Linear in N: the time per delivery must not grow with N (deliveries/s must not fall).
    largest, smaller = HUB_SIZES[-1], HUB_SIZES[:-1]
    linear = {b: rt[b]["hub"][largest] / max(rt[b]["hub"][n] for n in smaller) for b in BACKENDS}
    fanout_ok = all(rt[b]["fanout_us"] <= agentscope[baseline]["fanout_us"] for b in BACKENDS)
    lines += [
        "",
        f"Ratios compare the slower backend with AgentScope {baseline} (the faster AgentScope "
        "here); for memory, a ratio below 1 means agentscope-rt uses less.",
        f"Target {TARGET_RATIO:.0f}x deliveries/s: "
        f"{'met' if slowest >= TARGET_RATIO else 'NOT met'}"
        f" (worst case {slowest:,.1f}x). Linear in N (deliveries/s at N={largest:,} over the "
        "best smaller N; at least 1.0 means the time per delivery does not grow with N): "
        + ", ".join(f"{b} {linear[b]:.2f}" for b in BACKENDS)
        + f". Fanout no slower than AgentScope: {'met' if fanout_ok else 'NOT met'}.",
        "",
        "Where the time goes (best of 3): one `await agent()` outside any hub (the fair lock, "
        "the reply's own cancel scope, the reply id, the event-loop token for interrupts from "
        "other threads, and `reply()`, which here only builds a Msg) costs "
        + ", ".join(
            f"{rt[b]['split'][0]:.1f} us on {b} (`reply()` alone {rt[b]['split'][1]:.1f} us)"
            for b in BACKENDS
        )
        + "; one delivery (`hub.broadcast` to 1,000 agents) costs "
        + ", ".join(f"{rt[b]['split'][2]:.2f} us on {b}" for b in BACKENDS)
        + ". At N=10 a round is N calls and N(N-1) deliveries, so the calls dominate: the "
        "per-call price sets the ceiling there, the per-delivery price at large N.",
        "",
    ]
    return "\n".join(lines)


def main() -> str:
    """Run every workload on both backends and on AgentScope; return the markdown section."""
    rt = {backend: measure_rt(backend) for backend in BACKENDS}
    agentscope = {}
    for version in dict.fromkeys((FAST_VERSION, NEWEST_VERSION)):
        agentscope[version] = measure_agentscope(version)
    return render(rt, agentscope)


def _quick(sizes: tuple[int, ...], memory: bool, profile: bool) -> None:
    """agentscope-rt alone, one line per figure (for iterating; no AgentScope subprocess)."""
    for backend in BACKENDS:
        anyio.run(_hub_workload, 10, 2, backend=backend)  # warm-up
        for size in sizes:
            gc.collect()
            best = 0.0
            for _ in range(3):
                deliveries, elapsed = anyio.run(_hub_workload, size, ROUNDS, backend=backend)
                best = max(best, deliveries / elapsed)
            line = f"{backend:8} hub N={size:<5} {best:>12,.0f} deliveries/s (best of 3)"
            if memory:
                peak = _traced(_hub_workload, size, MEMORY_ROUNDS, backend=backend)
                line += f"  peak {_mib(peak)}"
            print(line, flush=True)
        gc.collect()
        per_agent = (
            min(anyio.run(_fanout_workload, FANOUT_AGENTS, backend=backend) for _ in range(3))
            * 1e6
            / FANOUT_AGENTS
        )
        line = f"{backend:8} fanout {FANOUT_AGENTS:,}   {per_agent:>8.1f} us per agent (best of 3)"
        if memory:
            line += f"  peak {_mib(_traced(_fanout_workload, FANOUT_AGENTS, backend=backend))}"
        print(line, flush=True)
        call_us, reply_us, delivery_us = min(
            anyio.run(_split_workload, 1_000, 5_000, backend=backend) for _ in range(3)
        )
        print(
            f"{backend:8} await agent() {call_us:.1f} us (reply() {reply_us:.1f} us), "
            f"one delivery {delivery_us:.2f} us",
            flush=True,
        )
    if profile:
        import cProfile
        import pstats

        for backend in BACKENDS:
            profiler = cProfile.Profile()
            profiler.enable()
            anyio.run(_hub_workload, max(sizes), ROUNDS, backend=backend)
            profiler.disable()
            print(f"\n== profile, {backend}, hub N={max(sizes)}")
            pstats.Stats(profiler).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rt-only", action="store_true", help="measure agentscope-rt alone, quickly"
    )
    parser.add_argument("--sizes", default=",".join(map(str, HUB_SIZES)), help="hub sizes N")
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc runs")
    parser.add_argument("--profile", action="store_true", help="cProfile the hub workload")
    options = parser.parse_args()
    if options.rt_only or options.profile:
        _quick(
            tuple(int(n) for n in options.sizes.split(",")),
            memory=not options.no_memory,
            profile=options.profile,
        )
    else:
        print(main())
