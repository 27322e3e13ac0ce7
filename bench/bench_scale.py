"""Many agents on one machine: creation cost and idle memory, 100,000-agent hub and fanout
rounds, the voting simulation, and agent hosts on Ray.

Workloads:

* **creation** — 10,000 ReActAgents, each with its own one-tool ``Toolkit`` (the tool is
  registered per toolkit) and its own memory; the model and formatter are shared (as in a
  simulation). Time per agent (median of ``SAMPLES`` runs) and bytes per idle agent
  (``tracemalloc``, a separate run). agentscope-rt builds them inside ``anyio.run`` on asyncio
  and on trio; AgentScope 1.0.4 and 1.0.21 the same way in their own venvs
  (``_scale_agentscope.py``). Target: at most a fifth of AgentScope's time and a third of its
  bytes, on both backends.
* **100,000 agents** — one ``MsgHub`` of 100,000 ReActAgents (scripted model, replies without
  tools) in which 10 of them speak (each reply observed by the 99,999 others: ~1M deliveries
  into memories); and ``fanout_pipeline`` of one message over 100,000 ReActAgents (each
  replies once). Wall time and the process's peak RSS.
* **voting** — ``examples/86_simulation.py``: groups of 100 voters, a hub per group, a
  moderator fanout over the groups; 1,000 / 10,000 / 100,000 agents in one process (asyncio
  and trio) and on 4 agent hosts (Ray). Seconds per round, peak RSS of the driver, one process
  per configuration.
* **the two-thirds game** — ``examples/87_two_thirds_game.py``: ReAct players answering a
  moderator with a structured guess, three rounds, at 1,000, 100,000 and 1,000,000 players in
  one process (asyncio and trio); building seconds, seconds per round, cost per player per
  round against 1,000 players, peak RSS after three rounds. Targets at a million: build and
  round within 60 s, peak RSS within 6 GB, cost per player per round within 1.25x that at
  1,000.
* **the game with the studio** (``game_studio``; ``game_studio_million``) — the game at
  100,000 players (8 pairs; a million: 2 pairs) without and with ``--studio`` (served in the
  process, a page reading the feed), interleaved pairs with the same hash seed; the ratio of
  CPU seconds in the rounds. Target: at most 1.05.
* **the game on agent hosts** (``game_hosts``) — the game at 1,000,000 players on 4 Ray agent
  hosts, the driver on each backend: building, rounds, the driver's and each host's peak RSS,
  and whether the results equal those of one process (run in the same part). Target: the
  driver within 1 GiB, the same results.
* **agent hosts on Ray** — agents created per second on one host (10,000, in batches), remote
  replies per second through proxies (1,000 replies, 32 in flight), beside Ray's own figures on
  this machine: plain async-actor calls per second (``ray.get`` on batches) and one call's
  round trip.

Run ``python bench/run.py scale`` (writes ``bench/RESULTS.md``), ``python bench/bench_scale.py
[create] [big] [game] [game_studio] [game_studio_million] [game_hosts] [voting]
[voting_million] [ray]`` (prints the sections), or ``python bench/bench_scale.py --write
PART...`` (measures those parts and replaces only their sections of ``RESULTS.md``).
"""

from __future__ import annotations

import gc
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from typing import Any

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

CREATE_COUNT = 10_000
SAMPLES = 3
BIG = 100_000
HUB_SPEAKERS = 10
VOTING_SIZES = (1_000, 10_000, 100_000)
GAME_SIZES = (1_000, 100_000, 1_000_000)
GAME_ROUNDS = 3
STUDIO_PLAYERS = 100_000
STUDIO_PAIRS = 8
STUDIO_MILLION_PAIRS = 2
VOTING_ROUNDS = 2
HOSTS = 4
RAY_CREATE = 10_000
RAY_REPLIES = 1_000
RAY_IN_FLIGHT = 32
BACKENDS = ("asyncio", "trio")


# -- agentscope-rt workers (each run in a process of its own) ------------------------------


def _make_factory() -> Any:
    from bench_react import get_weather

    from agentscope_rt.agent import ReActAgent
    from agentscope_rt.formatter import OpenAIChatFormatter
    from agentscope_rt.message import TextBlock
    from agentscope_rt.model import ChatModelBase, ChatResponse
    from agentscope_rt.tool import Toolkit

    class IdleModel(ChatModelBase):
        def __init__(self) -> None:
            super().__init__("idle", stream=False)

        async def __call__(self, *args: Any, **kwargs: Any) -> ChatResponse:
            return ChatResponse(content=[TextBlock(text="ok")])

    model, formatter = IdleModel(), OpenAIChatFormatter()

    def make_agent(index: int) -> ReActAgent:
        toolkit = Toolkit()
        toolkit.register_tool_function(get_weather)
        agent = ReActAgent(
            name=f"agent{index}",
            sys_prompt="You are a helpful assistant.",
            model=model,
            formatter=formatter,
            toolkit=toolkit,
        )
        agent.set_console_output_enabled(False)
        return agent

    return make_agent


def _creation_worker(backend: str) -> dict[str, Any]:
    import anyio

    make_agent = _make_factory()

    async def timed() -> float:
        make_agent(-1)
        gc.collect()
        started = time.perf_counter()
        agents = [make_agent(i) for i in range(CREATE_COUNT)]
        elapsed = time.perf_counter() - started
        del agents
        return elapsed

    async def sized() -> float:
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        agents = [make_agent(i) for i in range(CREATE_COUNT)]
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        return (after - before) / len(agents)

    seconds = anyio.run(timed, backend=backend)
    return {
        "us_per_agent": seconds * 1e6 / CREATE_COUNT,
        "bytes_per_agent": anyio.run(sized, backend=backend),
    }


def _big_worker(kind: str, backend: str) -> dict[str, Any]:
    import anyio

    from agentscope_rt.message import Msg
    from agentscope_rt.pipeline import MsgHub, fanout_pipeline

    make_agent = _make_factory()

    async def run() -> dict[str, Any]:
        started = time.perf_counter()
        agents = [make_agent(i) for i in range(BIG)]
        created = time.perf_counter() - started
        started = time.perf_counter()
        if kind == "hub":
            async with MsgHub(agents, name="big"):
                for speaker in agents[:HUB_SPEAKERS]:
                    await speaker(Msg("user", "Say something.", "user"))
            heard = await agents[-1].memory.size()
            if heard != HUB_SPEAKERS:
                raise RuntimeError(f"the last agent heard {heard} messages")
        else:
            replies = await fanout_pipeline(agents, Msg("user", "Say something.", "user"))
            if len(replies) != BIG:
                raise RuntimeError("fanout lost replies")
        return {"create_s": created, "seconds": time.perf_counter() - started}

    figures = anyio.run(run, backend=backend)
    figures["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return figures


def _ray_worker(backend: str) -> dict[str, Any]:
    import anyio
    import ray

    from agentscope_rt.distributed import AgentHost

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)

    @ray.remote(num_cpus=0)
    class Plain:
        async def call(self, x: int) -> int:
            return x

    plain = Plain.remote()
    ray.get(plain.call.remote(0))
    started = time.perf_counter()
    for _ in range(200):
        ray.get(plain.call.remote(1))
    round_trip = (time.perf_counter() - started) / 200
    started = time.perf_counter()
    for _ in range(10):
        ray.get([plain.call.remote(i) for i in range(RAY_REPLIES // 10)])
    plain_rate = RAY_REPLIES / (time.perf_counter() - started)

    from _scale_hosted import make_talker

    async def run() -> dict[str, Any]:
        async with AgentHost("bench-host") as host:
            started = time.perf_counter()
            agents = await host.create_agents(
                make_talker, [{"name": f"a{i}"} for i in range(RAY_CREATE)]
            )
            create_rate = RAY_CREATE / (time.perf_counter() - started)
            from agentscope_rt.message import Msg

            msg = Msg("user", "hi", "user")
            await agents[0](msg)
            limiter = anyio.Semaphore(RAY_IN_FLIGHT)

            async def one(i: int) -> None:
                async with limiter:
                    await agents[i % len(agents)](msg)

            started = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for i in range(RAY_REPLIES):
                    tg.start_soon(one, i)
            reply_rate = RAY_REPLIES / (time.perf_counter() - started)
            started = time.perf_counter()
            for i in range(50):
                await agents[i](msg)
            proxy_round_trip = (time.perf_counter() - started) / 50
        return {
            "create_per_s": create_rate,
            "replies_per_s": reply_rate,
            "proxy_round_trip_ms": proxy_round_trip * 1000,
        }

    try:
        figures = anyio.run(run, backend=backend)
    finally:
        ray.shutdown()
    figures["ray_calls_per_s"] = plain_rate
    figures["ray_round_trip_ms"] = round_trip * 1000
    return figures


# -- the driver -----------------------------------------------------------------------------


def _subprocess(
    command: list[str], timeout: float = 3600, hash_seed: str | None = None
) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
    if hash_seed is not None:
        # Two runs compared as a pair lay out their dicts alike.
        env["PYTHONHASHSEED"] = hash_seed
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}")
    figures: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


def _game(backend: str, players: int, *extra: str, hash_seed: str | None = None) -> dict[str, Any]:
    """The figures of one run of the two-thirds game (``GAME_ROUNDS`` rounds) with *extra*
    command-line arguments."""
    command = [sys.executable, str(ROOT / "examples" / "87_two_thirds_game.py"), backend]
    command += ["--agents", str(players), "--rounds", str(GAME_ROUNDS), "--json", *extra]
    return _subprocess(command, timeout=7200, hash_seed=hash_seed)


def _ours(*args: str) -> dict[str, Any]:
    return _subprocess([sys.executable, str(HERE / "bench_scale.py"), "--worker", *args])


def _load_note() -> str:
    """The machine's load when a part starts: wall-clock figures scale with it."""
    one, five, _ = os.getloadavg()
    return (
        f"Load average when this part started: {one:.1f} (1 min), {five:.1f} (5 min) on "
        f"{os.cpu_count()} cores; wall-clock figures stretch with it, ratios measured side "
        "by side much less."
    )


def _creation_section() -> list[str]:
    from _agentscope_env import FAST_VERSION, NEWEST_VERSION, agentscope_python

    rows: dict[str, list[dict[str, Any]]] = {}
    pythons = {v: str(agentscope_python(v)) for v in (FAST_VERSION, NEWEST_VERSION)}
    for _ in range(SAMPLES):  # interleaved: a drift in machine load moves every row alike
        for backend in BACKENDS:
            rows.setdefault(f"agentscope-rt, {backend}", []).append(_ours("create", backend))
        for version, python in pythons.items():
            command = [python, str(HERE / "_scale_agentscope.py"), str(CREATE_COUNT)]
            rows.setdefault(f"AgentScope {version}", []).append(_subprocess(command))
    figures = {
        label: (
            statistics.median(s["us_per_agent"] for s in samples),
            statistics.median(s["bytes_per_agent"] for s in samples),
        )
        for label, samples in rows.items()
    }
    theirs = [v for k, v in figures.items() if k.startswith("AgentScope")]
    best_time = min(t for t, _ in theirs)
    best_bytes = min(b for _, b in theirs)
    lines = [
        "## Scale: creating idle agents (`bench/bench_scale.py`)",
        "",
        _load_note(),
        "",
        f"{CREATE_COUNT:,} ReActAgents, each with its own one-tool Toolkit and memory "
        f"(model and formatter shared), median of {SAMPLES} interleaved runs; bytes per idle "
        "agent with tracemalloc (a separate run).",
        "",
        "| side | time per agent | bytes per idle agent | time vs fastest AgentScope "
        "| bytes vs leanest AgentScope |",
        "|---|---|---|---|---|",
    ]
    for label, (us, size) in figures.items():
        lines.append(
            f"| {label} | {us:,.0f} us | {size:,.0f} B | {us / best_time:.2f}x "
            f"| {size / best_bytes:.2f}x |"
        )
    ours = [v for k, v in figures.items() if k.startswith("agentscope-rt")]
    time_ok = all(t <= best_time / 5 for t, _ in ours)
    bytes_ok = all(b <= best_bytes / 3 for _, b in ours)
    lines += [
        "",
        f"Target at most 1/5 of AgentScope's time: {'met' if time_ok else 'NOT met'}; at most "
        f"1/3 of its bytes: {'met' if bytes_ok else 'NOT met'} (against the better AgentScope "
        "release on each figure).",
    ]
    return lines


def _big_section() -> list[str]:
    lines = [
        "",
        f"## Scale: {BIG:,} agents in one process (`bench/bench_scale.py`)",
        "",
        _load_note(),
        "",
        f"{BIG:,} ReActAgents in one process (scripted model, no tool call): a MsgHub in which "
        f"{HUB_SPEAKERS} speak (each reply observed by the {BIG - 1:,} others, into their "
        f"memories: {HUB_SPEAKERS * (BIG - 1):,} deliveries), and `fanout_pipeline` of one "
        "message over all of them. One process per row.",
        "",
        "| workload | backend | building the agents | the round | peak RSS |",
        "|---|---|---|---|---|",
    ]
    for kind in ("hub", "fanout"):
        for backend in BACKENDS:
            f = _ours("big", kind, backend)
            lines.append(
                f"| {kind} | {backend} | {f['create_s']:.1f} s | {f['seconds']:.1f} s "
                f"| {f['peak_rss_mib']:,.0f} MiB |"
            )
    return lines


def _voting_section() -> list[str]:
    example = str(ROOT / "examples" / "86_simulation.py")
    lines = [
        "",
        "## Scale: the voting simulation (`bench/bench_scale.py`)",
        "",
        _load_note(),
        "",
        f"`examples/86_simulation.py`: groups of 100 voters, a MsgHub per "
        f"group, a moderator fanout over the groups, {VOTING_ROUNDS} rounds; one process per "
        "row. The Ray rows put the groups on 4 agent hosts (one actor each, on this 2-core "
        "machine); their RSS is the driver's only.",
        "",
        "| agents | where | building | seconds per round | per agent per round | peak RSS |",
        "|---|---|---|---|---|---|",
    ]
    per_agent: dict[str, list[float]] = {}
    configs = [(backend, 0) for backend in BACKENDS] + [("asyncio", HOSTS)]
    for size in VOTING_SIZES:
        for backend, hosts in configs:
            command = [sys.executable, example, backend, "--agents", str(size)]
            command += ["--hosts", str(hosts), "--rounds", str(VOTING_ROUNDS), "--json"]
            f = _subprocess(command)
            where = f"one process, {backend}" if hosts == 0 else f"{hosts} agent hosts"
            us = f["s_per_round"] / size * 1e6
            per_agent.setdefault(where, []).append(us)
            lines.append(
                f"| {size:,} | {where} | {f['create_s']:.1f} s | {f['s_per_round']:.2f} s "
                f"| {us:.0f} us | {f['peak_rss_mib']:,.0f} MiB |"
            )
    growth = ", ".join(
        f"{where}: {values[-1] / values[0]:.2f}" for where, values in per_agent.items()
    )
    lines += [
        "",
        f"Linear growth (time per agent per round at {VOTING_SIZES[-1]:,} over "
        f"{VOTING_SIZES[0]:,}; 1.0 is perfectly linear): {growth}.",
    ]
    return lines


def _voting_million_section() -> list[str]:
    example = str(ROOT / "examples" / "86_simulation.py")
    lines = [
        "",
        "## Scale: the voting simulation at a million (`bench/bench_scale.py`)",
        "",
        _load_note(),
        "",
        "`examples/86_simulation.py` in one process: groups of 100 voters, a MsgHub per group "
        "(99 deliveries per vote), the moderator asking 100 groups at once, one round; "
        "1,000 and 1,000,000 voters in the same run.",
        "",
        "| voters | backend | building | the round | per voter | vs 1,000 | peak RSS |",
        "|---|---|---|---|---|---|---|",
    ]
    for backend in BACKENDS:
        base: float | None = None
        for size in (1_000, 1_000_000):
            command = [sys.executable, example, backend, "--agents", str(size)]
            command += ["--hosts", "0", "--rounds", "1", "--json"]
            f = _subprocess(command, timeout=7200)
            us = f["s_per_round"] / size * 1e6
            base = us if base is None else base
            lines.append(
                f"| {size:,} | {backend} | {f['create_s']:.1f} s | {f['s_per_round']:.1f} s "
                f"| {us:.0f} us | {us / base:.2f}x | {f['peak_rss_mib']:,.0f} MiB |"
            )
    return lines


def _game_section(sizes: tuple[int, ...] = GAME_SIZES) -> list[str]:
    lines = [
        "",
        "## Scale: the two-thirds game (`bench/bench_scale.py`)",
        "",
        _load_note(),
        "",
        "`examples/87_two_thirds_game.py`: ReActAgent players (scripted level-k model, one "
        "model call and the structured-output finish function per reply), announcements and "
        f"results broadcast in one MsgHub of all players, {GAME_ROUNDS} rounds, at most 1,000 "
        "replies in flight; one process per row. Per player per round: the median round over "
        "the number of players; CPU: the process's CPU seconds in the median round over the "
        "number of players (what the round would take with a core of its own).",
        "",
        "| players | backend | building | seconds per round (each) | per player per round "
        "| CPU per player per round | CPU vs 1,000 | peak RSS |",
        "|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for backend in BACKENDS:
        base: float | None = None
        for size in sizes:
            f = _game(backend, size)
            rounds = f["round_s"]
            us = statistics.median(rounds) / size * 1e6
            cpu_us = statistics.median(f["round_cpu_s"]) / size * 1e6
            # Compared in CPU time: a round at 1,000 lasts a tenth of a second, and what else
            # the machine runs stretches its wall time most.
            base = cpu_us if base is None else base
            lines.append(
                f"| {size:,} | {backend} | {f['build_s']:.1f} s "
                f"| {' / '.join(f'{r:.1f}' for r in rounds)} s | {us:.0f} us | {cpu_us:.0f} us "
                f"| {cpu_us / base:.2f}x | {f['peak_rss_mib']:,.0f} MiB |"
            )
            if size == sizes[-1]:
                notes.append(
                    f"{backend}: build {'met' if f['build_s'] <= 60 else 'NOT met'}, round "
                    f"{'met' if max(rounds) <= 60 else 'NOT met'}, memory "
                    f"{'met' if f['peak_rss_mib'] <= 6 * 1024 else 'NOT met'}, per-player "
                    f"cost {'met' if cpu_us / base <= 1.25 else 'NOT met'}"
                )
    lines += [
        "",
        f"Targets at {sizes[-1]:,} players (build and round within 60 s, peak RSS within 6 GiB, "
        f"cost per player per round within 1.25x that at {sizes[0]:,}): " + "; ".join(notes) + ".",
    ]
    return lines


def _game_studio_section(size: int = STUDIO_PLAYERS, pairs: int = STUDIO_PAIRS) -> list[str]:
    at = "" if size == STUDIO_PLAYERS else f" at {size:,} players"
    lines = [
        "",
        f"## Scale: the game with the studio watching{at} (`bench/bench_scale.py`)",
        "",
        _load_note(),
        "",
        f"`examples/87_two_thirds_game.py` at {size:,} players, {GAME_ROUNDS} rounds, without "
        "and with `--studio` (the studio served in the same process, a page reading its event "
        "feed over HTTP for the whole game): the process's CPU seconds in the rounds, "
        f"{pairs} pairs per backend, the two runs of a pair one after the other (which one "
        "first alternates) with the same hash seed. The ratio of a backend is that of the "
        "sums of its pairs.",
        "",
        "| backend | CPU without, each pair | CPU with, each pair | ratio per pair | ratio |",
        "|---|---|---|---|---|",
    ]
    notes = []
    for backend in BACKENDS:
        without: list[float] = []
        with_studio: list[float] = []
        for pair in range(pairs):
            order = (False, True) if pair % 2 == 0 else (True, False)
            for studio in order:
                f = _game(backend, size, *["--studio"] * studio, hash_seed=str(pair))
                (with_studio if studio else without).append(sum(f["round_cpu_s"]))
        ratio = sum(with_studio) / sum(without)
        lines.append(
            f"| {backend} | {' / '.join(f'{s:.1f}' for s in without)} s "
            f"| {' / '.join(f'{s:.1f}' for s in with_studio)} s "
            f"| {' / '.join(f'{w / o:.3f}' for w, o in zip(with_studio, without, strict=True))} "
            f"| {ratio:.3f} |"
        )
        notes.append(f"{backend}: {ratio:.3f} ({'met' if ratio <= 1.05 else 'NOT met'})")
    lines += ["", "Target (the studio slows the game by at most 5%): " + "; ".join(notes) + "."]
    return lines


def _game_hosts_section(size: int = GAME_SIZES[-1], hosts: int = HOSTS) -> list[str]:
    lines = [
        "",
        "## Scale: the two-thirds game on agent hosts (`bench/bench_scale.py`)",
        "",
        _load_note(),
        "",
        f"`examples/87_two_thirds_game.py --hosts {hosts}` at {size:,} players, "
        f"{GAME_ROUNDS} rounds: each host (a Ray actor, one process) builds its block of "
        "players itself, and the moderator's announcement, result and fanout are one call per "
        f"host. All {hosts} hosts share this machine's 2 cores with the driver. Compared with "
        "the same game in one process (asyncio) in the same run.",
        "",
        "| driver | building | seconds per round (each) | driver's peak RSS "
        "| hosts' peak RSS (each) | same results as one process |",
        "|---|---|---|---|---|---|",
    ]
    one = _game("asyncio", size)
    notes = []
    for backend in BACKENDS:
        f = _game(backend, size, "--hosts", str(hosts))
        same = all(f[key] == one[key] for key in ("results", "memory_of_last_player"))
        rounds = " / ".join(f"{r:.1f}" for r in f["round_s"])
        lines.append(
            f"| {backend} | {f['build_s']:.1f} s | {rounds} s | {f['driver_rss_mib']:,.0f} MiB "
            f"| {' / '.join(f'{r:,.0f}' for r in f['hosts_peak_rss_mib'])} MiB "
            f"| {'yes' if same else 'NO'} |"
        )
        notes.append(
            f"{backend}: driver {'met' if f['driver_rss_mib'] <= 1024 else 'NOT met'}, "
            f"results {'met' if same else 'NOT met'}"
        )
    lines += [
        "",
        "Targets (the driver within 1 GiB, the results those of one process): "
        + "; ".join(notes)
        + ".",
    ]
    return lines


def _ray_section() -> list[str]:
    lines = [
        "",
        "## Scale: agent hosts on Ray (`bench/bench_scale.py`)",
        "",
        _load_note(),
        "",
        f"Local cluster, 2 CPUs: {RAY_CREATE:,} agents created on one host "
        f"(batches of 2,000 per call), {RAY_REPLIES:,} replies through proxies with "
        f"{RAY_IN_FLIGHT} in flight, beside Ray's own async-actor calls on this machine.",
        "",
        "| caller | agents created/s | remote replies/s | proxy round trip "
        "| Ray actor calls/s | Ray round trip |",
        "|---|---|---|---|---|---|",
    ]
    for backend in BACKENDS:
        f = _ours("ray", backend)
        lines.append(
            f"| {backend} | {f['create_per_s']:,.0f} | {f['replies_per_s']:,.0f} "
            f"| {f['proxy_round_trip_ms']:.2f} ms | {f['ray_calls_per_s']:,.0f} "
            f"| {f['ray_round_trip_ms']:.2f} ms |"
        )
    return lines


def main(parts: tuple[str, ...] = ("create", "big", "game", "voting", "ray")) -> str:
    """The markdown sections of *parts* (each its own ``## `` section, so that a part run alone
    replaces only its own section of ``RESULTS.md``)."""
    lines: list[str] = []
    if "create" in parts:
        lines += _creation_section()
    if "big" in parts:
        lines += _big_section()
    if "game" in parts:
        lines += _game_section()
    if "game_studio" in parts:
        lines += _game_studio_section()
    if "game_studio_million" in parts:
        lines += _game_studio_section(GAME_SIZES[-1], STUDIO_MILLION_PAIRS)
    if "game_hosts" in parts:
        lines += _game_hosts_section()
    if "voting" in parts:
        lines += _voting_section()
    if "voting_million" in parts:
        lines += _voting_million_section()
    if "ray" in parts:
        lines += _ray_section()
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        kind, *rest = sys.argv[2:]
        if kind == "create":
            result = _creation_worker(rest[0])
        elif kind == "big":
            result = _big_worker(rest[0], rest[1])
        else:
            result = _ray_worker(rest[0])
        print(json.dumps(result), flush=True)
    elif sys.argv[1:2] == ["--write"]:
        # One or more parts alone, merged into RESULTS.md as bench/run.py does.
        import run

        results = HERE / "RESULTS.md"
        fresh = run._sections(main(tuple(sys.argv[2:])))
        previous = run._sections(results.read_text(encoding="utf-8"))
        merged = {**previous, **fresh}
        body = [body.rstrip("\n") + "\n" for body in merged.values()]
        results.write_text("\n".join(["# Benchmark results\n", run.machine_summary(), *body]))
        print("\n".join(fresh.values()))
    else:
        print(main(tuple(sys.argv[1:]) or ("create", "big", "game", "voting", "ray")))
