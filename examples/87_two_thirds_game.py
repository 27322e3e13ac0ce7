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
with a page reading its live feed (see ``docs/studio.md``, "At scale"). A million players
(``--agents 1000000``) take about a minute to build and about a minute a round on a 2-core
machine, and about 5 GB of memory after three rounds (see ``docs/distributed.md``).

What to look for: the targets fall round after round as the players anchor on the last one
(the classic result), the build time and seconds per round, and the peak memory.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import time
from typing import Any

import anyio
from pydantic import BaseModel, Field

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock, ToolUseBlock
from agentscope_rt.model import ChatModelBase, ChatResponse
from agentscope_rt.pipeline import MsgHub, fanout_pipeline

LEVELS = 6
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


def make_players(count: int) -> list[ReActAgent]:
    """*count* players sharing one model, one formatter and six prompts."""
    model, formatter = LevelKModel(), OpenAIChatFormatter()
    players = []
    for index in range(count):
        player = ReActAgent(
            name=f"p{index}",
            sys_prompt=PROMPTS[index % LEVELS],
            model=model,
            formatter=formatter,
            max_iters=2,
        )
        player.set_console_output_enabled(False)
        players.append(player)
    return players


async def play(players: list[ReActAgent], rounds: int) -> tuple[list[dict[str, Any]], list[float]]:
    """The moderator: *rounds* rounds; each round's result and its seconds."""
    results: list[dict[str, Any]] = []
    seconds: list[float] = []
    last_target: float | None = None
    # Replies are not broadcast (each goes to the moderator only); results are.
    async with MsgHub(players, name="game", enable_auto_broadcast=False) as hub:
        for round_no in range(1, rounds + 1):
            started = time.perf_counter()
            told = "" if last_target is None else f" Last round's target was {last_target:.2f}."
            announcement = Msg(
                "moderator",
                f"Round {round_no}: guess an integer from 0 to 100; whoever is closest to "
                f"two-thirds of the average wins.{told}",
                "user",
            )
            replies = await fanout_pipeline(players, announcement, structured_model=Guess)
            guesses = [reply.metadata["guess"] for reply in replies]
            average = sum(guesses) / len(guesses)
            target = average * 2 / 3
            best = min(abs(g - target) for g in guesses)
            winners = sum(1 for g in guesses if abs(g - target) == best)
            await hub.broadcast(
                Msg(
                    "moderator",
                    f"Round {round_no}: the average was {average:.2f}, the target was "
                    f"{target:.2f}; {winners} player(s) won.",
                    "user",
                )
            )
            seconds.append(time.perf_counter() - started)
            results.append({"round": round_no, "average": round(average, 4), "winners": winners})
            last_target = target
    return results, seconds


async def simulate(agents: int, rounds: int) -> dict[str, Any]:
    started = time.perf_counter()
    players = make_players(agents)
    built = time.perf_counter() - started
    results, seconds = await play(players, rounds)
    heard = await players[-1].memory.size()
    return {
        "agents": agents,
        "rounds": rounds,
        "build_s": built,
        "round_s": seconds,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "results": results,
        "memory_of_last_player": heard,
    }


async def simulate_in_studio(agents: int, rounds: int) -> dict[str, Any]:
    """:func:`simulate` with the studio served for the whole game and a page watching; the
    figures add what the page read (``studio_feed``: events and bytes)."""
    async with _studio_watching() as feed:
        figures = await simulate(agents, rounds)
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
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--studio", action="store_true", help="serve the studio, a page watching")
    args = parser.parse_args()
    quick = os.environ.get("AGENTSCOPE_RT_EXAMPLES") == "1"
    agents = args.agents or (1_000 if quick else 10_000)
    run = simulate_in_studio if args.studio else simulate
    figures = anyio.run(run, agents, args.rounds, backend=args.backend)
    if args.json:
        print(json.dumps(figures))
        return
    print(f"{agents:,} players, {args.rounds} rounds ({args.backend}):")
    for result, seconds in zip(figures["results"], figures["round_s"], strict=True):
        print(
            f"  round {result['round']}: average {result['average']:.2f}, "
            f"{result['winners']:,} winner(s), {seconds:.2f} s"
        )
    print(
        f"  built in {figures['build_s']:.2f} s; peak memory {figures['peak_rss_mib']:,.0f} MiB; "
        f"the last player remembers {figures['memory_of_last_player']} messages"
    )


if __name__ == "__main__":
    _cli()
