"""Agents that ``bench_scale.py`` builds on an agent host (importable there by module name)."""

from __future__ import annotations

from typing import Any

from agentscope_rt.agent import AgentBase
from agentscope_rt.message import Msg


class Talker(AgentBase):
    """Replies with a fixed short message; observes nothing."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.set_console_output_enabled(False)

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        return Msg(self.name, "ok", "assistant")

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        return None


def make_talker(name: str) -> Talker:
    return Talker(name)
