"""Agents for the pipeline tests: real AgentBase subclasses that record what they hear."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from agentscope_rt.agent import AgentBase
from agentscope_rt.message import Msg

from .._timing import InFlight


class Recorder(AgentBase):
    """Replies with a numbered message; records every message it observes.

    :param observe_delay: seconds each observe sleeps before recording (a slow observer).
    :param fail_on: observe raises ``ObserverBroke`` when it receives a message with this text.

    Setting ``in_flight`` counts each observe in it (to see how many agents observe at once).
    """

    def __init__(
        self,
        name: str,
        observe_delay: float = 0.0,
        fail_on: str | None = None,
        reply_delay: float = 0.0,
    ) -> None:
        super().__init__()
        self.name = name
        self.observe_delay = observe_delay
        self.fail_on = fail_on
        self.reply_delay = reply_delay
        self.heard: list[Msg] = []
        self.spoken = 0
        self.observing = 0
        self.max_observing = 0
        self.on_observed: Callable[[Recorder, Msg], None] | None = None
        self.in_flight: InFlight | None = None

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        self.spoken += 1
        if self.reply_delay:
            await anyio.sleep(self.reply_delay)
        return Msg(self.name, f"{self.name}#{self.spoken}", "assistant")

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        if self.in_flight is None:
            await self._observe(msg)
        else:
            async with self.in_flight.call():
                await self._observe(msg)

    async def _observe(self, msg: Msg | list[Msg] | None) -> None:
        self.observing += 1
        self.max_observing = max(self.max_observing, self.observing)
        try:
            if self.observe_delay:
                await anyio.sleep(self.observe_delay)
            items = msg if isinstance(msg, list) else [msg]
            for item in items:
                if item is None:
                    continue
                if self.fail_on is not None and item.content == self.fail_on:
                    raise ObserverBroke(f"{self.name} cannot hear {item.content}")
                self.heard.append(item)
                if self.on_observed is not None:
                    self.on_observed(self, item)
        finally:
            self.observing -= 1

    def heard_texts(self) -> list[str]:
        return [str(m.content) for m in self.heard]


class ObserverBroke(Exception):
    """Raised by a Recorder's observe on purpose."""
