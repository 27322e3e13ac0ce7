"""The knowledge base: what a ReAct agent retrieves from, and the tool that lets a model search.

A :class:`KnowledgeBase` pairs a vector store with an embedding model. Subclasses implement
:meth:`~KnowledgeBase.retrieve` and :meth:`~KnowledgeBase.add_documents`
(:class:`~agentscope_rt.rag.SimpleKnowledge` is the ready-made one);
:meth:`~KnowledgeBase.retrieve_knowledge` wraps ``retrieve`` as a tool function a
:class:`~agentscope_rt.tool.Toolkit` can register, with AgentScope's texts.

A :class:`~agentscope_rt.agent.ReActAgent` given ``knowledge=`` calls ``retrieve`` with the
(optionally rewritten) user query at the start of each reply, sorts the documents of all its
knowledge bases by score, and adds them to memory as one ``<retrieved_knowledge>`` message.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from ..message import TextBlock
from ..tool import ToolResponse
from ._document import Document

if TYPE_CHECKING:
    from ..embedding import EmbeddingModelBase
    from ._store import VDBStoreBase

__all__ = ["KnowledgeBase"]

_NOTHING_FOUND = (
    "No relevant documents found. TRY to reduce the `score_threshold` parameter to get more "
    "results."
)


class KnowledgeBase(ABC):
    """Base class of knowledge bases for retrieval-augmented generation.

    :param embedding_store: the vector store holding the embedded chunks.
    :param embedding_model: the model that embeds queries and documents.

    Both are kept as the attributes of the same names. A knowledge base that searches
    something other than a vector store (a search engine, a database) may leave them ``None``.
    """

    embedding_store: VDBStoreBase | None
    """The vector store holding the embedded chunks."""

    embedding_model: EmbeddingModelBase | None
    """The model that embeds queries and documents."""

    def __init__(
        self,
        embedding_store: VDBStoreBase | None = None,
        embedding_model: EmbeddingModelBase | None = None,
    ) -> None:
        self.embedding_store = embedding_store
        self.embedding_model = embedding_model

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(embedding_store={self.embedding_store!r}, "
            f"embedding_model={self.embedding_model!r})"
        )

    @abstractmethod
    async def retrieve(
        self,
        query: str,
        limit: int = 5,
        score_threshold: float | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Up to *limit* documents relevant to *query*, most relevant first, each with its
        ``score`` (higher is more relevant).

        :param query: what to look for.
        :param limit: the most documents to return.
        :param score_threshold: when given, only documents scoring at least this much.
        :param kwargs: more arguments for the store's search.
        """

    async def add_documents(self, documents: list[Document], **kwargs: Any) -> None:
        """Embed *documents* and store them; a chunk already stored is overwritten, not
        duplicated.

        Optional, as in AgentScope: a knowledge base that only searches (a search engine, a
        database filled elsewhere) need not implement it.

        :param documents: the chunks to add (a reader's output).
        :raises NotImplementedError: unless a subclass implements it.
        """
        raise NotImplementedError(
            f"{type(self).__name__} does not implement add_documents: it only retrieves; "
            "implement add_documents to add documents to it"
        )

    async def retrieve_knowledge(
        self,
        query: str,
        limit: int = 5,
        score_threshold: float | None = None,
        **kwargs: Any,
    ) -> ToolResponse:
        """Retrieve relevant documents from the knowledge base. Note the
        `query` parameter is directly related to the retrieval quality, and
        for the same question, you can try many different queries to get the
        best results. Adjust the `limit` and `score_threshold` parameters
        to get more or fewer results.

        Args:
            query (`str`):
                The query string, which should be specific and concise. For
                example, you should provide the specific name instead of
                "you", "my", "he", "she", etc.
            limit (`int`, defaults to 5):
                The number of relevant documents to retrieve.
            score_threshold (`float | None`, defaults to None):
                A threshold in [0, 1] and only the relevance score above this
                threshold will be returned. Reduce this value to get more
                results.
        """
        # The docstring is the tool's description: AgentScope's text and line breaks, so
        # the model reads what it read there (with the real defaults).
        docs = await self.retrieve(
            query=query, limit=limit, score_threshold=score_threshold, **kwargs
        )
        if not docs:
            return ToolResponse(content=[TextBlock(text=_NOTHING_FOUND)])
        blocks: list[Any] = []
        for doc in docs:
            content = doc.metadata.content
            if isinstance(content, TextBlock):
                blocks.append(TextBlock(text=f"Score: {doc.score}, Content: {content.text}"))
            else:
                # An image or video chunk is shown to the model as itself, after its score.
                blocks.append(TextBlock(text=f"Score: {doc.score}, Content: "))
                blocks.append(content)
        return ToolResponse(content=blocks)
