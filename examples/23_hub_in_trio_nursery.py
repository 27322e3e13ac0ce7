"""MsgHubs inside a trio program: rooms running side by side in a nursery.

A plain trio application (``trio.run``, a nursery, ``trio.move_on_after``) runs three chat
rooms at once, each an ``async with MsgHub(...)`` in its own nursery task. One room is slow
and is cancelled from outside by a trio timeout: its delivery tasks stop at once, its agents
are unlinked, and the other rooms are unaffected. An agent sitting in two rooms at the same
time is heard in both, once per listener.

Run with ``python examples/23_hub_in_trio_nursery.py``.
"""

from __future__ import annotations

from typing import Any

import trio

from agentscope_rt.agent import AgentBase
from agentscope_rt.message import Msg
from agentscope_rt.pipeline import MsgHub


class Member(AgentBase):
    def __init__(self, name: str, observe_seconds: float = 0.0) -> None:
        super().__init__()
        self.name = name
        self.observe_seconds = observe_seconds
        self.heard: list[str] = []
        self.heard_ids: list[str] = []
        self.set_console_output_enabled(False)

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        return Msg(self.name, f"hello from {self.name}", "assistant")

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        await trio.sleep(self.observe_seconds)  # trio code inside an agent works too
        if isinstance(msg, Msg):
            self.heard.append(msg.name)
            self.heard_ids.append(msg.id)


async def room(name: str, members: list[Member], ready: trio.Event, other: trio.Event) -> None:
    async with MsgHub(members, name=name):
        ready.set()
        await other.wait()  # both rooms are open before anyone speaks
        for member in members:
            await member()
        await trio.sleep(0.05)  # the room stays open a little
    print(f"room {name!r} closed normally")


async def slow_room(members: list[Member]) -> None:
    with trio.move_on_after(0.1) as scope:
        async with MsgHub(members, name="slow"):
            for member in members:
                await member()  # each observer takes 10 s: the timeout wins
    # The hub unlinked its agents on exit: a reply now reaches nobody, so it returns at once.
    with trio.fail_after(5):
        await members[0]()
    print(
        f"room 'slow' cancelled from outside: {scope.cancelled_caught}; "
        f"{members[1].name} heard {len(members[1].heard)} replies"
    )


async def main() -> None:
    shared = Member("sam")  # in the kitchen and the garden at the same time
    kitchen = [shared, Member("kim"), Member("kai")]
    garden = [shared, Member("gus")]
    sleepy = [Member("zed", observe_seconds=10), Member("zoe", observe_seconds=10)]
    kitchen_ready, garden_ready = trio.Event(), trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(room, "kitchen", kitchen, kitchen_ready, garden_ready)
        nursery.start_soon(room, "garden", garden, garden_ready, kitchen_ready)
        nursery.start_soon(slow_room, sleepy)
    for member in [*kitchen, *garden[1:]]:
        print(f"{member.name} heard {sorted(member.heard)}")
    # sam spoke twice (once per room), each time while in both rooms: every reply reached
    # both rooms, and no listener heard any reply twice.
    assert all(len(set(m.heard_ids)) == len(m.heard_ids) for m in [*kitchen, *garden])
    assert garden[1].heard.count("sam") == 2
    print("every listener heard each reply exactly once")


if __name__ == "__main__":
    trio.run(main)
