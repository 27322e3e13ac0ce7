"""MsgHub delivery throughput and fanout_pipeline cost, against AgentScope 1.0.x.

Workloads (the same on every side):

* **hub** — N agents (N = 10, 100, 1,000) in one MsgHub; each round every agent speaks once
  (``await agent()``, a trivial reply), so each reply is observed by the N-1 others; observers
  append to a list (their memory). 10 rounds. Reported: deliveries (observe calls) per second.
* **fanout** — ``fanout_pipeline`` over 10,000 trivial agents with one input message (each
  agent gets its own copy). Reported: microseconds per agent.
* **peak memory** — the same workloads again under ``tracemalloc`` (which slows them down, so
  they are run separately, once per variant, after the timed runs): the peak of Python
  allocations during the run.

agentscope-rt runs in this process on asyncio and on trio. AgentScope runs the same code
shapes (its ``MsgHub``, ``fanout_pipeline``, an ``AgentBase`` subclass) in its own venv (see
``_agentscope_env.py``), in a worker subprocess per version (``_hub_agentscope.py``) that stays
up and runs one workload per request. AgentScope delivers serially in the speaker's task and
needs minutes for N = 1,000 x 10 rounds, so at N = 1,000 it runs 1 round (its rate per delivery
does not improve with more rounds) — the table says so.

The timed figures are interleaved: each of ROUNDS_INTERLEAVED rounds measures every variant
once (per hub size: agentscope-rt on asyncio, on trio, then each AgentScope version; then the
fanout the same way), and each figure is the median over the rounds. A shared machine's speed
can drift by up to 1.5x over seconds; interleaving makes such a drift move all variants alike
instead of skewing the ratios. At N = 10 a sample repeats the 10-round workload REPEATS[10]
times with a fresh hub each time (a single run lasts a few milliseconds), on both sides.
Linearity is measured on its own: N = 100 just before and just after N = 1,000, back to back.

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
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from typing import Any

import anyio

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))

from _agentscope_env import (  # noqa: E402
    FAST_VERSION,
    NEWEST_VERSION,
    agentscope_python,
    pin_to_one_cpu,
)

from agentscope_rt.agent import AgentBase  # noqa: E402
from agentscope_rt.message import Msg  # noqa: E402
from agentscope_rt.pipeline import MsgHub, fanout_pipeline  # noqa: E402

HUB_SIZES = (10, 100, 1_000)
ROUNDS = 10
AGENTSCOPE_ROUNDS = {10: 10, 100: 10, 1_000: 1}
# Each timed hub sample repeats the workload (a fresh hub each time) this many times: ten rounds
# of ten agents take a few milliseconds, too short for one run to say anything on a shared
# machine. The same on both sides.
REPEATS = {10: 30, 100: 1, 1_000: 1}
LINEARITY_SAMPLES = 3
LINEARITY_FLOOR = 0.8
MEMORY_ROUNDS = 1  # tracemalloc runs: one round is enough to see the hub's own footprint
FANOUT_AGENTS = 10_000
BACKENDS = ("asyncio", "trio")
TARGET_RATIO = 10.0
# Timed figures are medians over this many rounds, each measuring every variant once.
ROUNDS_INTERLEAVED = 3


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


async def _hub_repeated(size: int, rounds: int, repeats: int) -> tuple[int, float]:
    """``_hub_workload`` *repeats* times, each with a fresh hub; total deliveries and seconds."""
    total_deliveries, total_elapsed = 0, 0.0
    for _ in range(repeats):
        deliveries, elapsed = await _hub_workload(size, rounds)
        total_deliveries += deliveries
        total_elapsed += elapsed
    return total_deliveries, total_elapsed


def _rt_hub_rate(backend: str, size: int, repeats: int | None = None) -> float:
    """One timed hub sample (ROUNDS rounds, REPEATS[size] times) on *backend*; deliveries/s."""
    gc.collect()
    deliveries, elapsed = anyio.run(
        _hub_repeated, size, ROUNDS, REPEATS[size] if repeats is None else repeats, backend=backend
    )
    return deliveries / elapsed


def measure_linearity(backend: str) -> float:
    """Deliveries/s at the largest N over those at the next size, measured back to back (the
    smaller hub just before and just after the larger one), median of LINEARITY_SAMPLES: at
    least 1.0 means the time per delivery does not grow with N. Measured apart from the
    interleaved rounds, where other variants run between the two sizes."""
    large, small = HUB_SIZES[-1], HUB_SIZES[-2]
    ratios = []
    for _ in range(LINEARITY_SAMPLES):
        before = _rt_hub_rate(backend, small)
        rate = _rt_hub_rate(backend, large)
        after = _rt_hub_rate(backend, small)
        ratios.append(rate / ((before + after) / 2))
    return statistics.median(ratios)


def _rt_fanout_us(backend: str) -> float:
    """One timed fanout run on *backend*; microseconds per agent."""
    gc.collect()
    return anyio.run(_fanout_workload, FANOUT_AGENTS, backend=backend) * 1e6 / FANOUT_AGENTS


def _rt_untimed(backend: str) -> dict[str, Any]:
    """The figures of *backend* that are not compared over time with AgentScope: the peaks
    under tracemalloc and the split of a round's time (best of 3)."""
    result: dict[str, Any] = {
        "hub_peak": {
            size: _traced(_hub_workload, size, MEMORY_ROUNDS, backend=backend) for size in HUB_SIZES
        },
        "fanout_peak": _traced(_fanout_workload, FANOUT_AGENTS, backend=backend),
    }
    splits = [anyio.run(_split_workload, 1_000, 5_000, backend=backend) for _ in range(3)]
    result["split"] = tuple(min(split[i] for split in splits) for i in range(3))
    return result


# -- AgentScope (run in its own venv) -----------------------------------------------------


class AgentScopeWorker:
    """AgentScope's side of the workloads: a subprocess in AgentScope's own venv that warms up
    once, then runs one workload each time it is asked (see ``_hub_agentscope.py``), so that its
    runs interleave with ours."""

    def __init__(self, version: str) -> None:
        """Start the worker for AgentScope *version* and wait until it has warmed up.

        :raises RuntimeError: when the venv cannot be prepared or the worker does not start.
        """
        python = agentscope_python(version)
        # stderr goes to a file: a pipe nobody reads could fill up and stall the worker.
        self._stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed in close())
        self._process = subprocess.Popen(
            [str(python), str(HERE / "_hub_agentscope.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env={**os.environ, "AGENTSCOPE_DISABLE_CONSOLE_OUTPUT": "true"},
        )
        try:
            self.version = str(self._read()["version"])
        except BaseException:
            self.close()
            raise

    def _read(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self._process.wait()
            self._stderr.seek(0)
            error = self._stderr.read().strip()[-3000:]
            raise RuntimeError(f"the AgentScope worker failed:\n{error}")
        data: dict[str, Any] = json.loads(line)
        return data

    def _ask(self, **command: Any) -> dict[str, Any]:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(command) + "\n")
        self._process.stdin.flush()
        return self._read()

    def hub_rate(self, size: int, rounds: int, repeats: int = 1) -> float:
        """One timed hub sample (*repeats* runs of *rounds* rounds); deliveries per second."""
        answer = self._ask(op="hub", size=size, rounds=rounds, repeats=repeats)
        return float(answer["deliveries"]) / float(answer["seconds"])

    def fanout_us(self, count: int) -> float:
        """One timed fanout run over *count* agents; microseconds per agent."""
        return float(self._ask(op="fanout", count=count)["seconds"]) * 1e6 / count

    def hub_peak(self, size: int, rounds: int) -> int:
        """Peak bytes of a hub run under tracemalloc."""
        return int(self._ask(op="hub_peak", size=size, rounds=rounds)["peak"])

    def fanout_peak(self, count: int) -> int:
        """Peak bytes of a fanout run under tracemalloc."""
        return int(self._ask(op="fanout_peak", count=count)["peak"])

    def close(self) -> None:
        """Stop the worker (it exits at the end of its stdin)."""
        if self._process.stdin is not None and not self._process.stdin.closed:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._stderr.close()


def _agentscope_untimed(worker: AgentScopeWorker) -> dict[str, Any]:
    """The peaks under tracemalloc of AgentScope, as ``_rt_untimed`` measures ours."""
    return {
        "hub_peak": {size: worker.hub_peak(size, MEMORY_ROUNDS) for size in HUB_SIZES},
        "fanout_peak": worker.fanout_peak(FANOUT_AGENTS),
    }


def measure_interleaved(
    workers: dict[str, AgentScopeWorker],
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Every timed figure of both backends and every AgentScope worker, interleaved.

    Each of ROUNDS_INTERLEAVED rounds measures every variant once (per hub size: asyncio, trio,
    then each AgentScope version; then the fanout the same way), so a change in machine load
    between rounds moves all of them alike. Returns ``(rt, agentscope)``: per backend and per
    version, the median over the rounds of ``hub`` (deliveries/s by size) and ``fanout_us``;
    AgentScope's entries also hold ``rounds`` (hub rounds per run, by size).
    """
    variants = [*BACKENDS, *workers]
    hub: dict[str, dict[int, list[float]]] = {v: {n: [] for n in HUB_SIZES} for v in variants}
    fanout: dict[str, list[float]] = {v: [] for v in variants}
    for backend in BACKENDS:
        anyio.run(_hub_workload, 10, 2, backend=backend)  # warm-up
    for _ in range(ROUNDS_INTERLEAVED):
        for size in HUB_SIZES:
            for backend in BACKENDS:
                hub[backend][size].append(_rt_hub_rate(backend, size))
            for version, worker in workers.items():
                hub[version][size].append(
                    worker.hub_rate(size, AGENTSCOPE_ROUNDS[size], REPEATS[size])
                )
        for backend in BACKENDS:
            fanout[backend].append(_rt_fanout_us(backend))
        for version, worker in workers.items():
            fanout[version].append(worker.fanout_us(FANOUT_AGENTS))
    medians = {
        v: {
            "hub": {n: statistics.median(hub[v][n]) for n in HUB_SIZES},
            "fanout_us": statistics.median(fanout[v]),
        }
        for v in variants
    }
    rt = {backend: medians[backend] for backend in BACKENDS}
    agentscope = {
        version: {**medians[version], "rounds": dict(AGENTSCOPE_ROUNDS)} for version in workers
    }
    return rt, agentscope


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
        f"separate runs ({MEMORY_ROUNDS} hub round). Each hub sample at N=10 repeats the "
        f"workload {REPEATS[10]} times with a fresh hub (on both sides). Timed figures are "
        "medians of "
        f"{ROUNDS_INTERLEAVED} interleaved rounds (each round measures every variant once, so a "
        "change in machine load moves all of them alike).",
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
    largest, smaller = HUB_SIZES[-1], HUB_SIZES[-2]
    linear = {b: rt[b]["linearity"] for b in BACKENDS}
    linear_ok = all(value >= LINEARITY_FLOOR for value in linear.values())
    fanout_ok = all(rt[b]["fanout_us"] <= agentscope[baseline]["fanout_us"] for b in BACKENDS)
    lines += [
        "",
        f"Ratios compare the slower backend with AgentScope {baseline} (the faster AgentScope "
        "here); for memory, a ratio below 1 means agentscope-rt uses less.",
        f"Target {TARGET_RATIO:.0f}x deliveries/s: "
        f"{'met' if slowest >= TARGET_RATIO else 'NOT met'}"
        f" (worst case {slowest:,.1f}x). Linear in N: "
        f"{'met' if linear_ok else 'NOT met'} (deliveries/s at N={largest:,} over N={smaller:,}, "
        "the two measured back to back, median of "
        f"{LINEARITY_SAMPLES}; 1.0 means the same time per delivery at both sizes, and "
        f"{LINEARITY_FLOOR} is allowed for the cache effects of a larger hub: "
        + ", ".join(f"{b} {linear[b]:.2f}" for b in BACKENDS)
        + f"). Fanout no slower than AgentScope: {'met' if fanout_ok else 'NOT met'}.",
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
    """Run every workload on both backends and on AgentScope; return the markdown section.

    The timed figures are measured interleaved (see ``measure_interleaved``); the peaks under
    tracemalloc and the split of a round's time, once per variant afterwards.

    :raises RuntimeError: when an AgentScope venv cannot be prepared or its worker fails.
    """
    workers: dict[str, AgentScopeWorker] = {}
    pin_to_one_cpu()  # the workers inherit it: every variant runs on the same core
    try:
        for version in dict.fromkeys((FAST_VERSION, NEWEST_VERSION)):
            workers[version] = AgentScopeWorker(version)
        rt, agentscope = measure_interleaved(workers)
        for backend in BACKENDS:
            rt[backend].update(_rt_untimed(backend))
            rt[backend]["linearity"] = measure_linearity(backend)
        for version, worker in workers.items():
            agentscope[version].update(_agentscope_untimed(worker))
    finally:
        for worker in workers.values():
            worker.close()
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
