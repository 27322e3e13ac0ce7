"""Agents voting in rounds: 10,000 agents in one process, then the same groups on 4 agent hosts.

Voters sit in groups of 100; each group is a ``MsgHub``, so every vote is heard by the group's
other 99 members. A moderator asks every group at once (``fanout_pipeline``); a group answers
by letting all its voters vote at once (another ``fanout_pipeline``, inside its hub) and
reporting its tally. A voter votes for its own preference unless last round at least 60% of
its group voted the other way and it is not stubborn: opinions settle in a few rounds.

1. In one process: 100 groups (10,000 agents) on this event loop.
2. On Ray (the ``ray`` extra): the same groups, built on 4 agent hosts (one Ray actor each,
   2,500 agents per host); the moderator holds one proxy per group, and ``fanout_pipeline``
   takes the proxies as it took the local groups. The tallies are the same.

The voters and groups are agents of our own (``AgentBase`` subclasses with a ``reply`` and an
``observe``), not ReAct agents: a voter is a rule, not a language model, and at this scale a
model call or a printed line per vote would be the whole cost and the whole output. They print
nothing because their ``reply`` never calls ``self.print``; the console is not switched off.

Run: ``python examples/86_simulation.py`` (asyncio) or
``python examples/86_simulation.py trio``. With
``AGENTSCOPE_RT_EXAMPLES=1`` it uses 1,000 agents and 3 rounds so that it ends within a minute.
``--agents N --hosts H --rounds R --json`` runs one configuration and prints its figures as
JSON (``bench/bench_scale.py`` uses this; ``--hosts 0`` is one process).

What to look for: the A/B totals per round settle within a few rounds as voters follow clear
majorities; the build time and seconds per round in one process and on 4 hosts; and the same
totals both ways.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections import Counter
from typing import Any

import anyio
from _ray import start_local_ray

from agentscope_rt.agent import AgentBase
from agentscope_rt.message import Msg
from agentscope_rt.pipeline import MsgHub, fanout_pipeline

GROUP_SIZE = 100
# Groups voting at once: enough to keep both cores busy, few enough that the memory of the
# votes in progress stays the same whatever the number of agents.
GROUPS_IN_FLIGHT = 100


class Voter(AgentBase):
    """Votes A or B; hears its group's votes and may follow a clear majority next round."""

    def __init__(self, name: str, preference: str, stubborn: bool) -> None:
        super().__init__()
        self.name = name
        self.vote = preference
        self.stubborn = stubborn
        # Votes heard per round (only the current and the last round are kept).
        self.heard: dict[int, Counter[str]] = {}

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        round_no = int(msg.metadata["round"]) if isinstance(msg, Msg) and msg.metadata else 0
        last = self.heard.pop(round_no - 1, None)
        if last and not self.stubborn:
            other = "B" if self.vote == "A" else "A"
            if last[other] >= 0.6 * sum(last.values()):
                self.vote = other
        return Msg(self.name, self.vote, "assistant", metadata={"round": round_no})

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        for one in msg if isinstance(msg, list) else [msg]:
            if one is not None and one.metadata and one.name != "moderator":
                self.heard.setdefault(int(one.metadata["round"]), Counter())[str(one.content)] += 1


class Group(AgentBase):
    """One hub of voters; a reply is one round of voting, answered with the tally."""

    def __init__(self, index: int, size: int = GROUP_SIZE) -> None:
        super().__init__()
        self.name = f"group{index}"
        self.voters = [
            # A deterministic mix: groups lean A or B, one voter in seven is stubborn.
            Voter(
                f"voter{index}_{i}",
                "A" if (i * 7 + index * 3) % 10 < 4 + index % 3 else "B",
                stubborn=i % 7 == 0,
            )
            for i in range(size)
        ]

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        async with MsgHub(self.voters, name=self.name):
            votes = await fanout_pipeline(self.voters, msg)
        tally = Counter(str(vote.content) for vote in votes)
        return Msg(self.name, f"A={tally['A']} B={tally['B']}", "assistant", metadata=dict(tally))

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        return None


def make_group(index: int, size: int = GROUP_SIZE) -> Group:
    """The factory the agent hosts build groups with."""
    return Group(index, size)


async def run_rounds(groups: list[AgentBase], rounds: int) -> tuple[list[dict[str, int]], float]:
    """The moderator: *rounds* rounds over every group at once; totals per round and seconds."""
    totals = []
    started = time.perf_counter()
    for round_no in range(1, rounds + 1):
        question = Msg("moderator", "A or B?", "user", metadata={"round": round_no})
        tallies = await fanout_pipeline(groups, question, max_concurrency=GROUPS_IN_FLIGHT)
        total: Counter[str] = Counter()
        for tally in tallies:
            total.update(tally.metadata or {})
        totals.append(dict(sorted(total.items())))
    return totals, time.perf_counter() - started


async def simulate(agents: int, hosts: int, rounds: int) -> dict[str, Any]:
    """Build the groups (here, or on *hosts* agent hosts) and run the rounds."""
    n_groups = max(1, agents // GROUP_SIZE)
    started = time.perf_counter()
    if hosts == 0:
        groups: list[AgentBase] = [make_group(k) for k in range(n_groups)]
        created = time.perf_counter() - started
        totals, seconds = await run_rounds(groups, rounds)
        return _figures(agents, hosts, rounds, created, seconds, totals)

    from agentscope_rt.distributed import AgentHost

    async with AgentHost("sim-host-0") as first:
        others = [AgentHost(f"sim-host-{h}") for h in range(1, hosts)]
        try:
            for host in others:
                await host.start()
            all_hosts = [first, *others]
            groups = []
            for h, host in enumerate(all_hosts):
                mine = [{"index": k} for k in range(h, n_groups, hosts)]
                groups += await host.create_agents(make_group, mine)
            created = time.perf_counter() - started
            totals, seconds = await run_rounds(groups, rounds)
        finally:
            for host in others:
                await host.close()
    return _figures(agents, hosts, rounds, created, seconds, totals)


def _figures(
    agents: int, hosts: int, rounds: int, created: float, seconds: float, totals: list[Any]
) -> dict[str, Any]:
    return {
        "agents": agents,
        "hosts": hosts,
        "rounds": rounds,
        "create_s": created,
        "s_per_round": seconds / rounds,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "totals": totals,
    }


async def main(backend: str) -> None:
    quick = os.environ.get("AGENTSCOPE_RT_EXAMPLES") == "1"
    agents, rounds = (1_000, 3) if quick else (10_000, 4)
    local = await simulate(agents, 0, rounds)
    print(f"One process, {agents:,} agents in {agents // GROUP_SIZE} hubs ({backend}):")
    for round_no, total in enumerate(local["totals"], 1):
        print(f"  round {round_no}: {total}")
    print(f"  built in {local['create_s']:.2f} s, {local['s_per_round']:.2f} s per round")

    remote = await simulate(agents, 4, rounds)
    print(f"On 4 agent hosts ({agents // 4:,} agents each):")
    for round_no, total in enumerate(remote["totals"], 1):
        print(f"  round {round_no}: {total}")
    print(f"  built in {remote['create_s']:.2f} s, {remote['s_per_round']:.2f} s per round")
    assert remote["totals"] == local["totals"], "the hosts voted differently"
    print("Same tallies in one process and on the hosts.")


def _cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend", nargs="?", default="asyncio", choices=["asyncio", "trio"])
    parser.add_argument("--agents", type=int)
    parser.add_argument("--hosts", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    needs_ray = args.hosts > 0 or args.agents is None
    if needs_ray:
        import ray

        start_local_ray()
    try:
        if args.agents is None:
            anyio.run(main, args.backend, backend=args.backend)
        else:
            figures = anyio.run(
                simulate, args.agents, args.hosts, args.rounds, backend=args.backend
            )
            print(json.dumps(figures) if args.json else figures)
    finally:
        if needs_ray:
            ray.shutdown()


if __name__ == "__main__":
    sys.exit(_cli())
