"""What the ReAct agent's step helpers (retrieval, the summary, speech, compression) use of the
agent: :class:`ReActHost`, which :class:`ReActAgent` satisfies.

The helpers are typed against this protocol rather than the agent class, so that the surface
they rely on is written down in one place and they need nothing else of the agent.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Protocol

from ..formatter import FormatterBase
from ..memory import LongTermMemoryBase, MemoryBase
from ..message import AudioBlock, Msg
from ..model import ChatModelBase, ChatResponse, ChatUsage
from ..tts import SpeechPlayer
from ._extensions import KnowledgeLike

__all__ = ["ReActHost"]


class ReActHost(Protocol):
    """The agent as the step helpers see it: its public configuration, :meth:`print`, and the
    protected methods below, which :class:`ReActAgent` documents and a subclass may override.
    """

    name: str
    model: ChatModelBase
    formatter: FormatterBase
    memory: MemoryBase
    long_term_memory: LongTermMemoryBase | None
    knowledge: list[KnowledgeLike]
    enable_rewrite_query: bool
    print_hint_msg: bool
    max_iters: int
    speech_player: SpeechPlayer | None

    async def print(
        self, msg: Msg, last: bool = True, speech: AudioBlock | list[AudioBlock] | None = None
    ) -> None:
        """Show *msg* (see :meth:`AgentBase.print`)."""
        ...

    def _system_msg(self) -> Msg:
        """The system message, first in every prompt."""
        ...

    async def _prompt_with(self, request: Msg) -> list[dict[str, Any]]:
        """The payload of a side request: system message, memory, then *request*."""
        ...

    def _add_usage(self, usage: ChatUsage | None) -> None:
        """Add a model call's usage to the reply's."""
        ...

    async def _receive(
        self, res: ChatResponse | AsyncGenerator[ChatResponse, None], msg: Msg
    ) -> None:
        """Fill *msg* from a model response, printing (and speaking) it as it arrives."""
        ...

    async def _rewrite_query(self, query: str) -> str:
        """A more specific knowledge query (AgentScope's overridable method)."""
        ...
