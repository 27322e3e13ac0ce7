"""The knowledge-base interface the ReAct agent retrieves from.

This release defines the interface only; embedding stores and ready-made knowledge bases come
in a later release. A :class:`~agentscope_rt.agent.ReActAgent` given ``knowledge=`` calls
:meth:`KnowledgeBase.retrieve` with the (optionally rewritten) user query at the start of each
reply, sorts all documents by score, and adds them to memory as one
``<retrieved_knowledge>`` message.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ._document import Document

__all__ = ["KnowledgeBase"]


class KnowledgeBase(ABC):
    """Base class of knowledge bases for retrieval-augmented generation.

    :param embedding_store: the vector store holding the embedded chunks (its interface is
        defined by the release that provides stores; this base class only keeps it).
    :param embedding_model: the model that embeds queries and documents.
    """

    def __init__(self, embedding_store: Any = None, embedding_model: Any = None) -> None:
        self.embedding_store = embedding_store
        self.embedding_model = embedding_model

    @abstractmethod
    async def retrieve(
        self,
        query: str,
        limit: int = 5,
        score_threshold: float | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Up to *limit* documents relevant to *query*, each with its ``score``.

        :param score_threshold: when given, only documents scoring above it are returned.
        """

    @abstractmethod
    async def add_documents(self, documents: list[Document], **kwargs: Any) -> None:
        """Embed and store *documents*."""
