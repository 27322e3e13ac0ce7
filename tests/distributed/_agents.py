"""Agents the tests build on agent hosts (module-level, so Ray can send their factories)."""

from __future__ import annotations

import threading
from typing import Any

import anyio

from agentscope_rt.agent import AgentBase
from agentscope_rt.message import Msg


class Echo(AgentBase):
    """Replies with what it heard last and how many messages it observed; saves both."""

    def __init__(self, name: str, slow: bool = False) -> None:
        super().__init__()
        self.name = name
        self.slow = slow
        self.heard: list[str] = []
        self.register_state("name")
        self.register_state("heard")

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        if self.slow:
            await anyio.sleep(3600)
        if kwargs.get("fail"):
            raise ValueError(f"{self.name} was asked to fail")
        text = msg.get_text_content() if isinstance(msg, Msg) else None
        return Msg(
            self.name,
            f"{self.name}: {text} (heard {len(self.heard)})",
            "assistant",
            metadata={"kwargs": kwargs} if kwargs else None,
        )

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        for one in [msg] if isinstance(msg, Msg) else msg or []:
            self.heard.append(one.get_text_content() or "")

    async def handle_interrupt(self, *args: Any, **kwargs: Any) -> Msg:
        return Msg(self.name, f"{self.name} was interrupted", "assistant")


def make_echo(name: str, slow: bool = False) -> Echo:
    return Echo(name, slow)


def make_nothing(name: str) -> Any:
    return {"name": name}


class UnpicklableFactory:
    """A factory holding a lock: it cannot be sent to a host."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def __call__(self, name: str) -> Echo:
        return Echo(name)
