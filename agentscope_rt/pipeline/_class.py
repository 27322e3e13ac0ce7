"""Reusable pipeline objects around :mod:`._functional`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..message import Msg
from ._functional import _check_agents, fanout_pipeline, sequential_pipeline

if TYPE_CHECKING:
    from ..agent import AgentBase

__all__ = ["FanoutPipeline", "SequentialPipeline"]


class SequentialPipeline:
    """A reusable :func:`sequential_pipeline` over a fixed list of agents.

    :param agents: the agents, in order.
    :raises TypeError: when *agents* is not a sequence of agents.
    """

    def __init__(self, agents: Sequence[AgentBase]) -> None:
        self.agents = _check_agents(agents, "SequentialPipeline")

    async def __call__(self, msg: Msg | list[Msg] | None = None) -> Msg | list[Msg] | None:
        """Run the agents one after another on *msg*; see :func:`sequential_pipeline`."""
        return await sequential_pipeline(self.agents, msg)


class FanoutPipeline:
    """A reusable :func:`fanout_pipeline` over a fixed list of agents.

    :param agents: the agents.
    :param enable_gather: run them concurrently (otherwise one after another).
    :param max_concurrency: at most this many reply at once (no limit when ``None``).
    :raises TypeError: when *agents* is not a sequence of agents.
    """

    def __init__(
        self,
        agents: Sequence[AgentBase],
        enable_gather: bool = True,
        max_concurrency: int | None = None,
    ) -> None:
        self.agents = _check_agents(agents, "FanoutPipeline")
        self.enable_gather = enable_gather
        self.max_concurrency = max_concurrency

    async def __call__(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> list[Msg]:
        """Give *msg* to every agent and return their replies in agent order; see
        :func:`fanout_pipeline` (same errors)."""
        return await fanout_pipeline(
            self.agents,
            msg,
            enable_gather=self.enable_gather,
            max_concurrency=self.max_concurrency,
            **kwargs,
        )
