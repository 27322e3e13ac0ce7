"""A long-term memory on an embedding model and a vector store: offline by default.

Facts are short texts kept per user: each is embedded and stored in a vector store as one
chunk of the user's "document", so a search filtered on that document sees only that user's
facts, and retrieval is by cosine similarity to the query.

**Identity and de-duplication.** A fact is normalised (surrounding and repeated whitespace
removed) and stored under :func:`~agentscope_rt.rag.chunk_id_of` its scope and text: the same
fact recorded twice, in one process or in two, is one point. A fact whose nearest stored fact
of the same scope scores at least ``dedup_threshold`` is taken as a new version of it: the
older one is deleted and the newer kept (measured with all-MiniLM-L6-v2, 0.9 merges spelling
variants and updates such as "two children" -> "three children", 0.92-0.99, and keeps apart
different facts of the same shape, such as a sister's and a brother's city, 0.87).

**State.** The facts live in the store: a folder (``LocalVectorStore(path, ...)``), a Qdrant
folder or server keeps them across restarts, the default in-memory store does not.
:meth:`state_dict` holds the settings only (user, agent, thresholds), never the facts; a state
of another user or agent is refused on load (the memory's user is the application's choice,
not the saved state's).

**Concurrency.** Records are serialised per memory (an ``anyio.Lock`` of the event loop in
use; the memory may serve one ``anyio.run`` after another), so two replies
recording the same new fact at once store it once; embedding and store calls never block the
event loop (the models and stores run their blocking work in worker threads).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from .._locks import FairLock
from ..exception import StateError
from ..message import Msg, TextBlock
from ..tool import ToolResponse
from ._long_term_memory import LongTermMemoryBase, query_texts

if TYPE_CHECKING:
    from ..embedding import EmbeddingModelBase
    from ..rag import Document, VDBStoreBase

__all__ = ["VectorLongTermMemory"]

DEFAULT_COLLECTION = "long_term_memory"
"""The collection of the default in-memory Qdrant store."""

# Messages the agent adds itself; recording them would feed retrievals back in as facts.
_GENERATED_PREFIXES = ("<long_term_memory>", "<retrieved_knowledge>", "<system-hint>")
_GENERATED_NAMES = frozenset({"long_term_memory"})

# Without a server-side filter, how many hits to ask for per wanted hit at first.
_OVERFETCH = 4


def _normalise(fact: str) -> str:
    return " ".join(fact.split())


_default_embedding: EmbeddingModelBase | None = None


def _shared_local_embedding(factory: Callable[[], EmbeddingModelBase]) -> EmbeddingModelBase:
    """The one default model of every memory built without one: one memory per user is the
    usual shape, and each would otherwise load its own copy of the weights (~90 MB). The
    model is safe to share: it loads once and serves concurrent calls from any event loop."""
    global _default_embedding
    if _default_embedding is None:
        _default_embedding = factory()
    return _default_embedding


class VectorLongTermMemory(LongTermMemoryBase):
    """Facts about a user, embedded and kept in a vector store, recalled by similarity.

    ``record`` stores the text of each message whose role is in *record_roles* (the user's own
    words, by default) as one fact; ``record_to_memory`` stores each item the model chose.
    ``retrieve`` and ``retrieve_from_memory`` return the most similar facts of this memory's
    scope, one per line, most similar first.

    :param embedding_model: embeds facts and queries (default: a
        :class:`~agentscope_rt.embedding.LocalTextEmbedding`, offline, shared by every memory
        built without a model; needs the ``embedding`` extra). Use one model for the life of
        a store: vectors of different models are not comparable.
    :param store: where facts live (default: an in-memory
        :class:`~agentscope_rt.rag.LocalVectorStore`, needs the ``vector`` extra; pass a
        ``LocalVectorStore`` on a folder to keep facts across restarts). Its dimensions must match
        the model's. The caller closes a store it passed in; :meth:`close` closes the default.
    :param user_id: whose facts these are. Facts of other users in the same store are never
        returned, replaced or deleted.
    :param agent_name: when given, facts are also scoped to this agent; when ``None``, every
        agent of this user shares them.
    :param score_threshold: the least similarity for a fact to be retrieved (0.25 suits
        all-MiniLM-L6-v2: related query/fact pairs measured 0.26-0.58, unrelated 0.02-0.2).
    :param dedup_threshold: the similarity at which a new fact replaces a stored one (see the
        module docstring); 1.0 replaces only identical vectors.
    :param record_roles: the roles whose messages :meth:`record` stores.
    :raises TypeError: for arguments of the wrong type.
    :raises ValueError: for an empty *user_id*, a threshold outside [-1, 1], or a store whose
        dimensions differ from the model's.
    :raises ImportError: when a default is needed and its extra is not installed.
    """

    def __init__(
        self,
        embedding_model: EmbeddingModelBase | None = None,
        store: VDBStoreBase | None = None,
        user_id: str = "default",
        agent_name: str | None = None,
        score_threshold: float = 0.25,
        dedup_threshold: float = 0.9,
        record_roles: Sequence[str] = ("user",),
    ) -> None:
        super().__init__()
        from ..embedding import EmbeddingModelBase, LocalTextEmbedding
        from ..rag import LocalVectorStore, VDBStoreBase

        if not isinstance(user_id, str) or not user_id:
            raise ValueError(f"user_id must be a non-empty string, not {user_id!r}")
        if agent_name is not None and not isinstance(agent_name, str):
            raise TypeError(f"agent_name must be a string or None, not {type(agent_name).__name__}")
        for name, value in (
            ("score_threshold", score_threshold),
            ("dedup_threshold", dedup_threshold),
        ):
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not -1 <= value <= 1
            ):
                raise ValueError(f"{name} must be a number in [-1, 1], not {value!r}")
        if isinstance(record_roles, str) or not all(isinstance(r, str) for r in record_roles):
            raise TypeError("record_roles must be a sequence of role names, e.g. ('user',)")
        if embedding_model is None:
            embedding_model = _shared_local_embedding(LocalTextEmbedding)
        elif not isinstance(embedding_model, EmbeddingModelBase):
            kind = type(embedding_model).__name__
            raise TypeError(f"embedding_model must be an EmbeddingModelBase, not {kind}")
        self._owns_store = store is None
        if store is None:
            store = LocalVectorStore(":memory:", DEFAULT_COLLECTION, embedding_model.dimensions)
        elif not isinstance(store, VDBStoreBase):
            raise TypeError(f"store must be a VDBStoreBase, not {type(store).__name__}")
        store_dims = getattr(store, "dimensions", None)
        if isinstance(store_dims, int) and store_dims != embedding_model.dimensions:
            raise ValueError(
                f"the store holds {store_dims}-dimensional vectors but the embedding model "
                f"{embedding_model.model_name!r} makes {embedding_model.dimensions}-dimensional "
                "ones: build the store with dimensions=embedding_model.dimensions"
            )

        self.embedding_model = embedding_model
        self.store = store
        self.user_id = user_id
        self.agent_name = agent_name
        self.score_threshold = float(score_threshold)
        self.dedup_threshold = float(dedup_threshold)
        self.record_roles: list[str] = list(record_roles)
        self.register_state("user_id", state_type=str)
        self.register_state("agent_name", state_type=str | None)
        self.register_state("score_threshold", state_type=float)
        self.register_state("dedup_threshold", state_type=float)
        self.register_state("record_roles", state_type=list[str])
        self._lock = FairLock()
        # Ids of the message texts `record` has handled. The agent passes the whole
        # conversation on every reply: an old message must not be stored again, neither to
        # spare the embedding nor to undo a newer fact that replaced it (or a deletion).
        self._recorded: set[str] = set()

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Load the settings saved by :meth:`state_dict` (thresholds, ``record_roles``).

        The user and agent a memory serves are fixed when it is built, not by saved state: a
        state naming another ``user_id`` or ``agent_name`` (a session of another user) is
        refused, so loading it cannot make this memory read and write that user's facts.

        :raises StateError: for a state of another user or agent (naming both), or a
            malformed state; nothing is changed then.
        """
        if isinstance(state_dict, dict):
            for key, mine in (("user_id", self.user_id), ("agent_name", self.agent_name)):
                if key in state_dict and state_dict[key] != mine:
                    raise StateError(
                        f"VectorLongTermMemory: the state is of {key}={state_dict[key]!r}, but "
                        f"this memory serves {key}={mine!r}; whose facts a memory holds is "
                        "fixed when it is built: build one with that "
                        f"{key} to load this state"
                    )
        super().load_state_dict(state_dict, strict)

    def __repr__(self) -> str:
        return (
            f"VectorLongTermMemory(user_id={self.user_id!r}, agent_name={self.agent_name!r}, "
            f"store={self.store!r})"
        )

    @property
    def scope(self) -> str:
        """The document id under which this memory's facts are stored (user and agent)."""
        return json.dumps([self.user_id, self.agent_name], ensure_ascii=False)

    def fact_id(self, fact: str) -> str:
        """The id *fact* is stored under in this memory's scope (derived from its text)."""
        from ..rag import chunk_id_of

        return chunk_id_of(self.scope, 0, TextBlock(text=_normalise(fact)))

    # -- searching ---------------------------------------------------------------------------

    def _filter_kwargs(self) -> dict[str, Any] | None:
        """The store's own filter on this scope, or ``None`` if the store has none we know."""
        from ..rag import LocalVectorStore, MilvusLiteStore, QdrantStore

        if isinstance(self.store, LocalVectorStore):
            return {"filter": {"doc_id": self.scope}}
        if isinstance(self.store, QdrantStore):
            from qdrant_client import models

            return {
                "query_filter": models.Filter(
                    must=[
                        models.FieldCondition(
                            key="doc_id", match=models.MatchValue(value=self.scope)
                        )
                    ]
                )
            }
        if isinstance(self.store, MilvusLiteStore):
            return {"filter": f"doc_id == {json.dumps(self.scope)}"}
        return None

    async def _search(
        self, vector: list[float], limit: int, threshold: float | None
    ) -> list[Document]:
        """The up to *limit* facts of this scope nearest *vector*, scoring at least
        *threshold*."""
        kwargs = self._filter_kwargs()
        if kwargs is not None:
            return await self.store.search(vector, limit, score_threshold=threshold, **kwargs)
        # Another store: ask for more until enough hits are ours or the store has no more.
        want = limit * _OVERFETCH
        while True:
            docs = await self.store.search(vector, want, score_threshold=threshold)
            mine = [d for d in docs if d.metadata.doc_id == self.scope]
            if len(mine) >= limit or len(docs) < want:
                return mine[:limit]
            want *= 2

    async def _embed(self, texts: list[str]) -> list[list[float]]:
        response = await self.embedding_model(list(texts))
        return [list(vector) for vector in response.embeddings]

    async def search(self, queries: list[str], limit: int = 5) -> list[tuple[str, float]]:
        """The facts most similar to any of *queries*: up to *limit* per query, each fact once
        (with its best score), most similar first.

        :raises ValueError: for a non-positive *limit*.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive integer, not {limit!r}")
        queries = [q for q in (_normalise(q) for q in queries) if q]
        if not queries:
            return []
        best: dict[str, tuple[str, float]] = {}
        for vector in await self._embed(queries):
            for doc in await self._search(vector, limit, self.score_threshold):
                fact = getattr(doc.metadata.content, "text", "")
                score = float(doc.score or 0.0)
                if fact and (doc.id not in best or best[doc.id][1] < score):
                    best[doc.id] = (fact, score)
        return sorted(best.values(), key=lambda item: -item[1])

    # -- storing -----------------------------------------------------------------------------

    async def add_facts(self, facts: list[str]) -> dict[str, list[str]]:
        """Store *facts* (see the module docstring for identity and de-duplication).

        :returns: ``{"added": [...], "replaced": [...], "unchanged": [...]}``: facts stored
            anew, facts stored in place of a near-duplicate (the replaced texts are not
            listed), and facts that were already stored.
        """
        from ..rag import DocMetadata, Document

        result: dict[str, list[str]] = {"added": [], "replaced": [], "unchanged": []}
        # dict keeps the first occurrence of each fact, in order.
        unique = list(dict.fromkeys(f for f in (_normalise(f) for f in facts) if f))
        if not unique:
            return result
        async with self._lock:
            vectors = await self._embed(unique)
            for fact, vector in zip(unique, vectors, strict=True):
                fact_id = self.fact_id(fact)
                hits = await self._search(vector, 1, self.dedup_threshold)
                if hits and hits[0].id == fact_id:
                    result["unchanged"].append(fact)
                    continue
                block = TextBlock(text=fact)
                doc = Document(
                    metadata=DocMetadata(
                        content=block, doc_id=self.scope, chunk_id=0, total_chunks=1
                    ),
                    id=fact_id,
                    embedding=vector,
                )
                # A replacement is whole or not at all: an interrupt here must neither lose
                # the old fact without the new one nor leave both.
                with anyio.CancelScope(shield=True):
                    await self.store.add([doc])
                    if hits:
                        await self.store.delete(ids=[hits[0].id])
                result["replaced" if hits else "added"].append(fact)
                # ... and a cancellation that came meanwhile is delivered now.
                await anyio.lowlevel.checkpoint_if_cancelled()
        return result

    async def delete_facts(self, facts: list[str]) -> None:
        """Remove these facts (by exact text, after normalising) from this memory's scope."""
        ids = [self.fact_id(f) for f in facts if _normalise(f)]
        if ids:
            async with self._lock:
                await self.store.delete(ids=ids)

    async def clear(self) -> None:
        """Remove every fact of this memory's scope (other users' facts are kept)."""
        async with self._lock:
            await self.store.delete(doc_ids=[self.scope])

    async def close(self) -> None:
        """Close the store if this memory created it (the default in-memory store)."""
        if self._owns_store:
            await self.store.close()

    async def __aenter__(self) -> VectorLongTermMemory:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- the long-term memory interface ------------------------------------------------------

    def _facts_of(self, msgs: Sequence[Msg | None]) -> list[str]:
        facts = []
        for msg in msgs:
            if msg is None or msg.role not in self.record_roles or msg.name in _GENERATED_NAMES:
                continue
            text = msg.get_text_content()
            if text is None:
                continue
            text = _normalise(text)
            if text and not text.startswith(_GENERATED_PREFIXES):
                facts.append(text)
        return facts

    async def record(
        self, msgs: list[Msg | None] | Msg | None, **kwargs: Any
    ) -> dict[str, list[str]]:
        """Store the text of each message of *msgs* whose role is in ``record_roles`` as a
        fact (``None`` items, messages without text and the agent's own retrieval and hint
        messages are skipped). A message this memory object has recorded before is not
        recorded again (it is listed as unchanged), even if a newer fact has replaced it or it
        was deleted since: the agent passes the whole conversation on every reply, and storing
        an old message again would undo the newer fact.

        :returns: what :meth:`add_facts` returns.
        :raises TypeError: for an item that is not a ``Msg`` or ``None``.
        """
        if msgs is None:
            return await self.add_facts([])
        if isinstance(msgs, Msg):
            msgs = [msgs]
        for index, msg in enumerate(msgs):
            if msg is not None and not isinstance(msg, Msg):
                raise TypeError(f"msgs[{index}] must be a Msg or None, not {type(msg).__name__}")
        facts = self._facts_of(msgs)
        ids = [self.fact_id(f) for f in facts]
        known = [f for f, i in zip(facts, ids, strict=True) if i in self._recorded]
        result = await self.add_facts(
            [f for f, i in zip(facts, ids, strict=True) if i not in self._recorded]
        )
        self._recorded.update(ids)
        result["unchanged"] = list(dict.fromkeys(known + result["unchanged"]))
        return result

    async def retrieve(self, msg: Msg | list[Msg] | None, limit: int = 5, **kwargs: Any) -> str:
        """The facts most similar to the text of *msg* (each message of a list searched on its
        own, *limit* facts each), one per line, most similar first; ``""`` when none scores
        ``score_threshold`` or more.

        :raises TypeError: for something that is not a ``Msg`` or a list of them.
        """
        queries = query_texts(msg)
        return "\n".join(fact for fact, _ in await self.search(queries, limit))

    async def record_to_memory(
        self,
        thinking: str,
        content: list[str],
        **kwargs: Any,
    ) -> ToolResponse:
        # The tool description is the base class's docstring (inspect.getdoc inherits it).
        try:
            if isinstance(content, str):
                content = [content]
            result = await self.add_facts([str(item) for item in content])
        except Exception as exc:  # the model gets the error as the tool's answer
            return ToolResponse(content=[TextBlock(text=f"Error recording memory: {exc}")])
        return ToolResponse(
            content=[TextBlock(text=f"Successfully recorded content to memory {result}")],
            metadata=result,
        )

    async def retrieve_from_memory(
        self,
        keywords: list[str],
        limit: int = 5,
        **kwargs: Any,
    ) -> ToolResponse:
        # The tool description is the base class's docstring (inspect.getdoc inherits it).
        try:
            if isinstance(keywords, str):
                keywords = [keywords]
            found = await self.search([str(k) for k in keywords], limit)
        except Exception as exc:  # the model gets the error as the tool's answer
            return ToolResponse(content=[TextBlock(text=f"Error retrieving memory: {exc}")])
        return ToolResponse(content=[TextBlock(text="\n".join(fact for fact, _ in found))])
