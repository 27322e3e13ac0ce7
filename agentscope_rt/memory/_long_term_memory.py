"""The long-term memory interface the ReAct agent talks to.

This release defines the interface only; concrete long-term memories (vector-store and
service backed) come in a later release. Implement it to plug your own store into
:class:`~agentscope_rt.agent.ReActAgent`:

* ``static_control`` (``long_term_memory_mode="static_control"`` or ``"both"``): the agent
  calls :meth:`LongTermMemoryBase.retrieve` with the input at the start of each reply (a
  non-empty answer is added to memory as a ``<long_term_memory>`` message) and
  :meth:`LongTermMemoryBase.record` with the uncompressed memory at the end;
* ``agent_control`` (``"agent_control"`` or ``"both"``): the methods
  :meth:`~LongTermMemoryBase.record_to_memory` and
  :meth:`~LongTermMemoryBase.retrieve_from_memory` are registered as tools the model may call.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ..message import Msg
from ..module import StateModule
from ..tool import ToolResponse

__all__ = ["LongTermMemoryBase"]


class LongTermMemoryBase(StateModule, ABC):
    """Base class of long-term memories (a time-ordered store that outlives a conversation).

    :meth:`record` and :meth:`retrieve` are for the agent's static control; the two tool
    methods are what the model calls under agent control. Their docstrings become the tool
    descriptions, so keep the ``Args`` sections when overriding.
    """

    @abstractmethod
    async def record(self, msgs: list[Msg | None], **kwargs: Any) -> Any:
        """Record what is worth keeping from *msgs* (``None`` items are to be skipped)."""

    @abstractmethod
    async def retrieve(self, msg: Msg | list[Msg] | None, limit: int = 5, **kwargs: Any) -> str:
        """Text recalled for *msg*, or ``""`` when nothing is relevant."""

    @abstractmethod
    async def record_to_memory(
        self, thinking: str, content: list[str], **kwargs: Any
    ) -> ToolResponse:
        """Use this function to record important information that you may need later. The
        target content should be specific and concise, e.g. who, when, where, do what, why,
        how, etc.

        Args:
            thinking (`str`):
                Your thinking and reasoning about what to record.
            content (`list[str]`):
                The content to remember, which is a list of strings.
        """

    @abstractmethod
    async def retrieve_from_memory(
        self, keywords: list[str], limit: int = 5, **kwargs: Any
    ) -> ToolResponse:
        """Retrieve the memory based on the given keywords.

        Args:
            keywords (`list[str]`):
                The keywords to search for in the memory, which should be specific and
                concise, e.g. the person's name, the date, the location, etc.
            limit (`int`, optional):
                The maximum number of memories to retrieve per keyword. Defaults to 5.
        """
