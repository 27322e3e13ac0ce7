"""What :class:`~agentscope_rt.agent.ReActAgent` needs of the plan notebook and knowledge
bases it takes, as protocols.

The agent sits in the core layer; ``PlanNotebook`` (``agentscope_rt.plan``) and
``KnowledgeBase`` (``agentscope_rt.rag``) sit above it and fit these protocols, so the agent
checks its arguments against them without importing either package. Any object with the
same methods works as well.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ..message import Msg

__all__ = ["KnowledgeLike", "PlanNotebookLike"]


@runtime_checkable
class PlanNotebookLike(Protocol):
    """What the agent uses of a :class:`~agentscope_rt.plan.PlanNotebook`: its tools (and
    their group's description) and the hint for each reasoning step."""

    description: str

    def list_tools(self) -> list[Callable[..., Any]]: ...

    async def get_current_hint(self) -> Msg | None: ...


@runtime_checkable
class KnowledgeLike(Protocol):
    """What the agent uses of a :class:`~agentscope_rt.rag.KnowledgeBase`: ``retrieve``,
    returning documents with a ``score`` and ``metadata.content`` (a content block)."""

    async def retrieve(
        self,
        query: str,
        limit: int = 5,
        score_threshold: float | None = None,
        **kwargs: Any,
    ) -> list[Any]: ...
