"""Werewolf: six ReActAgents, a moderator, a MsgHub per phase, votes as structured output.

The layout of AgentScope's werewolf game, on asyncio or trio:

* six players (two werewolves, a seer, three villagers), each a ``ReActAgent``;
* a moderator that announces each phase: an ``EchoAgent`` that prints what it is told to say,
  as in AgentScope's own werewolf example (it decides nothing, so it is not a ReActAgent);
* night: a ``MsgHub`` of the living werewolves only, who hear each other and vote for a
  victim; then the seer names a player and the moderator tells only the seer that player's role;
* day: a ``MsgHub`` of everyone alive: ``sequential_pipeline`` lets each player speak in turn,
  then ``fanout_pipeline`` collects the votes at once (auto-broadcast off while voting, so
  nobody copies) and the moderator announces the tally;
* every vote is structured output: ``await player(structured_model=Vote)`` with a pydantic model
  whose ``target`` is a ``Literal`` of the living players' names, so no vote can name a dead or
  unknown player; the vote lands in the reply's ``metadata``;
* the game state (roles, who is alive, the round) and every player's memory are saved with a
  ``JSONSession`` after each round; the next round starts from fresh objects loaded from that
  file, as a game resumed by a new process would;
* the game ends with a winner.

Who plays: a 135M-parameter local model cannot play werewolf (it would neither keep its role
secret nor vote sensibly, and a dozen constrained votes would take minutes on this machine), so
each player's model is a ``FunctionChatModel`` from ``agentscope_rt.model``: a small rule-based
player that reads only its own prompt (its role) and what it heard, and answers through the same
formatter, tools and structured-output path a real model would. Give each player a real model
(``OpenAIChatModel`` ...) to watch a real game: nothing else changes.

Run with ``python examples/24_werewolf.py`` (asyncio) or ``python examples/24_werewolf.py trio``.

What to look for:

* ``Moderator:`` lines opening each phase, and the players' own printed speech and votes;
* ``[session] round N saved ... reloaded: round N, alive ...`` after each round;
* the last line: ``Winner: the villagers`` or ``Winner: the werewolves``.
"""

from __future__ import annotations

import json
import random
import re
import secrets
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from typing import Any, Literal

import anyio
from pydantic import BaseModel, Field, create_model

from agentscope_rt.agent import AgentBase, ReActAgent
from agentscope_rt.formatter import OpenAIMultiAgentFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import FunctionChatModel, reply, tool_call
from agentscope_rt.module import StateModule
from agentscope_rt.pipeline import MsgHub, fanout_pipeline, sequential_pipeline
from agentscope_rt.session import JSONSession

ROLES = {
    "Alice": "villager",
    "Bob": "werewolf",
    "Carol": "seer",
    "Dave": "villager",
    "Erin": "werewolf",
    "Frank": "villager",
}
SESSION_ID = "werewolf"
MAX_ROUNDS = 5


class EchoAgent(AgentBase):
    """The moderator: says (prints and returns) exactly what the game tells it to."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "Moderator"

    async def reply(self, content: str) -> Msg:
        msg = Msg(self.name, content, "assistant")
        await self.print(msg)
        return msg

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        return None


class GameState(StateModule):
    """What the moderator must remember between rounds; saved in the session with the players."""

    roles: dict[str, str]
    alive: list[str]
    round: int

    def __init__(self, roles: dict[str, str] | None = None) -> None:
        super().__init__()
        self.roles = dict(ROLES if roles is None else roles)
        self.alive = list(self.roles)
        self.round = 0
        for attr in ("roles", "alive", "round"):
            self.register_state(attr)

    def living(self, role: str) -> list[str]:
        return [name for name in self.alive if self.roles[name] == role]

    def winner(self) -> str | None:
        wolves = len(self.living("werewolf"))
        if wolves == 0:
            return "the villagers"
        if wolves >= len(self.alive) - wolves:
            return "the werewolves"
        return None


def vote_model(candidates: list[str]) -> type[BaseModel]:
    """A structured-output model whose target can only be one of *candidates*."""
    return create_model(
        "Vote",
        target=(Literal[tuple(candidates)], Field(description="the player you choose")),
        reason=(str, Field(description="why, in a few words")),
    )


# --- the rule-based players (the FunctionChatModel doubles) ------------------------------------


def _texts(messages: list[dict[str, Any]]) -> tuple[str, str]:
    """The system prompt and everything else the player has seen, as plain text."""
    parts: list[str] = []
    for message in messages[1:]:
        content = message.get("content")
        if isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
        elif content:
            parts.append(str(content))
    return str(messages[0].get("content", "")), "\n".join(parts)


def _choices(tools: list[dict[str, Any]] | None) -> list[str]:
    for tool in tools or []:
        if tool["function"]["name"] == "generate_response":
            return list(tool["function"]["parameters"]["properties"]["target"]["enum"])
    return []


def _seer_claims(heard: str) -> list[str]:
    """Players a seer has publicly named as werewolves."""
    return re.findall(r"I am the seer\. (\w+) is a werewolf", heard)


def _most_suspected(heard: str, me: str, allowed: list[str]) -> str | None:
    named = [n for n in re.findall(r"I suspect (\w+)", heard) if n in allowed and n != me]
    return Counter(named).most_common(1)[0][0] if named else None


def make_player_brain(name: str, seed: object = "") -> Any:
    """The rule-based player *name*: ``fn(messages, tools)`` for a FunctionChatModel. Its
    guesses are random but the same for the same *seed* and the same things heard."""

    def brain(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Any:
        system, heard = _texts(messages)
        role = re.search(r"Your role: (\w+)", system)[1]  # type: ignore[index]
        known = re.search(r"Werewolves: ([\w, ]*)\.", system)[1]  # type: ignore[index]
        wolves = re.findall(r"\w+", known) if role == "werewolf" else []
        alive = re.findall(r"\w+", re.findall(r"Alive players: ([\w, ]+)\.", heard)[-1])
        checks = dict(re.findall(r"(\w+) is (a werewolf|not a werewolf)\. \(private", heard))
        rng = random.Random(f"{seed}{name}/{heard.count('Day ')}")
        choices = _choices(tools)
        if choices:
            target, reason = _choose(name, role, wolves, checks, heard, choices, rng)
            # A random id, as an API gives: tool_call's numbered ids start again in every
            # process, and a memory saved by another process already holds the first ones.
            call_id = f"call_{secrets.token_hex(8)}"
            return reply(
                f"I choose {target}.",
                tool_call("generate_response", {"target": target, "reason": reason}, id=call_id),
            )
        return _speak(name, role, wolves, alive, checks, heard, rng)

    return brain


def _choose(
    me: str,
    role: str,
    wolves: list[str],
    checks: dict[str, str],
    heard: str,
    choices: list[str],
    rng: random.Random,
) -> tuple[str, str]:
    """A vote: wolves hunt the seer (once known) or a villager; the seer checks someone new at
    night and names a wolf it found by day; villagers follow the seer, else the loudest
    suspicion."""
    others = [c for c in choices if c != me]
    if role == "werewolf":
        prey = [c for c in others if c not in wolves]
        claimed = [c for c in prey if f"{c}: I am the seer" in heard]
        return (claimed or prey or others)[0], "the seer must go" if claimed else "easy prey"
    if role == "seer" and "whose role" in heard.splitlines()[-1]:
        unchecked = [c for c in others if c not in checks]
        return (unchecked or others)[0], "not checked yet"
    known = [c for c in others if checks.get(c) == "a werewolf"]
    if known:
        return known[0], "I checked: a werewolf"
    accused = [c for c in _seer_claims(heard) if c in others]
    if accused and role != "werewolf":
        return accused[-1], "the seer named them"
    suspect = _most_suspected(heard, me, others)
    return suspect or rng.choice(others), "most suspected"


def _speak(
    me: str,
    role: str,
    wolves: list[str],
    alive: list[str],
    checks: dict[str, str],
    heard: str,
    rng: random.Random,
) -> str:
    """What to say by day: the seer reveals a wolf it found, wolves deflect, villagers follow
    the seer or voice a guess."""
    others = [a for a in alive if a != me]
    if role == "seer":
        known = [c for c in others if checks.get(c) == "a werewolf"]
        if known:
            return f"I am the seer. {known[0]} is a werewolf. Vote for {known[0]}!"
    accused = [c for c in _seer_claims(heard) if c in others]
    if role == "werewolf":
        claimant = next((a for a in others if f"{a}: I am the seer" in heard), None)
        if claimant:
            return f"{claimant} is lying to save a friend. I suspect {claimant}."
        prey = [a for a in others if a not in wolves]
        return f"I have a bad feeling. I suspect {rng.choice(prey)}."
    if accused:
        return f"I believe the seer. I suspect {accused[-1]}."
    return f"Hard to say. I suspect {rng.choice(others)}."


# --- the game ----------------------------------------------------------------------------------


def build_players(
    state: GameState, make_brain: Callable[[str], Any] = make_player_brain
) -> dict[str, ReActAgent]:
    """Fresh player agents (their memories come from the session), each thinking with
    ``make_brain(name)``."""
    wolves = ", ".join(n for n, r in state.roles.items() if r == "werewolf")
    players = {}
    for name, role in state.roles.items():
        known = wolves if role == "werewolf" else "unknown to you"
        players[name] = ReActAgent(
            name=name,
            sys_prompt=(
                f"You are {name}, playing werewolf. Your role: {role}. Werewolves: {known}. "
                "Speak in one sentence; vote with the generate_response function."
            ),
            model=FunctionChatModel(make_brain(name), model_name=f"rules-{name}"),
            formatter=OpenAIMultiAgentFormatter(),
            max_iters=2,
        )
    return players


async def vote(
    voters: list[ReActAgent], candidates: list[str], moderator: EchoAgent, hub: MsgHub, what: str
) -> str:
    """Collect structured votes at once (nobody hears another's vote before voting)."""
    hub.set_auto_broadcast(False)
    await hub.broadcast(await moderator(f"{what} Alive players: {', '.join(candidates)}."))
    ballots = await fanout_pipeline(voters, structured_model=vote_model(candidates))
    hub.set_auto_broadcast(True)
    targets = [str((ballot.metadata or {})["target"]) for ballot in ballots]
    ranked = Counter(targets).most_common()
    chosen = sorted(n for n, c in ranked if c == ranked[0][1])[0]  # a tie goes by name
    shown = ", ".join(f"{v.name} -> {t}" for v, t in zip(voters, targets, strict=True))
    await hub.broadcast(await moderator(f"Votes: {shown}."))
    return chosen


async def night(state: GameState, players: dict[str, ReActAgent], moderator: EchoAgent) -> str:
    """The werewolves choose a victim, the seer learns one role; returns the victim."""
    wolves = [players[n] for n in state.living("werewolf")]
    opening = await moderator(
        f"Night {state.round}. Werewolves {', '.join(w.name for w in wolves)}, open your eyes "
        "and choose a victim."
    )
    async with MsgHub(wolves, announcement=opening, name="night") as hub:
        victim = await vote(wolves, state.alive, moderator, hub, "Werewolves, vote.")
    for seer_name in state.living("seer"):
        seer = players[seer_name]
        question = await moderator(
            f"Seer {seer_name}, whose role do you want to know? "
            f"Alive players: {', '.join(state.alive)}."
        )
        check = await seer(question, structured_model=vote_model(state.alive))
        target = str((check.metadata or {})["target"])
        verdict = "a werewolf" if state.roles[target] == "werewolf" else "not a werewolf"
        await seer.observe(await moderator(f"{target} is {verdict}. (private, to {seer_name})"))
    state.alive.remove(victim)
    return victim


async def day(
    state: GameState, players: dict[str, ReActAgent], moderator: EchoAgent, dead: str
) -> None:
    """Everyone alive talks in turn, then votes one player out."""
    living = [players[n] for n in state.alive]
    opening = await moderator(
        f"Day {state.round}. {dead} was killed last night. "
        f"Alive players: {', '.join(state.alive)}. Discuss, then vote."
    )
    async with MsgHub(living, announcement=opening, name="day") as hub:
        await sequential_pipeline(living)
        out = await vote(living, state.alive, moderator, hub, "Everyone, vote someone out.")
        state.alive.remove(out)
        await hub.broadcast(await moderator(f"{out} is out. {out} was a {state.roles[out]}."))


async def play_round(session: JSONSession, moderator: EchoAgent) -> str | None:
    """One night and one day, from the state in the session; saved again at the end."""
    state = GameState()
    players = build_players(state)
    await session.load_session_state(SESSION_ID, game=state, **players)
    winner = await night_and_day(state, players, moderator)
    await session.save_session_state(SESSION_ID, game=state, **players)
    return winner


async def night_and_day(
    state: GameState, players: dict[str, ReActAgent], moderator: EchoAgent
) -> str | None:
    """The next round: a night, then a day unless the night decided the game; the winner if
    there is one."""
    state.round += 1
    victim = await night(state, players, moderator)
    winner = state.winner()
    if winner is None:
        await day(state, players, moderator, victim)
        winner = state.winner()
    return winner


async def main() -> None:
    moderator = EchoAgent()
    with tempfile.TemporaryDirectory() as save_dir:
        session = JSONSession(save_dir=save_dir)
        await moderator(
            f"Welcome to werewolf. Players: {', '.join(ROLES)}. Two of you are werewolves, one "
            "is the seer. (The players are rule-based FunctionChatModel doubles: a 135M local "
            "model cannot play this game.)"
        )
        winner = None
        for _ in range(MAX_ROUNDS):
            winner = await play_round(session, moderator)
            saved = json.loads(session.get_save_path(SESSION_ID).read_text(encoding="utf-8"))
            reloaded = GameState()
            await session.load_session_state(SESSION_ID, game=reloaded)
            print(
                f"[session] round {reloaded.round} saved ({len(saved)} modules in "
                f"{session.get_save_path(SESSION_ID).name}); reloaded: round {reloaded.round}, "
                f"alive {', '.join(reloaded.alive)}"
            )
            if winner:
                break
        await moderator(f"The game is over. Roles: {ROLES}.")
        print(f"Winner: {winner or 'nobody (no winner after the last round)'}")


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
