"""Why an agent's reply ended: :class:`GenerateReason`, read from ``agent.generate_reason``.

The reason is kept on the agent (:attr:`AgentBase.generate_reason`), not in the reply's
``metadata``: replies carry exactly the metadata AgentScope's do (none, the structured output,
or ``{"_is_interrupted": True}``), so programs that print or save them see the same data.
"""

from __future__ import annotations

import enum

__all__ = ["GenerateReason"]


class GenerateReason(enum.StrEnum):
    """Why a reply ended. Members are strings, so they compare equal to their values and
    serialise to JSON as plain strings (``agent.generate_reason == "interrupted"``).
    """

    MODEL_STOP = "model_stop"
    """The model finished with a plain answer (no further tool calls)."""

    MAX_ITERATIONS = "max_iterations"
    """The reasoning-acting loop reached its iteration limit."""

    INTERRUPTED = "interrupted"
    """The reply was interrupted (:meth:`AgentBase.interrupt`); the Msg is the agent's
    :meth:`~AgentBase.handle_interrupt` answer."""

    TOOL_SUSPENDED = "tool_suspended"
    """A tool asked to suspend the loop (e.g. to wait for an external result)."""

    REASONING_STOP_REQUESTED = "reasoning_stop_requested"
    """A reasoning hook asked the loop to stop after reasoning."""

    ACTING_STOP_REQUESTED = "acting_stop_requested"
    """An acting hook asked the loop to stop after acting."""
