"""MsgHubs inside a trio program: rooms running side by side in a nursery.

A plain trio application (``trio.run``, a nursery, ``trio.move_on_after``) runs three chat
rooms of ReAct agents at once, each an ``async with MsgHub(...)`` in its own nursery task. One
room is slow (its members' ``pre_observe`` hook sleeps 10 s with ``trio.sleep``: trio code in
a hook) and is cancelled from outside by a trio timeout: its delivery tasks stop at once, its
agents are unlinked, and the other rooms are unaffected. An agent sitting in two rooms at the
same time is heard in both, once per listener. The models are ``FunctionChatModel`` doubles
(offline).

Run: ``python examples/23_hub_in_trio_nursery.py`` (trio only: the point is a trio program;
``22_hub_in_asyncio_app.py`` is its asyncio counterpart).

What to look for: the members print their greetings as they speak, ``sam`` twice (once per
room). The slow room prints ``zed``'s greeting, is cancelled after 0.1 s and says ``zoe`` heard
nothing; ``zed`` then speaks once more, at once, because nobody is linked to it any more. The
last lines list what each member heard: sam's two greetings reach ``gus`` and the kitchen
members alike, and nobody heard any greeting twice.
"""

from __future__ import annotations

from typing import Any

import trio

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import FunctionChatModel
from agentscope_rt.pipeline import MsgHub


def member(name: str, observe_seconds: float = 0.0) -> ReActAgent:
    """A ReAct agent that greets; observing takes *observe_seconds*."""

    def greet(messages: list[dict[str, Any]], tools: Any) -> str:
        return f"hello from {name}"

    agent = ReActAgent(
        name=name,
        sys_prompt=f"You are {name}.",
        model=FunctionChatModel(greet),
        formatter=OpenAIChatFormatter(),
    )
    if observe_seconds:

        async def slow_to_listen(self: ReActAgent, kwargs: dict[str, Any]) -> None:
            await trio.sleep(observe_seconds)  # trio code inside an agent's hook works too

        agent.register_instance_hook("pre_observe", "slow_to_listen", slow_to_listen)
    return agent


async def heard(agent: ReActAgent) -> list[Msg]:
    """The greetings *agent* heard from the others."""
    return [m for m in await agent.memory.get_memory() if m.name != agent.name]


async def room(name: str, members: list[ReActAgent], ready: trio.Event, other: trio.Event) -> None:
    async with MsgHub(members, name=name):
        ready.set()
        await other.wait()  # both rooms are open before anyone speaks
        for member in members:
            await member()
        await trio.sleep(0.05)  # the room stays open a little
    print(f"room {name!r} closed normally")


async def slow_room(members: list[ReActAgent]) -> None:
    with trio.move_on_after(0.1) as scope:
        async with MsgHub(members, name="slow"):
            for member in members:
                await member()  # each observer takes 10 s: the timeout wins
    # The hub unlinked its agents on exit: a reply now reaches nobody, so it returns at once.
    with trio.fail_after(5):
        await members[0]()
    print(
        f"room 'slow' cancelled from outside: {scope.cancelled_caught}; "
        f"{members[1].name} heard {len(await heard(members[1]))} replies"
    )


async def main() -> None:
    shared = member("sam")  # in the kitchen and the garden at the same time
    kitchen = [shared, member("kim"), member("kai")]
    garden = [shared, member("gus")]
    sleepy = [member("zed", observe_seconds=10), member("zoe", observe_seconds=10)]
    kitchen_ready, garden_ready = trio.Event(), trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(room, "kitchen", kitchen, kitchen_ready, garden_ready)
        nursery.start_soon(room, "garden", garden, garden_ready, kitchen_ready)
        nursery.start_soon(slow_room, sleepy)
    for agent in [*kitchen, *garden[1:]]:
        print(f"{agent.name} heard {sorted(m.name for m in await heard(agent))}")
    # sam spoke twice (once per room), each time while in both rooms: every reply reached
    # both rooms, and no listener heard any reply twice.
    for agent in [*kitchen, *garden]:
        ids = [m.id for m in await heard(agent)]
        assert len(set(ids)) == len(ids)
    assert [m.name for m in await heard(garden[1])].count("sam") == 2
    print("every listener heard each reply exactly once")


if __name__ == "__main__":
    trio.run(main)
