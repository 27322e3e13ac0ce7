"""The ready-made knowledge base: one embedding model, one vector store.

``add_documents`` checks every chunk's modality first (so a bad batch stores nothing), embeds
all contents in one call to the model, and hands the chunks to the store in slices of
:attr:`VDBStoreBase.add_batch` chunks (:data:`STORE_BATCH` by default; a
:class:`LocalVectorStore`: its own slice, 8 to 128 chunks by their size): each slice is one trip
to the store's worker thread, and the event loop runs other tasks between slices instead of
waiting for the whole corpus. Stores upsert by chunk id (derived from content), so adding the
same documents again, or again after a cancelled add, overwrites them instead of duplicating
them.
"""

from __future__ import annotations

from typing import Any

import anyio.lowlevel

from ..embedding import EmbeddingModelBase
from ._document import DocMetadata, Document
from ._knowledge_base import KnowledgeBase
from ._store import LocalVectorStore, VDBStoreBase
from ._store._store_base import DEFAULT_ADD_BATCH, SyncClientStoreBase

__all__ = ["STORE_BATCH", "SimpleKnowledge"]

STORE_BATCH = DEFAULT_ADD_BATCH
"""Chunks handed to a store per call by default (:attr:`VDBStoreBase.add_batch`). Each slice is one
trip to the store's worker thread, which builds the slice's rows and writes them (about 1 ms for
32 chunks with Qdrant's embedded engine). While that thread holds the interpreter, a task of the
event loop that wakes up waits for it, so the slice bounds how late other tasks run; a smaller
slice pays a thread round trip more often (about 0.06 ms each)."""


PREPARE_SLICE = 256
"""Chunks checked (and their contents converted for the model, their embeddings set) between
two checkpoints of ``add_documents``: a few microseconds each, so about a millisecond before
other tasks of the event loop run (10,000 chunks at once held it ~40 ms)."""


def _package_store(store: VDBStoreBase) -> bool:
    """Whether *store* is one of this package's stores, which take documents with blocks."""
    return isinstance(store, SyncClientStoreBase)


def _agentscope_document(doc: Document) -> Document:
    """A copy of *doc* as AgentScope has it: its ``metadata.content`` is the block's own JSON
    dict (AgentScope's blocks are dicts), so it can be ``json.dumps``-ed or put in a database
    row as it is."""
    meta = doc.metadata
    copy = object.__new__(DocMetadata)
    # Set past DocMetadata's converter, which would build the dict back into a block.
    object.__setattr__(copy, "content", meta.content.to_dict())
    object.__setattr__(copy, "doc_id", meta.doc_id)
    object.__setattr__(copy, "chunk_id", meta.chunk_id)
    object.__setattr__(copy, "total_chunks", meta.total_chunks)
    return Document(metadata=copy, id=doc.id, embedding=doc.embedding, score=doc.score)


class SimpleKnowledge(KnowledgeBase):
    """A knowledge base over one vector store, embedding with one model.

    :param embedding_store: where the chunks and their vectors are kept (a
        :class:`~agentscope_rt.rag.VDBStoreBase`); when ``None``, a new in-memory
        :class:`~agentscope_rt.rag.LocalVectorStore` of the model's dimensions (needs the
        ``vector`` extra; pass a ``LocalVectorStore`` on a folder to keep the chunks).
    :param embedding_model: embeds documents and queries (an
        :class:`~agentscope_rt.embedding.EmbeddingModelBase`); required, as in AgentScope.
    :raises TypeError: if either is of the wrong kind (including the two swapped), or the
        model is missing.
    :raises ImportError: when the default store is needed and the ``vector`` extra is not
        installed.
    """

    embedding_store: VDBStoreBase
    embedding_model: EmbeddingModelBase

    def __init__(
        self,
        embedding_store: VDBStoreBase | None = None,
        embedding_model: EmbeddingModelBase | None = None,
    ) -> None:
        if isinstance(embedding_store, EmbeddingModelBase) and isinstance(
            embedding_model, VDBStoreBase
        ):
            raise TypeError(
                "SimpleKnowledge takes (embedding_store, embedding_model), in that order: "
                "pass them as keywords, SimpleKnowledge(embedding_store=..., embedding_model=...)"
            )
        if not isinstance(embedding_model, EmbeddingModelBase):
            if embedding_model is None and isinstance(embedding_store, EmbeddingModelBase):
                raise TypeError(
                    "SimpleKnowledge's first argument is the store: pass the model as "
                    "SimpleKnowledge(embedding_model=...) to use the default store"
                )
            raise TypeError(
                "embedding_model must be an EmbeddingModelBase (LocalTextEmbedding, "
                f"OpenAITextEmbedding, ...), not {type(embedding_model).__name__}"
            )
        if embedding_store is None:
            embedding_store = LocalVectorStore(":memory:", "knowledge", embedding_model.dimensions)
        if not isinstance(embedding_store, VDBStoreBase):
            raise TypeError(
                "embedding_store must be a VDBStoreBase (LocalVectorStore, QdrantStore, "
                f"MilvusLiteStore, ...), not {type(embedding_store).__name__}"
            )
        super().__init__(embedding_store, embedding_model)

    async def retrieve(
        self,
        query: str,
        limit: int = 5,
        score_threshold: float | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """The up to *limit* chunks nearest *query*, most relevant first, each with its
        ``score`` (higher is more relevant).

        :param query: the text to look for; it is embedded with the knowledge base's model.
        :param limit: the most chunks to return.
        :param score_threshold: only chunks scoring at least this much.
        :param kwargs: passed to the store's ``search`` (``filter`` for the default store, a
            Qdrant ``query_filter``, ...).
        :raises ValueError: for a query that is not a non-empty string, or a non-positive
            *limit*.
        """
        if not isinstance(query, str) or not query.strip():
            raise ValueError(f"query must be a non-empty string, got {query!r}")
        # AgentScope's text block, which is a dict: see add_documents.
        query_block: list[Any] = [{"type": "text", "text": query}]
        response = await self.embedding_model(query_block)
        if len(response.embeddings) != 1:
            raise RuntimeError(
                f"{self.embedding_model!r} returned {len(response.embeddings)} vectors for one "
                "query"
            )
        found = await self.embedding_store.search(
            response.embeddings[0], limit=limit, score_threshold=score_threshold, **kwargs
        )
        if not _package_store(self.embedding_store):
            for doc in found:
                # Assigning runs DocMetadata's converter: a dict content becomes its block.
                doc.metadata.content = doc.metadata.content
        return found

    async def _contents(self, documents: list[Document]) -> list[Any]:
        """Every chunk of *documents* checked, and its content as AgentScope's JSON dict (what
        the model gets), :data:`PREPARE_SLICE` chunks between checkpoints.

        :raises TypeError: for an item that is not a :class:`Document`.
        :raises ValueError: for a chunk whose modality the model does not embed.
        """
        supported = self.embedding_model.supported_modalities
        contents: list[Any] = []
        for index, doc in enumerate(documents):
            if index and index % PREPARE_SLICE == 0:
                await anyio.lowlevel.checkpoint()
            if not isinstance(doc, Document):
                raise TypeError(
                    f"documents[{index}] must be a Document (a reader's output), not "
                    f"{type(doc).__name__}"
                )
            content = doc.metadata.content
            if content.type not in supported:
                raise ValueError(
                    f"The embedding model {self.embedding_model.model_name} does not support "
                    f"{content.type} data (documents[{index}]); it embeds "
                    f"{', '.join(supported)}. Use an embedding model for that modality, or "
                    "leave those chunks out."
                )
            # The model gets AgentScope's blocks, plain dicts (sources too): models written
            # for AgentScope test ``isinstance(item, dict)``, and this package's models read
            # both.
            contents.append(content.to_dict())
        return contents

    async def add_documents(self, documents: list[Document], **kwargs: Any) -> None:
        """Embed *documents* (one call to the model for all of them), set each one's
        ``embedding``, and upsert them into the store.

        The model is called with each chunk's content as AgentScope's JSON dict
        (``{"type": "text", "text": ...}``, an image's ``source`` a dict too), as
        :meth:`retrieve` calls it with the query's text block; the documents keep their blocks.
        A store that is not one of this package's (``LocalVectorStore``, ``QdrantStore``,
        ``MilvusLiteStore`` and their subclasses) gets AgentScope's documents: copies whose
        ``metadata.content`` is that dict, so a store written as AgentScope's are
        (``json.dumps`` of the content, the content put in a database row) works;
        :meth:`retrieve` builds the blocks back.

        Every chunk is checked before anything is embedded: a chunk the model cannot embed
        stores nothing. A chunk already stored (same document id, position and content) is
        overwritten, so adding the same documents twice keeps one copy.

        :param documents: the chunks to add; an empty list does nothing.
        :param kwargs: passed to the store's ``add``.
        :raises ValueError: for a chunk whose modality (text, image, video) the model does not
            embed.
        :raises RuntimeError: if the model returns a different number of vectors than chunks.
        """
        documents = list(documents)
        contents = await self._contents(documents)
        if not documents:
            return
        response = await self.embedding_model(contents)
        if len(response.embeddings) != len(documents):
            raise RuntimeError(
                f"{self.embedding_model!r} returned {len(response.embeddings)} vectors for "
                f"{len(documents)} documents"
            )
        for start in range(0, len(documents), PREPARE_SLICE):
            if start:
                await anyio.lowlevel.checkpoint()
            end = start + PREPARE_SLICE
            vectors = response.embeddings[start:end]
            for doc, embedding in zip(documents[start:end], vectors, strict=True):
                doc.embedding = embedding
        if not _package_store(self.embedding_store):
            documents = [_agentscope_document(doc) for doc in documents]
        # A store written without this base (duck-typed) gets the default.
        step = getattr(self.embedding_store, "add_batch", STORE_BATCH)
        for start in range(0, len(documents), step):
            await self.embedding_store.add(documents[start : start + step], **kwargs)
