"""What one ReAct reply tracks while it runs, shared by the agent and its durable replies."""

from __future__ import annotations

from .._schema import StructuredModel
from ..message import Msg
from ..model import ChatUsage

__all__ = ["NOT_ACTING", "ReplyState"]

NOT_ACTING: set[str] = set()
"""``ReplyState.recorded_ids`` outside an acting step; never added to."""


class ReplyState:
    """The state of the ReAct agent's current (or latest) reply.

    One object per agent, built with it and never replaced, so that :class:`DurableReplies`
    can hold it: a plain slotted object because the agent itself is a StateModule, whose
    attribute assignment is slower and would be paid per step. Besides the agent, only the
    durable replies read :attr:`deferred` and set :attr:`pending`.
    """

    __slots__ = (
        "after_load",
        "deferred",
        "pending",
        "recorded_ids",
        "recorded_reasoning",
        "stop_requested",
        "structured_model",
        "usage",
    )

    def __init__(self) -> None:
        self.usage: ChatUsage | None = None
        self.stop_requested = False
        self.structured_model: StructuredModel | None = None
        # The reasoning Msg whose tool calls a reasoning-stop left unexecuted (kept across
        # replies until the next one); the loop runs them before reasoning again.
        self.pending: Msg | None = None
        # The reasoning Msg as recorded in memory (to detect post_reasoning rewrites).
        self.recorded_reasoning: Msg | None = None
        # While parallel calls run, results are collected here and recorded in call order.
        self.deferred: dict[str, Msg] | None = None
        # The calls of the acting step in progress already recorded (NOT_ACTING between steps:
        # one shared empty set instead of a set per agent).
        self.recorded_ids: set[str] = NOT_ACTING
        # The agent's state was loaded and its memory not yet checked for unanswered calls.
        self.after_load = False
