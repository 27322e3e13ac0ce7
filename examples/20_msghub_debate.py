"""A round-robin debate in a MsgHub: every speaker hears everyone else before answering.

Three ReAct debaters (each on a function model that answers from what it has heard) sit in one
hub. The moderator's announcement is heard by all before anyone speaks; then they take turns
for two rounds (``sequential_pipeline`` inside the hub), a judge joins mid-way with
``hub.add``, a debater leaves with ``hub.delete`` and from then on neither hears nor is
heard. Everything runs offline, on asyncio or trio.

Run: ``python examples/20_msghub_debate.py`` (asyncio) or
``python examples/20_msghub_debate.py trio``.

What to look for: each debater's line names the speakers it has heard so far (nobody at the
very start) and answers the latest one; Cyd's last line, spoken after leaving the hub, reaches
nobody; the judge, who joined in round 2, names all three. The memory counts at the end differ
by who was in the hub when, and Cyd never heard the verdict.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIMultiAgentFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import FunctionChatModel
from agentscope_rt.pipeline import MsgHub, sequential_pipeline

STANCES = {
    "Ada": "for",
    "Brook": "against",
    "Cyd": "undecided about",
}
MOTION = "cities should replace short car trips with bicycles"


def debater_model(name: str) -> FunctionChatModel:
    """A model that answers from the conversation it is given: it counts the other speakers it
    has heard and answers the last one by name."""

    def answer(messages: list[dict[str, Any]], tools: Any) -> str:
        transcript = " ".join(str(m.get("content", "")) for m in messages)
        heard = [other for other in STANCES if other != name and f"{other}:" in transcript]
        stance = STANCES[name]
        if not heard:
            return f"I open the debate: I am {stance} the motion."
        last = max(heard, key=lambda other: transcript.rfind(f"{other}:"))
        return (
            f"Having heard {', '.join(sorted(heard))}, I answer {last}: "
            f"I remain {stance} the motion."
        )

    return FunctionChatModel(answer)


def judge_model(messages: list[dict[str, Any]], tools: Any) -> str:
    transcript = " ".join(str(m.get("content", "")) for m in messages)
    speakers = sorted(name for name in STANCES if f"{name}:" in transcript)
    return f"I heard {', '.join(speakers)}. The motion is carried by the better argument: Ada's."


def make_agent(name: str, model: FunctionChatModel, role: str) -> ReActAgent:
    return ReActAgent(
        name=name,
        sys_prompt=f"You are {name}, {role}. Keep it short.",
        model=model,
        formatter=OpenAIMultiAgentFormatter(),
    )


async def main() -> None:
    debaters = [make_agent(n, debater_model(n), "a debater") for n in STANCES]
    judge = make_agent("Judge", FunctionChatModel(judge_model), "the judge")
    announcement = Msg("Moderator", f"Motion: {MOTION}. Speak in turn.", "system")

    async with MsgHub(debaters, announcement=announcement, name="debate") as hub:
        print(f"-- round 1 ({len(hub.participants)} participants)")
        await sequential_pipeline(debaters)
        hub.add(judge)
        print("-- round 2 (the judge listens)")
        await sequential_pipeline(debaters)
        hub.delete(debaters[2])
        print("-- Cyd leaves; the others close")
        await sequential_pipeline(debaters[:2])
        await debaters[2]()  # no longer in the hub: nobody hears this
        print("-- verdict")
        await judge()

    for agent in [*debaters, judge]:
        memory = await agent.memory.get_memory()
        print(f"{agent.name:6} remembers {len(memory):2} messages")
    cyd_memory = await debaters[2].memory.get_memory()
    assert not any(m.name == "Judge" for m in cyd_memory), "Cyd left before the verdict"
    print("Cyd did not hear the verdict; nobody heard Cyd after leaving.")


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
