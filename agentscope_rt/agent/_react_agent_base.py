"""ReActAgentBase: an agent that alternates reasoning and acting, with hooks on both."""

from __future__ import annotations

import abc
from typing import Any, ClassVar

from .. import _intercept
from ._agent_base import AgentBase

__all__ = ["ReActAgentBase"]


class ReActAgentBase(AgentBase):
    """Base class of reason-act agents.

    Adds the abstract steps ``async _reasoning(...)`` and ``async _acting(...)`` and the hook
    types ``pre_reasoning``, ``post_reasoning``, ``pre_acting`` and ``post_acting`` around
    them, with the same signatures, ordering and copying rules as the reply hooks.
    """

    supported_hook_types: ClassVar[tuple[str, ...]] = (
        *AgentBase.supported_hook_types,
        "pre_reasoning",
        "post_reasoning",
        "pre_acting",
        "post_acting",
    )

    @abc.abstractmethod
    async def _reasoning(self, *args: Any, **kwargs: Any) -> Any:
        """One reasoning step (usually a model call); its route runs the reasoning hooks."""

    @abc.abstractmethod
    async def _acting(self, *args: Any, **kwargs: Any) -> Any:
        """One acting step (usually a tool call); its route runs the acting hooks."""


_intercept.declare(ReActAgentBase, "_reasoning", "reasoning")
_intercept.declare(ReActAgentBase, "_acting", "acting")
