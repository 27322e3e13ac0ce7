"""KnowledgeBase and SimpleKnowledge over a real Qdrant store (embedded, in memory), with a
deterministic embedding model that counts its calls."""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentscope_rt.embedding import EmbeddingModelBase, EmbeddingResponse
from agentscope_rt.message import ImageBlock, TextBlock, URLSource
from agentscope_rt.rag import (
    DocMetadata,
    Document,
    KnowledgeBase,
    QdrantStore,
    SimpleKnowledge,
    TextReader,
)
from agentscope_rt.rag._simple_knowledge import STORE_BATCH
from agentscope_rt.tool import Toolkit

DIMS = 16


def hash_vector(text: str) -> list[float]:
    """A unit vector derived from the words of *text*: texts sharing words are near."""
    vector = [0.0] * DIMS
    for word in text.lower().split():
        digest = hashlib.sha256(word.strip(".,?!").encode()).digest()
        vector[digest[0] % DIMS] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


class CountingEmbedding(EmbeddingModelBase):
    """Embeds with :func:`hash_vector`, recording every call's texts."""

    def __init__(self) -> None:
        super().__init__("hash-words", DIMS)
        self.calls: list[list[str]] = []

    async def __call__(self, text: list[Any], **kwargs: Any) -> EmbeddingResponse:
        texts = [t if isinstance(t, str) else t["text"] for t in text]
        self.calls.append(texts)
        return EmbeddingResponse(embeddings=[hash_vector(t) for t in texts])


def doc(text: str, chunk_id: int = 0, doc_id: str = "d") -> Document:
    return Document(
        DocMetadata(TextBlock(text=text), doc_id=doc_id, chunk_id=chunk_id, total_chunks=1)
    )


async def stored_count(store: QdrantStore) -> int:
    client = store.get_client()

    def count() -> int:
        if not client.collection_exists(store.collection_name):
            return 0
        return client.count(store.collection_name).count

    return await anyio.to_thread.run_sync(count)


FACTS = [
    "Lyon sits where the Rhone meets the Saone.",
    "Paris is the capital of France.",
    "Trio runs structured concurrency.",
    "Qdrant stores vectors with payloads.",
]


async def test_add_embeds_everything_in_one_call_and_retrieve_finds_the_nearest() -> None:
    model = CountingEmbedding()
    async with QdrantStore(":memory:", "kb", DIMS) as store:
        kb = SimpleKnowledge(embedding_store=store, embedding_model=model)
        docs = [doc(t, i) for i, t in enumerate(FACTS)]
        await kb.add_documents(docs)
        assert model.calls == [FACTS]
        assert all(d.embedding == hash_vector(d.metadata.content["text"]) for d in docs)
        hits = await kb.retrieve("What is the capital of France?", limit=2)
        assert model.calls[-1] == ["What is the capital of France?"]
        assert hits[0].metadata.content["text"] == "Paris is the capital of France."
        assert len(hits) == 2
        assert hits[0].score is not None and hits[1].score is not None
        assert hits[0].score >= hits[1].score
        assert hits[0].id == docs[1].id


async def test_adding_the_same_documents_twice_keeps_one_copy() -> None:
    reader = TextReader(chunk_size=100, split_by="sentence")
    text = " ".join(FACTS)
    async with QdrantStore(":memory:", "kb", DIMS) as store:
        kb = SimpleKnowledge(store, CountingEmbedding())
        await kb.add_documents(await reader(text))
        first = await stored_count(store)
        await kb.add_documents(await reader(text))  # read again: same ids
        assert first == len(FACTS)
        assert await stored_count(store) == first
        hits = await kb.retrieve("Trio structured concurrency", limit=10)
        assert len({h.id for h in hits}) == len(hits) == len(FACTS)


async def test_a_large_add_goes_in_slices_and_a_cancelled_add_can_be_redone() -> None:
    texts = [f"chunk number {i} of the corpus" for i in range(3 * STORE_BATCH + 5)]
    async with QdrantStore(":memory:", "kb", DIMS) as store:
        slices: list[int] = []
        original_add = store.add
        scope = anyio.CancelScope()

        async def counting_add(documents: list[Document], **kwargs: Any) -> None:
            slices.append(len(documents))
            if len(slices) == 2:
                scope.cancel()  # cancelled half-way, as by a timeout
            await original_add(documents, **kwargs)

        store.add = counting_add  # type: ignore[method-assign]
        kb = SimpleKnowledge(store, CountingEmbedding())
        with scope:
            await kb.add_documents([doc(t, i) for i, t in enumerate(texts)])
        assert scope.cancelled_caught
        assert slices == [STORE_BATCH, STORE_BATCH]
        assert await stored_count(store) == STORE_BATCH
        store.add = original_add  # type: ignore[method-assign]
        await kb.add_documents([doc(t, i) for i, t in enumerate(texts)])
        assert await stored_count(store) == len(texts)


async def test_a_modality_the_model_cannot_embed_stores_nothing() -> None:
    model = CountingEmbedding()
    async with QdrantStore(":memory:", "kb", DIMS) as store:
        kb = SimpleKnowledge(store, model)
        image = Document(
            DocMetadata(
                ImageBlock(source=URLSource(url="https://example.com/a.png")),
                doc_id="img",
                chunk_id=0,
                total_chunks=1,
            )
        )
        with pytest.raises(
            ValueError, match=r"hash-words does not support image data.*documents\[1\]"
        ):
            await kb.add_documents([doc("text first"), image])
        assert model.calls == []
        assert await kb.retrieve("text first") == []


async def test_bad_arguments_are_refused_with_what_to_do() -> None:
    model = CountingEmbedding()
    async with QdrantStore(":memory:", "kb", DIMS) as store:
        with pytest.raises(TypeError, match="in that order"):
            SimpleKnowledge(model, store)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="embedding_store must be a VDBStoreBase"):
            SimpleKnowledge("qdrant", model)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="embedding_model must be an EmbeddingModelBase"):
            SimpleKnowledge(store, "minilm")  # type: ignore[arg-type]
        kb = SimpleKnowledge(store, model)
        with pytest.raises(ValueError, match="non-empty string"):
            await kb.retrieve("   ")
        with pytest.raises(TypeError, match=r"documents\[0\] must be a Document"):
            await kb.add_documents(["a text"])  # type: ignore[list-item]
        await kb.add_documents([])
        assert model.calls == []


async def test_a_model_returning_the_wrong_number_of_vectors_is_an_error() -> None:
    class Short(CountingEmbedding):
        async def __call__(self, text: list[Any], **kwargs: Any) -> EmbeddingResponse:
            full = await super().__call__(text, **kwargs)
            return EmbeddingResponse(embeddings=full.embeddings[:-1])

    async with QdrantStore(":memory:", "kb", DIMS) as store:
        kb = SimpleKnowledge(store, Short())
        with pytest.raises(RuntimeError, match="returned 1 vectors for 2 documents"):
            await kb.add_documents([doc("a", 0), doc("b", 1)])
        assert await stored_count(store) == 0
        with pytest.raises(RuntimeError, match="returned 0 vectors for one query"):
            await kb.retrieve("a b")


async def test_retrieve_knowledge_tool_texts() -> None:
    async with QdrantStore(":memory:", "kb", DIMS) as store:
        kb = SimpleKnowledge(store, CountingEmbedding())
        await kb.add_documents([doc(t, i) for i, t in enumerate(FACTS)])
        found = await kb.retrieve_knowledge("capital of France", limit=2)
        hits = await kb.retrieve("capital of France", limit=2)
        # Qdrant's embedded engine renormalises stored vectors on each search, so scores may
        # move in the last digits between two searches.
        assert len(found.content) == len(hits) == 2
        for block, hit in zip(found.content, hits, strict=True):
            match = re.fullmatch(r"Score: (\S+), Content: (.*)", block.text, re.S)
            assert match is not None
            assert float(match[1]) == pytest.approx(hit.score, abs=1e-6)
            assert match[2] == hit.metadata.content["text"]
        assert found.content[0].text.endswith("Content: Paris is the capital of France.")
        nothing = await kb.retrieve_knowledge("capital of France", score_threshold=1.5)
        assert [b.text for b in nothing.content] == [
            "No relevant documents found. TRY to reduce the `score_threshold` parameter to get "
            "more results."
        ]


async def test_retrieve_knowledge_shows_an_image_chunk_as_itself() -> None:
    image = ImageBlock(source=URLSource(url="https://example.com/a.png"))

    class Images(KnowledgeBase):
        async def retrieve(
            self, query: str, limit: int = 5, score_threshold: float | None = None, **kw: Any
        ) -> list[Document]:
            return [Document(DocMetadata(image, "i", 0, 1), score=0.5)]

        async def add_documents(self, documents: list[Document], **kwargs: Any) -> None:
            raise NotImplementedError

    result = await Images().retrieve_knowledge("a picture")
    assert result.content[0] == TextBlock(text="Score: 0.5, Content: ")
    assert result.content[1] == image


def test_retrieve_knowledge_registers_as_a_tool_with_its_documented_parameters() -> None:
    kb = SimpleKnowledge(QdrantStore(":memory:", "kb", DIMS), CountingEmbedding())
    toolkit = Toolkit()
    toolkit.register_tool_function(kb.retrieve_knowledge)
    (schema,) = toolkit.get_json_schemas()
    function = schema["function"]
    assert function["name"] == "retrieve_knowledge"
    assert function["description"].startswith(
        "Retrieve relevant documents from the knowledge base."
    )
    params = function["parameters"]
    assert params["required"] == ["query"]
    assert set(params["properties"]) == {"query", "limit", "score_threshold"}
    assert params["properties"]["limit"]["default"] == 5
    # The texts the model reads are AgentScope 1.0.21's schema texts, line breaks included.
    assert function["description"] == (
        "Retrieve relevant documents from the knowledge base. Note the\n`query` parameter is "
        "directly related to the retrieval quality, and\nfor the same question, you can try "
        "many different queries to get the\nbest results. Adjust the `limit` and "
        "`score_threshold` parameters\nto get more or fewer results."
    )
    assert params["properties"]["query"]["description"] == (
        "The query string, which should be specific and concise. For\nexample, you should "
        'provide the specific name instead of\n"you", "my", "he", "she", etc.'
    )
    assert params["properties"]["score_threshold"]["description"] == (
        "A threshold in [0, 1] and only the relevance score above this\nthreshold will be "
        "returned. Reduce this value to get more\nresults."
    )


def test_knowledge_base_keeps_its_store_and_model() -> None:
    store = QdrantStore(":memory:", "kb", DIMS)
    model = CountingEmbedding()
    kb = SimpleKnowledge(embedding_store=store, embedding_model=model)
    assert kb.embedding_store is store
    assert kb.embedding_model is model
    assert "QdrantStore" in repr(kb) and "hash-words" in repr(kb)


async def test_retrieve_knowledge_formats_each_score_as_python_prints_it() -> None:
    class Fixed(KnowledgeBase):
        async def retrieve(
            self, query: str, limit: int = 5, score_threshold: float | None = None, **kw: Any
        ) -> list[Document]:
            self.args = (query, limit, score_threshold, kw)
            return [
                Document(DocMetadata(TextBlock(text="first"), "d", 0, 2), score=0.875),
                Document(DocMetadata(TextBlock(text="second"), "d", 1, 2), score=None),
            ]

        async def add_documents(self, documents: list[Document], **kwargs: Any) -> None:
            raise NotImplementedError

    kb = Fixed()
    result = await kb.retrieve_knowledge("q", limit=3, score_threshold=0.2, extra=1)
    assert [b.text for b in result.content] == [
        "Score: 0.875, Content: first",
        "Score: None, Content: second",
    ]
    assert kb.args == ("q", 3, 0.2, {"extra": 1})


async def test_other_tasks_run_between_the_slices_of_a_large_add() -> None:
    texts = [f"chunk number {i} of the corpus" for i in range(4 * STORE_BATCH)]
    ticks = 0
    seen_at_slice: list[int] = []
    done = anyio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await anyio.lowlevel.checkpoint()

    async with QdrantStore(":memory:", "kb", DIMS) as store:
        original_add = store.add

        async def recording_add(documents: list[Document], **kwargs: Any) -> None:
            seen_at_slice.append(ticks)
            await original_add(documents, **kwargs)

        store.add = recording_add  # type: ignore[method-assign]
        kb = SimpleKnowledge(store, CountingEmbedding())
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            await kb.add_documents([doc(t, i) for i, t in enumerate(texts)])
            done.set()
        assert await stored_count(store) == len(texts)
    assert len(seen_at_slice) == 4
    # The ticking task ran while each slice was being stored.
    assert all(b > a for a, b in itertools.pairwise(seen_at_slice))


async def test_extensions_written_for_agentscope_need_only_their_core_methods() -> None:
    # AgentScope's base classes are not ABCs: a read-only knowledge base, a store without
    # delete or a reader without get_doc_id is built there. Here too; the method it lacks
    # raises NotImplementedError naming the class when called.
    from agentscope_rt.rag import ReaderBase, VDBStoreBase

    class SearchOnly(KnowledgeBase):
        async def retrieve(
            self, query: str, limit: int = 5, score_threshold: float | None = None, **kw: Any
        ) -> list[Document]:
            return [Document(DocMetadata(TextBlock(text=query), "d", 0, 1), score=1.0)]

    class AppendOnly(VDBStoreBase):
        async def add(self, documents: list[Document], **kwargs: Any) -> None:
            pass

        async def search(
            self,
            query_embedding: list[float],
            limit: int,
            score_threshold: float | None = None,
            **kwargs: Any,
        ) -> list[Document]:
            return []

    class Lines(ReaderBase):
        async def __call__(self, text: str) -> list[Document]:
            return []

    kb = SearchOnly()
    assert (await kb.retrieve_knowledge("x")).content == [TextBlock(text="Score: 1.0, Content: x")]
    with pytest.raises(NotImplementedError, match="SearchOnly does not implement add_documents"):
        await kb.add_documents([])
    with pytest.raises(NotImplementedError, match="AppendOnly does not implement delete"):
        await AppendOnly().delete(ids=["a"])
    with pytest.raises(NotImplementedError, match="Lines does not implement get_doc_id"):
        Lines().get_doc_id("text")
