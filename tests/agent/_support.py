"""Small agents used by the agent tests."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any

import anyio

from agentscope_rt.agent import AgentBase
from agentscope_rt.message import Msg


class EchoAgent(AgentBase):
    """Replies with the text it was given (plus *suffix*), after *delay* seconds."""

    def __init__(self, name: str = "echo", delay: float = 0.0) -> None:
        super().__init__()
        self.name = name
        self.delay = delay
        self.received: list[Any] = []
        self.observed: list[Msg | list[Msg] | None] = []
        self.interrupt_calls = 0
        self.register_state("name")

    async def reply(self, msg: Msg | None = None, suffix: str = "") -> Msg:
        self.received.append(msg)
        if self.delay:
            await anyio.sleep(self.delay)
        text = msg.get_text_content() if isinstance(msg, Msg) else ""
        return Msg(self.name, f"{text}{suffix}", "assistant")

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        self.observed.append(msg)

    async def handle_interrupt(self, *args: Any, **kwargs: Any) -> Msg:
        self.interrupt_calls += 1
        return Msg(self.name, "interrupted", "assistant")


class FakeHubLink:
    """A HubLink over a fixed member list; delivers to recipients concurrently and records
    every delivery."""

    def __init__(self, members: Sequence[AgentBase], delay: float = 0.0) -> None:
        self.members = list(members)
        self.delay = delay
        self.deliveries: list[tuple[AgentBase, Msg, list[AgentBase]]] = []

    def recipients(self, sender: AgentBase) -> Sequence[AgentBase]:
        return [agent for agent in self.members if agent is not sender]

    async def deliver(self, sender: AgentBase, msg: Msg, recipients: Sequence[AgentBase]) -> None:
        self.deliveries.append((sender, msg, list(recipients)))

        async def one(agent: AgentBase) -> None:
            if self.delay:
                await anyio.sleep(self.delay)
            await agent.observe(msg)

        async with anyio.create_task_group() as tg:
            for agent in recipients:
                tg.start_soon(one, agent)

    def publish(self, sender: AgentBase, msg: Msg) -> Awaitable[None]:
        return self.deliver(sender, msg, self.recipients(sender))
