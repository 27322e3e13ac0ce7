"""Guess two-thirds of the average: ReAct agents by the thousand (a million, if you like).

A moderator announces a round to every player; every player, a ``ReActAgent``, answers with a
structured guess (an integer from 0 to 100, through the finish function
``generate_response``); the moderator takes two-thirds of the average as the round's target,
announces the result to everyone in a ``MsgHub``, and starts the next round. The players keep
what they heard and said in their memories.

The players' model is scripted (no language model runs here): a player reasons to a depth set
by its system prompt (one of six shared prompts, "level 0" to "level 5") and guesses
``anchor * (2/3) ** level``, where the anchor is 50 in the first round and the last announced
target afterwards. Each player still goes through the whole ReAct reply: memory, formatter,
model call, tool call with validated arguments, structured output in the reply's metadata.

Run: ``python examples/87_two_thirds_game.py`` (asyncio, 10,000 players) or
``python examples/87_two_thirds_game.py trio``; ``--agents N --rounds R`` sets the size (with
``AGENTSCOPE_RT_EXAMPLES=1`` the default is 1,000 players); ``--json`` prints the figures as
JSON (``bench/bench_scale.py`` uses this); ``--studio`` serves the studio for the whole game,
with a page reading its live feed (see ``docs/studio.md``, "At scale"). What a million players
(``--agents 1000000``) cost on one core of a 2-core machine (``bench/RESULTS.md``): 42-55 s
to build, 44-57 s a round (about 50 us a player) and 5.8 GiB of memory after three rounds
(about 5.3 KB a player: what it said and heard). See ``docs/scale.md``.

On Ray agent hosts (the ``ray`` extra): ``--hosts H`` builds the players on H hosts, host h
the h-th block, each host building its own (``AgentHost.create_group``: nothing per player on
this side); each round the moderator tells each host's players the announcement in one call,
asks them in another and tells them the result in a third (``broadcast_groups``,
``fanout_groups``). The default run (no ``--agents``) plays in one process, then on 2 hosts,
and checks that the results are the same. On this 2-core machine 100,000 players on 4 hosts
take about 8 s to build and 9-11 s a round (12-19 s in one process), the driver staying at
about 150 MiB (860 MiB in one process) and each host at about 330 MiB; a million players on 4
hosts take about 25 s to build and 29-36 s a round, the driver at 171 MiB and each host at
1.4 GiB (``bench/bench_scale.py game_hosts``).

What to look for: the targets fall round after round as the players anchor on the last one
(the classic result), the build time and seconds per round, and the peak memory.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import re
import resource
import time
from collections.abc import Awaitable, Callable
from importlib.util import find_spec
from typing import Any

import anyio
from pydantic import BaseModel, Field

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock, ToolUseBlock
from agentscope_rt.model import ChatModelBase, ChatResponse
from agentscope_rt.pipeline import MsgHub, fanout_pipeline

LEVELS = 6
IN_FLIGHT = 1_000
PROMPTS = [
    f"You play the two-thirds game. You think {level} level(s) ahead of the others."
    for level in range(LEVELS)
]
_LEVEL = {prompt: level for level, prompt in enumerate(PROMPTS)}
_TARGET = re.compile(r"target was ([0-9]+\.[0-9]+)")


class Guess(BaseModel):
    """A player's answer."""

    guess: int = Field(description="Your guess, an integer from 0 to 100", ge=0, le=100)


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else content[0]["text"]


class LevelKModel(ChatModelBase):
    """A scripted player: guesses the anchor times (2/3) to the power of its level.

    Shared by every player (one object); it reads the level from the system prompt and the
    anchor from the last message (the moderator's announcement). It answers in words and with
    the finish function at once, so a reply takes one model call and one tool call.
    """

    def __init__(self) -> None:
        super().__init__("level-k", stream=False)
        self.calls = 0

    async def __call__(self, messages: list[dict[str, Any]], **kwargs: Any) -> ChatResponse:
        self.calls += 1
        level = _LEVEL[_text(messages[0])]
        found = _TARGET.search(_text(messages[-1]))
        anchor = float(found.group(1)) if found else 50.0
        guess = round(anchor * (2 / 3) ** level)
        # Words and the structured answer in one response: the reply reuses the words.
        return ChatResponse(
            content=[
                TextBlock(text=f"I guess {guess}."),
                ToolUseBlock(id="guess", name="generate_response", input={"guess": guess}),
            ]
        )


def show_what_it_says(player: Any, kwargs: dict[str, Any]) -> None:
    """A ``pre_print`` hook: the player's words on the console, one line (the first player of
    each level prints through it; a console line per player would bury the game)."""
    msg = kwargs["msg"]
    # Once per reply: the reasoning step (its words and the finish function's call).
    if kwargs.get("last", True) and msg.has_content_blocks("tool_use"):
        level = int(player.name[1:]) % LEVELS
        print(f"    {player.name} (level {level}): {msg.get_text_content()}")


def make_players(count: int, show: bool = False, first: int = 0) -> list[ReActAgent]:
    """*count* players (numbered from *first*) sharing one model, one formatter and six
    prompts; with *show* the first of each level shows what it says."""
    model, formatter = LevelKModel(), OpenAIChatFormatter()
    players = []
    for index in range(first, first + count):
        player = ReActAgent(
            name=f"p{index}",
            sys_prompt=PROMPTS[index % LEVELS],
            model=model,
            formatter=formatter,
            max_iters=2,
        )
        player.set_console_output_enabled(False)
        if show and index < LEVELS:
            player.register_instance_hook("pre_print", "show", show_what_it_says)
        players.append(player)
    return players


async def play(
    players: list[ReActAgent], rounds: int, show: bool = False
) -> tuple[list[dict[str, Any]], list[float], list[float]]:
    """The moderator: *rounds* rounds; each round's result, its seconds and the seconds of
    CPU this process spent in it (printed as they end with *show*)."""

    async def ask() -> list[int]:
        # Every player answers what it heard; at most IN_FLIGHT replies at once bounds the
        # memory of the replies in progress (a task and its frames each).
        replies = await fanout_pipeline(
            players, None, max_concurrency=IN_FLIGHT, structured_model=Guess
        )
        return [reply.metadata["guess"] for reply in replies]

    # Announcements go to everyone through the hub: one message held by every memory, not a
    # copy per player. Replies are not broadcast (each goes to the moderator only).
    async with MsgHub(players, name="game", enable_auto_broadcast=False) as hub:
        return await moderate(rounds, hub.broadcast, ask, show)


async def moderate(
    rounds: int,
    tell: Callable[[Msg], Awaitable[None]],
    ask: Callable[[], Awaitable[list[int]]],
    show: bool = False,
) -> tuple[list[dict[str, Any]], list[float], list[float]]:
    """*rounds* rounds: *tell* gives every player a message, *ask* gets every player's guess
    to what it heard; each round's result, its seconds and this process's CPU seconds in it
    (printed with *show*)."""
    results: list[dict[str, Any]] = []
    seconds: list[float] = []
    cpu_seconds: list[float] = []
    last_target: float | None = None
    for round_no in range(1, rounds + 1):
        started, cpu_started = time.perf_counter(), time.process_time()
        told = "" if last_target is None else f" Last round's target was {last_target:.2f}."
        await tell(
            Msg(
                "moderator",
                f"Round {round_no}: guess an integer from 0 to 100; whoever is closest to "
                f"two-thirds of the average wins.{told}",
                "user",
            )
        )
        guesses = await ask()
        average = sum(guesses) / len(guesses)
        target = average * 2 / 3
        best = min(abs(g - target) for g in guesses)
        winners = sum(1 for g in guesses if abs(g - target) == best)
        await tell(
            Msg(
                "moderator",
                f"Round {round_no}: the average was {average:.2f}, the target was "
                f"{target:.2f}; {winners} player(s) won.",
                "user",
            )
        )
        seconds.append(time.perf_counter() - started)
        cpu_seconds.append(time.process_time() - cpu_started)
        results.append({"round": round_no, "average": round(average, 4), "winners": winners})
        if show:
            print(
                f"  round {round_no}: average {average:.2f}, target {target:.2f}, "
                f"{winners:,} winner(s), {seconds[-1]:.2f} s"
            )
        last_target = target
    return results, seconds, cpu_seconds


def settle_for_a_long_game() -> None:
    """Tune Python's cycle collector for millions of objects that live for the whole game
    (docs/scale.md): what is built so far is taken out of its passes (``gc.freeze``), and a
    full pass (which walks every object still in them: all the players heard and said so
    far) waits for 10,000 passes of the middle generation instead of 10. With the default,
    a round at 100,000 players made ten full passes and spent a third of its time in them;
    with 1,000, a million players still made one or two a round, of several seconds each.
    The game makes no cyclic garbage to speak of: the young passes collect what there is."""
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 10_000)


async def simulate(agents: int, rounds: int, show: bool = False) -> dict[str, Any]:
    started = time.perf_counter()
    players = make_players(agents, show)
    built = time.perf_counter() - started
    settle_for_a_long_game()
    if show:
        print(f"{agents:,} players built in {built:.2f} s; {rounds} rounds:")
    results, seconds, cpu_seconds = await play(players, rounds, show)
    heard = await players[-1].memory.size()
    return _figures(agents, 0, rounds, built, (seconds, cpu_seconds), results, heard)


def make_frozen_players(count: int, first: int) -> list[ReActAgent]:
    """A host's block of players, its collector tuned as in one process."""
    players = make_players(count, first=first)
    settle_for_a_long_game()
    return players


async def simulate_on_hosts(
    agents: int, rounds: int, hosts: int, show: bool = False, durable: str | None = None
) -> dict[str, Any]:
    """The same game with the players on *hosts* Ray agent hosts: host h builds the h-th
    block of players itself (``create_group``: nothing per player on this side), and the
    moderator reaches each host's players in one call per host for each message. With
    *durable*, the rounds are a durable run recorded in that SQLite file."""
    from agentscope_rt.distributed import AgentHost, broadcast_groups, fanout_groups

    started = time.perf_counter()
    # On a cluster of several nodes, "SPREAD" puts the hosts on different nodes.
    spread = {"scheduling_strategy": "SPREAD"}
    on = [AgentHost(f"game-host-{h}", actor_options=spread) for h in range(hosts)]
    bounds = [agents * h // hosts for h in range(hosts + 1)]
    groups: list[Any] = [None] * hosts

    async def build(h: int) -> None:
        await on[h].start()
        count = bounds[h + 1] - bounds[h]
        groups[h] = await on[h].create_group(make_frozen_players, count=count, first=bounds[h])

    async def tell(msg: Msg) -> None:
        await broadcast_groups(groups, msg)

    async def ask() -> list[int]:
        return await fanout_groups(
            groups, None, metadata="guess", max_concurrency=IN_FLIGHT, structured_model=Guess
        )

    try:
        async with anyio.create_task_group() as task_group:
            for h in range(hosts):
                task_group.start_soon(build, h)
        built = time.perf_counter() - started
        if show:
            print(f"{agents:,} players built on {hosts} agent hosts in {built:.2f} s:")
        async with _maybe_durable(durable):
            results, seconds, cpu_seconds = await moderate(rounds, tell, ask, show)
        (last,) = await groups[-1].agents(len(groups[-1]) - 1)
        heard = len((await anyio.to_thread.run_sync(last.state_dict))["memory"]["content"])
        hosts_rss = [(await host.stats())["peak_rss_kib"] / 1024 for host in on]
    finally:
        for host in on:
            await host.close()
    figures = _figures(agents, hosts, rounds, built, (seconds, cpu_seconds), results, heard)
    return {**figures, "hosts_peak_rss_mib": hosts_rss}


def _maybe_durable(path: str | None) -> Any:
    from agentscope_rt.durable import durable_run

    return contextlib.nullcontext() if path is None else durable_run("two-thirds", path)


def _figures(
    agents: int,
    hosts: int,
    rounds: int,
    built: float,
    seconds: tuple[list[float], list[float]],
    results: list[dict[str, Any]],
    heard: int,
) -> dict[str, Any]:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "agents": agents,
        "hosts": hosts,
        "rounds": rounds,
        "build_s": built,
        "round_s": seconds[0],
        "round_cpu_s": seconds[1],
        "peak_rss_mib": rss,
        "driver_rss_mib": rss,
        "results": results,
        "memory_of_last_player": heard,
    }


async def simulate_in_studio(agents: int, rounds: int, show: bool = False) -> dict[str, Any]:
    """:func:`simulate` with the studio served for the whole game and a page watching; the
    figures add what the page read (``studio_feed``: events and bytes)."""
    async with _studio_watching() as feed:
        figures = await simulate(agents, rounds, show)
    return {**figures, "studio_feed": feed}


@contextlib.asynccontextmanager
async def _studio_watching() -> Any:
    """The studio served for the block, with a page (an SSE client) reading its feed; yields
    the feed's figures (events and bytes read), filled in as the page reads."""
    import httpx

    from agentscope_rt.studio import serve

    feed = {"events": 0, "bytes": 0}
    connected = anyio.Event()

    async def page(url: str, token: str) -> None:
        client = httpx.AsyncClient(timeout=None)
        async with client, client.stream("GET", url, params={"token": token}) as stream:
            async for line in stream.aiter_lines():
                feed["events"] += line.startswith("data: ")
                feed["bytes"] += len(line) + 1
                connected.set()

    async with serve(port=0, spans=False) as studio, anyio.create_task_group() as tg:
        tg.start_soon(page, f"{studio.base_url}/events", studio.token)
        with anyio.fail_after(30):  # the game starts with the page open
            await connected.wait()
        yield feed
        tg.cancel_scope.cancel()


def _cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend", nargs="?", default="asyncio", choices=["asyncio", "trio"])
    parser.add_argument("--agents", type=int)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hosts", type=int, default=0, help="Ray agent hosts (0: one process)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--durable", metavar="PATH", help="with --hosts: a durable run in PATH")
    parser.add_argument("--studio", action="store_true", help="serve the studio, a page watching")
    args = parser.parse_args()
    quick = os.environ.get("AGENTSCOPE_RT_EXAMPLES") == "1"
    agents = args.agents or (1_000 if quick else 10_000)
    if args.hosts:
        _show(_on_hosts(agents, args, args.hosts), args)
        return
    run = simulate_in_studio if args.studio else simulate
    figures = anyio.run(run, agents, args.rounds, not args.json, backend=args.backend)
    _show(figures, args)
    if args.agents is None and find_spec("ray") is not None:
        # The default run plays the game again on 2 agent hosts: the same results.
        on_hosts = _on_hosts(agents, args, 2)
        _show(on_hosts, args)
        for key in ("results", "memory_of_last_player"):
            assert on_hosts[key] == figures[key], f"the hosts' game differs: {key}"
        print("Same results in one process and on the agent hosts.")


def _on_hosts(agents: int, args: argparse.Namespace, hosts: int) -> dict[str, Any]:
    import ray
    from _ray import start_local_ray

    start_local_ray()
    try:
        return anyio.run(
            simulate_on_hosts,
            agents,
            args.rounds,
            hosts,
            not args.json,
            args.durable,
            backend=args.backend,
        )
    finally:
        ray.shutdown()


def _show(figures: dict[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(figures))
        return
    hosts = "".join(
        f"; host {h}: {rss:,.0f} MiB" for h, rss in enumerate(figures.get("hosts_peak_rss_mib", []))
    )
    print(
        f"  ({args.backend}) peak memory {figures['peak_rss_mib']:,.0f} MiB{hosts}; the last "
        f"player remembers {figures['memory_of_last_player']} messages"
    )


if __name__ == "__main__":
    _cli()
