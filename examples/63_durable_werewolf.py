"""A durable game of werewolf: the process playing it is killed, and a new one finishes it.

The game is ``24_werewolf.py``'s (its players, phases, hubs and structured votes are imported
from there), played inside ``async with durable_run(run_id, store) as run:``. Its chance comes
from a recorded step: the seed that deals the roles and drives the players' guesses is drawn
once by ``run.step("seed", ...)``, so a resumed game deals the same roles.

What the example does:

1. starts the game in a child process (this file, run with ``--child``) and watches the run's
   record in the store (``SQLiteRunStore.get_run``): once it holds ``--kill-after`` steps, the
   child is killed with SIGKILL, part-way through the game;
2. starts the game again in a new process with the same run id: every recorded step (agent
   calls, model calls, tool calls) returns its record, so the players rebuild the very states
   they had, and the game goes on live from the first step without a record;
3. plays one uninterrupted game under another run id, with the same seed (read from the
   first run's records with ``load_steps``), and compares: the resumed game ends with the
   same transcript, and it made fewer model calls.

Each player's model is 24_werewolf's rule-based ``FunctionChatModel``, with a pause of
``--latency`` seconds per call standing in for an API's answer time.

Run: ``python examples/63_durable_werewolf.py`` (asyncio) or
``python examples/63_durable_werewolf.py trio`` (also ``--backend trio``); ``--players N``
(5 to 12) and ``--rounds R`` change the game.

What to look for: the first process killed with a few dozen steps recorded and its run still
``running``; the resumed game replaying those steps and recording the rest; ``same transcript
as the uninterrupted game: True``; and the model calls the resume did not pay for again.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import random
import secrets
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

from agentscope_rt.agent import CUT_OFF_TEXT, ReActAgent
from agentscope_rt.durable import DurableRun, SQLiteRunStore, durable_run

werewolf = importlib.import_module("24_werewolf")

NAMES = ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank"]
NAMES += ["Grace", "Heidi", "Ivan", "Judy", "Mallory", "Niaj"]
CRASHED_RUN = "werewolf-crashed"
UNINTERRUPTED_RUN = "werewolf-uninterrupted"


# --- the game, as a durable run ----------------------------------------------------------------


def draw_seed(given: int | None) -> int:
    """The game's seed: *given*, or a fresh random one (the run records which)."""
    return secrets.randbits(32) if given is None else given


def deal_roles(names: list[str], seed: int) -> dict[str, str]:
    """A werewolf for every three players (at least one), one seer, villagers for the rest."""
    wolves = max(1, len(names) // 3)
    deck = ["werewolf"] * wolves + ["seer"] + ["villager"] * (len(names) - wolves - 1)
    random.Random(seed).shuffle(deck)
    return dict(zip(names, deck, strict=True))


def paced(brain: Any, latency: float) -> Any:
    """*brain*, answering after *latency* seconds as a model API would."""

    async def answer(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Any:
        await anyio.sleep(latency)
        return brain(messages, tools)

    return answer


async def play(
    run: DurableRun, args: argparse.Namespace, seed: int | None = None
) -> dict[str, Any]:
    """One game inside *run*; what it ended with: the winner, a digest of everything the
    players heard and said, and the model calls this process made."""
    seed = await run.step("seed", draw_seed, seed)
    state = werewolf.GameState(deal_roles(NAMES[: args.players], seed))
    players = werewolf.build_players(
        state, lambda name: paced(werewolf.make_player_brain(name, seed), args.latency)
    )
    moderator = werewolf.EchoAgent()
    for agent in [moderator, *players.values()]:
        agent.set_console_output_enabled(args.show)
    await moderator(f"Welcome to werewolf. Players: {', '.join(state.roles)}.")
    winner = None
    for _ in range(args.rounds):
        winner = await werewolf.night_and_day(state, players, moderator)
        if winner:
            break
    return {
        "seed": seed,
        "winner": winner or "nobody",
        "transcript": await transcript(players),
        "model_calls": sum(len(player.model.calls) for player in players.values()),
        "replayed": run.replayed,
        "recorded": run.recorded,
    }


async def transcript(players: dict[str, ReActAgent]) -> dict[str, Any]:
    """A digest of who said what to whom: every message in every player's memory, but the
    tool calls the kill cut off (counted apart: the player made them again)."""
    lines: list[str] = []
    cut: set[str] = set()
    for name, player in players.items():
        memory = await player.memory.get_memory()
        cut |= {
            block.id
            for msg in memory
            for block in msg.get_content_blocks("tool_result")
            if CUT_OFF_TEXT in str(block.output)
        }
        lines += [
            f"{name} holds {msg.name}: {msg.get_text_content()}"
            for msg in memory
            if not {block.id for block in msg.get_content_blocks("tool_use")} & cut
            and not {block.id for block in msg.get_content_blocks("tool_result")} & cut
        ]
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
    return {"messages": len(lines), "sha256": digest, "cut_off": len(cut)}


async def child(args: argparse.Namespace) -> None:
    """The game of run *args.child*, from the start or resumed; its summary as JSON."""
    async with durable_run(args.child, SQLiteRunStore(args.db)) as run:
        summary = await play(run, args)
    summary["resumed"] = run.resumed
    print(json.dumps(summary))


# --- the demonstration -------------------------------------------------------------------------


def child_command(args: argparse.Namespace, run_id: str, db: Path) -> list[str]:
    options = ["--players", str(args.players), "--rounds", str(args.rounds)]
    options += ["--latency", str(args.latency), "--backend", args.backend]
    options += ["--show"] if args.show else []
    return [sys.executable, __file__, "--child", run_id, "--db", str(db), *options]


async def kill_part_way(args: argparse.Namespace, store: SQLiteRunStore, db: Path) -> None:
    """Start the game in a child process and SIGKILL it once the run holds enough steps."""
    # The child's output (the game, with --show) goes straight to this console.
    command = child_command(args, CRASHED_RUN, db)
    process: Process = await anyio.open_process(command, stdout=None, stderr=None)
    try:
        with anyio.fail_after(60):
            while (info := await store.get_run("", CRASHED_RUN)) is None or (
                info.steps < args.kill_after
            ):
                if process.returncode is not None:
                    raise SystemExit(
                        f"the game ended (exit code {process.returncode}) before "
                        f"{args.kill_after} steps: give a smaller --kill-after"
                    )
                await anyio.sleep(0.005)
        process.kill()
        await process.wait()
        if process.returncode == 0:
            raise SystemExit(
                "the game ended before the kill: give a smaller --kill-after or a longer --latency"
            )
    finally:
        if process.returncode is None:
            process.kill()
        await process.aclose()
    info = await store.get_run("", CRASHED_RUN)
    assert info is not None
    print(
        f"[1] game started in process {process.pid} and killed with SIGKILL (exit code "
        f"{process.returncode}) after {info.steps} recorded steps, the last {info.last_step!r}; "
        f"run status: {info.status}"
    )


async def resume(args: argparse.Namespace, db: Path) -> dict[str, Any]:
    """Start the same run again in a new process; its summary."""
    done = await anyio.run_process(child_command(args, CRASHED_RUN, db), check=False)
    if done.returncode:
        raise SystemExit(f"the resumed game failed:\n{done.stderr.decode()}")
    *game, last = done.stdout.decode().splitlines()
    for line in game:  # the game itself, with --show
        print(line)
    resumed = json.loads(last)
    print(
        f"[2] same run id in a new process (resumed: {resumed['resumed']}): "
        f"{resumed['replayed']} steps replayed from the record, {resumed['recorded']} run "
        f"live; winner: {resumed['winner']}"
    )
    return resumed


async def uninterrupted(args: argparse.Namespace, store: SQLiteRunStore) -> dict[str, Any]:
    """The same game (the crashed run's recorded seed) played start to end in this process."""
    records = await store.load_steps("", CRASHED_RUN)
    seed = next(record.payload for record in records if record.key == "seed#1")
    async with durable_run(UNINTERRUPTED_RUN, store) as run:
        summary = await play(run, args, seed)
    print(
        f"[3] uninterrupted game with the same seed ({seed}), run id {UNINTERRUPTED_RUN!r}: "
        f"{summary['recorded']} steps; winner: {summary['winner']}"
    )
    return summary


async def demo(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "runs.db"
        store = SQLiteRunStore(db)
        try:
            await kill_part_way(args, store, db)
            resumed = await resume(args, db)
            reference = await uninterrupted(args, store)
        finally:
            await store.aclose()
    mine, theirs = resumed["transcript"], reference["transcript"]
    same = (mine["messages"], mine["sha256"]) == (theirs["messages"], theirs["sha256"])
    print(
        f"same transcript as the uninterrupted game: {same} ({mine['messages']} messages in "
        f"the players' memories, sha256 {mine['sha256']}); same winner: "
        f"{resumed['winner'] == reference['winner']}"
    )
    if mine["cut_off"]:
        print(
            f"  {mine['cut_off']} tool call(s) were running when the kill came: each got "
            "CUT_OFF_TEXT as its result instead of running again, and its player called again "
            "(the cut-off calls are left out of the comparison)"
        )
    saved = reference["model_calls"] - resumed["model_calls"]
    print(
        f"model calls: {resumed['model_calls']} made by the resumed process, "
        f"{reference['model_calls']} by the uninterrupted game: the resume saved {saved}"
    )
    if not same:
        raise SystemExit("the resumed game differs from the uninterrupted one")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend_arg", nargs="?", choices=["asyncio", "trio"], metavar="backend")
    parser.add_argument("--backend", choices=["asyncio", "trio"], help="default: asyncio")
    parser.add_argument("--players", type=int, default=6, choices=range(5, len(NAMES) + 1))
    parser.add_argument("--rounds", type=int, default=3, help="at most this many rounds")
    parser.add_argument("--kill-after", type=int, default=30, help="steps before the kill")
    parser.add_argument("--latency", type=float, default=0.01, help="seconds per model call")
    parser.add_argument("--show", action="store_true", help="print the game as it is played")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.backend = args.backend or args.backend_arg or "asyncio"
    return args


if __name__ == "__main__":
    options = parse_args(sys.argv[1:])
    anyio.run(child if options.child else demo, options, backend=options.backend)
