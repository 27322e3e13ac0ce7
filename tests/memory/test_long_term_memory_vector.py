"""VectorLongTermMemory on the local embedding model: per-user isolation, de-duplication
(identical facts stored once, near-duplicates replaced by the newer one), retrieval quality on
a small set of facts, persistence in a Qdrant folder, settings-only state, and any store."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentscope_rt.embedding import LocalTextEmbedding
from agentscope_rt.memory import VectorLongTermMemory
from agentscope_rt.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from agentscope_rt.rag import (
    Document,
    LocalVectorStore,
    MilvusLiteStore,
    QdrantStore,
    VDBStoreBase,
)

FACTS = [
    "I am vegetarian.",
    "I live in Paris.",
    "My favourite colour is blue.",
    "I prefer window seats on flights.",
    "I have a dog named Rex.",
    "I work as a nurse.",
    "I am allergic to peanuts.",
    "I prefer concise answers.",
    "My sister's name is Clara.",
    "I play the piano.",
]

# Each query's best fact, as all-MiniLM-L6-v2 ranks them (measured: 0.30-0.64 for the best,
# the runner-up at least 0.02 lower).
QUERIES = {
    "Suggest a recipe for dinner without meat": "I am vegetarian.",
    "Book me a flight to Rome": "I prefer window seats on flights.",
    "Which city do I live in?": "I live in Paris.",
    "What pet do I have?": "I have a dog named Rex.",
    "What is my job?": "I work as a nurse.",
    "What colour should I paint my room?": "My favourite colour is blue.",
    "Can I eat peanut butter cookies?": "I am allergic to peanuts.",
    "What instrument do I play?": "I play the piano.",
    "Who is my sister?": "My sister's name is Clara.",
    "How long should your answers be?": "I prefer concise answers.",
}


@pytest.fixture(scope="module")
def embedding() -> Iterator[LocalTextEmbedding]:
    # One model for the module: loading it is the slow part.
    yield LocalTextEmbedding()


def _store(embedding: LocalTextEmbedding, location: str = ":memory:") -> QdrantStore:
    return QdrantStore(location, "ltm", embedding.dimensions)


async def _all_facts(memory: VectorLongTermMemory) -> list[str]:
    """Every fact of the memory's scope (a search that everything passes)."""
    saved = memory.score_threshold
    memory.score_threshold = -1.0
    try:
        return sorted(fact for fact, _ in await memory.search(["anything"], limit=100))
    finally:
        memory.score_threshold = saved


async def test_each_query_finds_its_fact_first(embedding: LocalTextEmbedding) -> None:
    async with _store(embedding) as store:
        memory = VectorLongTermMemory(embedding, store, user_id="ada")
        await memory.add_facts(FACTS)
        for query, expected in QUERIES.items():
            found = await memory.search([query], limit=3)
            assert found[0][0] == expected, query
            assert all(score >= memory.score_threshold for _, score in found)
        recalled = await memory.retrieve(Msg("user", "What pet do I have?", "user"), limit=1)
        assert recalled == "I have a dog named Rex."
        # Nothing relevant: nothing recalled.
        assert await memory.retrieve(Msg("user", "Hello, how are you?", "user")) == ""


async def test_users_never_see_each_others_facts(embedding: LocalTextEmbedding) -> None:
    async with _store(embedding) as store:
        ada = VectorLongTermMemory(embedding, store, user_id="ada")
        bob = VectorLongTermMemory(embedding, store, user_id="bob")
        await ada.add_facts(["I live in Paris.", "I am vegetarian."])
        await bob.add_facts(["I live in Berlin."])
        question = Msg("user", "Where do I live?", "user")
        assert "Paris" in await ada.retrieve(question) and "Berlin" not in await ada.retrieve(
            question
        )
        assert await bob.retrieve(question) == "I live in Berlin."
        # The same fact for two users is two facts, and near-duplicates only merge per user.
        await bob.add_facts(["I am a vegetarian."])
        assert await _all_facts(ada) == ["I am vegetarian.", "I live in Paris."]
        assert await _all_facts(bob) == ["I am a vegetarian.", "I live in Berlin."]
        await ada.clear()
        assert await _all_facts(ada) == []
        assert await _all_facts(bob) == ["I am a vegetarian.", "I live in Berlin."]


async def test_agents_share_a_users_facts_unless_scoped(embedding: LocalTextEmbedding) -> None:
    async with _store(embedding) as store:
        shared = VectorLongTermMemory(embedding, store, user_id="ada")
        planner = VectorLongTermMemory(embedding, store, user_id="ada", agent_name="planner")
        again = VectorLongTermMemory(embedding, store, user_id="ada")
        await shared.add_facts(["I live in Paris."])
        await planner.add_facts(["Ada's trip is in May."])
        assert await _all_facts(again) == ["I live in Paris."]
        assert await _all_facts(planner) == ["Ada's trip is in May."]


async def test_the_same_fact_is_stored_once(embedding: LocalTextEmbedding) -> None:
    async with _store(embedding) as store:
        memory = VectorLongTermMemory(embedding, store, user_id="ada")
        first = await memory.add_facts(
            ["I live in Paris.", "  I live   in Paris. ", "I play chess."]
        )
        assert first == {
            "added": ["I live in Paris.", "I play chess."],
            "replaced": [],
            "unchanged": [],
        }
        # Another memory object (as after a restart) finds it already stored.
        other = VectorLongTermMemory(embedding, store, user_id="ada")
        second = await other.add_facts(["I live in Paris."])
        assert second == {"added": [], "replaced": [], "unchanged": ["I live in Paris."]}
        assert await _all_facts(other) == ["I live in Paris.", "I play chess."]
        assert memory.fact_id("I live in Paris.") == other.fact_id(" I live in Paris.")
        assert memory.fact_id("I live in Paris.") != VectorLongTermMemory(
            embedding, store, user_id="bob"
        ).fact_id("I live in Paris.")


async def test_near_duplicates_are_replaced_by_the_newer_fact(
    embedding: LocalTextEmbedding,
) -> None:
    async with _store(embedding) as store:
        memory = VectorLongTermMemory(embedding, store, user_id="ada")
        await memory.add_facts(["I have two children.", "My sister lives in Rome."])
        result = await memory.add_facts(["I have three children.", "My brother lives in Rome."])
        # 0.92: a new version of the fact; 0.87: a different fact of the same shape.
        assert result == {
            "added": ["My brother lives in Rome."],
            "replaced": ["I have three children."],
            "unchanged": [],
        }
        assert await _all_facts(memory) == [
            "I have three children.",
            "My brother lives in Rome.",
            "My sister lives in Rome.",
        ]
        strict = VectorLongTermMemory(embedding, store, user_id="eve", dedup_threshold=1.0)
        await strict.add_facts(["I have two children.", "I have three children."])
        assert len(await _all_facts(strict)) == 2


async def test_record_keeps_the_users_words_once(embedding: LocalTextEmbedding) -> None:
    async with _store(embedding) as store:
        memory = VectorLongTermMemory(embedding, store, user_id="ada")
        conversation: list[Msg | None] = [
            Msg("user", "I am vegetarian.", "user"),
            Msg(
                "long_term_memory",
                "<long_term_memory>The content below are ...</long_term_memory>",
                "user",
            ),
            Msg("user", "<retrieved_knowledge>docs</retrieved_knowledge>", "user"),
            None,
            Msg("Friday", [ToolUseBlock(id="c", name="f", input={})], "assistant"),
            Msg("system", [ToolResultBlock(id="c", name="f", output="42")], "system"),
            Msg("Friday", "Noted.", "assistant"),
        ]
        first = await memory.record(conversation)
        assert first["added"] == ["I am vegetarian."]
        conversation.append(Msg("user", "I also avoid eggs.", "user"))
        second = await memory.record(conversation)
        assert second == {
            "added": ["I also avoid eggs."],
            "replaced": [],
            "unchanged": ["I am vegetarian."],
        }
        assert await _all_facts(memory) == ["I also avoid eggs.", "I am vegetarian."]
        both = VectorLongTermMemory(
            embedding, store, user_id="bo", record_roles=["user", "assistant"]
        )
        await both.record(Msg("Friday", "Noted.", "assistant"))
        assert await _all_facts(both) == ["Noted."]
        with pytest.raises(TypeError, match=r"msgs\[0\]"):
            await memory.record(["not a message"])  # type: ignore[list-item]


async def test_an_older_message_never_undoes_a_newer_fact(embedding: LocalTextEmbedding) -> None:
    async with _store(embedding) as store:
        memory = VectorLongTermMemory(embedding, store, user_id="ada")
        conversation = [Msg("user", "I have two children.", "user")]
        await memory.record(conversation)
        conversation.append(Msg("user", "I have three children.", "user"))
        # The agent records the whole conversation after every reply.
        for _ in range(3):
            await memory.record(conversation)
        assert await _all_facts(memory) == ["I have three children."]
        # Deleted facts are not brought back by the conversation either.
        await memory.delete_facts(["I have three children."])
        await memory.record(conversation)
        assert await _all_facts(memory) == []
        # An explicit record still stores it.
        await memory.add_facts(["I have two children."])
        assert await _all_facts(memory) == ["I have two children."]


async def test_the_tools_answer_the_model(embedding: LocalTextEmbedding) -> None:
    async with _store(embedding) as store:
        memory = VectorLongTermMemory(embedding, store, user_id="ada")
        recorded = await memory.record_to_memory(
            "Worth keeping.", ["Ada is allergic to peanuts.", "Ada plays the piano."]
        )
        text = recorded.content[0]
        assert isinstance(text, TextBlock)
        assert text.text.startswith("Successfully recorded content to memory")
        assert recorded.metadata is not None and len(recorded.metadata["added"]) == 2
        found = await memory.retrieve_from_memory(["music", "allergy"], limit=1)
        block = found.content[0]
        assert isinstance(block, TextBlock)
        assert block.text.split("\n") == ["Ada is allergic to peanuts.", "Ada plays the piano."]
    # The store is closed now: the model gets AgentScope's error texts.
    failed = await memory.record_to_memory("x", ["y"])
    assert failed.content[0].text.startswith("Error recording memory: ")  # type: ignore[union-attr]
    failed = await memory.retrieve_from_memory(["y"])
    assert failed.content[0].text.startswith("Error retrieving memory: ")  # type: ignore[union-attr]


async def test_facts_survive_a_restart_in_a_qdrant_folder(
    embedding: LocalTextEmbedding, tmp_path: Path
) -> None:
    folder = str(tmp_path / "facts")
    async with _store(embedding, folder) as store:
        memory = VectorLongTermMemory(embedding, store, user_id="ada", score_threshold=0.3)
        await memory.add_facts(["I prefer window seats on flights."])
        state = memory.state_dict()
    assert state == {
        "user_id": "ada",
        "agent_name": None,
        "score_threshold": 0.3,
        "dedup_threshold": 0.9,
        "record_roles": ["user"],
    }
    async with _store(embedding, folder) as store:
        restored = VectorLongTermMemory(embedding, store, user_id="ada")
        restored.load_state_dict(state)
        assert restored.user_id == "ada" and restored.score_threshold == 0.3
        assert await restored.retrieve(Msg("user", "Book me a flight", "user")) == (
            "I prefer window seats on flights."
        )


async def test_the_defaults_run_offline_in_memory() -> None:
    async with VectorLongTermMemory(user_id="ada") as memory:
        assert isinstance(memory.embedding_model, LocalTextEmbedding)
        assert isinstance(memory.store, LocalVectorStore) and memory.store.location == ":memory:"
        await memory.add_facts(["I play the piano."])
        assert await memory.retrieve(Msg("user", "music", "user")) == "I play the piano."
    with pytest.raises(RuntimeError, match="closed"):
        await memory.add_facts(["I play the violin."])


def test_memories_with_the_default_model_share_one() -> None:
    # One memory per user is the usual shape: each must not load its own copy of the model
    # (about 90 MB of weights and a second of loading each).
    memories = [VectorLongTermMemory(user_id=name) for name in ("ada", "bob", "eve")]
    assert len({id(m.embedding_model) for m in memories}) == 1
    assert len({id(m.store) for m in memories}) == 3


class ListStore(VDBStoreBase):
    """A store of its own: documents in a list, searched by cosine similarity, no filters."""

    def __init__(self, dimensions: int) -> None:
        super().__init__()
        self.dimensions = dimensions
        self.docs: dict[str, Document] = {}

    async def add(self, documents: list[Document], **kwargs: Any) -> None:
        for doc in documents:
            self.docs[doc.id] = doc

    async def delete(
        self,
        ids: str | Sequence[str] | None = None,
        doc_ids: str | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        for key in [ids] if isinstance(ids, str) else ids or []:
            self.docs.pop(key, None)
        for key, doc in list(self.docs.items()):
            if doc.metadata.doc_id in (doc_ids or []):
                del self.docs[key]

    async def search(
        self,
        query_embedding: list[float],
        limit: int,
        score_threshold: float | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        assert not kwargs, "this store takes no filter"
        await anyio.lowlevel.checkpoint()
        scored = []
        for doc in self.docs.values():
            assert doc.embedding is not None
            score = sum(a * b for a, b in zip(query_embedding, doc.embedding, strict=True))
            if score_threshold is None or score >= score_threshold:
                scored.append(
                    Document(doc.metadata, id=doc.id, embedding=doc.embedding, score=score)
                )
        scored.sort(key=lambda d: -(d.score or 0.0))
        return scored[:limit]

    def get_client(self) -> Any:
        return self.docs


async def test_any_store_works_without_a_filter(embedding: LocalTextEmbedding) -> None:
    store = ListStore(embedding.dimensions)
    ada = VectorLongTermMemory(embedding, store, user_id="ada", score_threshold=-1.0)
    bob = VectorLongTermMemory(
        embedding, store, user_id="bob", score_threshold=-1.0, dedup_threshold=1.0
    )
    # Bob's many facts come first in every search: Ada's must still be found.
    await bob.add_facts([f"Bob's note number {i}." for i in range(30)])
    await ada.add_facts(["I play the piano.", "I live in Paris."])
    found = await ada.search(["Bob's note number 3."], limit=2)
    assert sorted(fact for fact, _ in found) == ["I live in Paris.", "I play the piano."]
    assert len(await bob.search(["note"], limit=50)) == 30


async def test_milvus_lite_scopes_by_its_own_filter(
    embedding: LocalTextEmbedding, tmp_path: Path
) -> None:
    async with MilvusLiteStore(str(tmp_path / "m.db"), "ltm", embedding.dimensions) as store:
        ada = VectorLongTermMemory(embedding, store, user_id='ada "the first"')
        bob = VectorLongTermMemory(embedding, store, user_id="bob")
        await ada.add_facts(["I live in Paris."])
        await bob.add_facts(["I live in Berlin."])
        await ada.add_facts(["I live in Paris."])
        question = Msg("user", "Where do I live?", "user")
        assert await ada.retrieve(question) == "I live in Paris."
        assert await bob.retrieve(question) == "I live in Berlin."


def test_bad_arguments_say_what_to_do(embedding: LocalTextEmbedding) -> None:
    with pytest.raises(ValueError, match=r"dimensions=embedding_model\.dimensions"):
        VectorLongTermMemory(embedding, QdrantStore(":memory:", "x", 8))
    with pytest.raises(ValueError, match="user_id"):
        VectorLongTermMemory(embedding, user_id="")
    with pytest.raises(ValueError, match="dedup_threshold"):
        VectorLongTermMemory(embedding, dedup_threshold=2)
    with pytest.raises(TypeError, match="embedding_model"):
        VectorLongTermMemory("all-MiniLM-L6-v2")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="store"):
        VectorLongTermMemory(embedding, ":memory:")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="record_roles"):
        VectorLongTermMemory(embedding, record_roles="user")


async def test_concurrent_records_of_a_new_fact_store_it_once(
    embedding: LocalTextEmbedding,
) -> None:
    async with _store(embedding) as store:
        memory = VectorLongTermMemory(embedding, store, user_id="ada")
        results: list[dict[str, list[str]]] = []

        async def record() -> None:
            results.append(await memory.add_facts(["I am vegetarian."]))

        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(record)
        assert sorted(len(r["added"]) for r in results) == [0, 0, 0, 1]
        assert await _all_facts(memory) == ["I am vegetarian."]


def test_one_memory_serves_asyncio_then_trio(embedding: LocalTextEmbedding) -> None:
    # Built outside any event loop, used by one run after another on each backend.
    memory = VectorLongTermMemory(embedding, user_id="ada")

    async def remember() -> None:
        await memory.add_facts(["I play the piano."])

    async def recall() -> str:
        await memory.add_facts(["I live in Paris."])
        return await memory.retrieve(Msg("user", "What instrument do I play?", "user"), limit=1)

    anyio.run(remember)
    assert anyio.run(recall, backend="trio") == "I play the piano."
    anyio.run(memory.close)


class GatedStore(ListStore):
    """A store whose writes wait for a go-ahead, like a slow database."""

    def __init__(self, dimensions: int) -> None:
        super().__init__(dimensions)
        self.writing = anyio.Event()
        self.go_ahead = anyio.Event()

    async def add(self, documents: list[Document], **kwargs: Any) -> None:
        self.writing.set()
        await self.go_ahead.wait()
        await super().add(documents)


async def test_an_interrupted_replacement_is_completed(embedding: LocalTextEmbedding) -> None:
    store = GatedStore(embedding.dimensions)
    store.go_ahead.set()
    memory = VectorLongTermMemory(embedding, store, user_id="ada")
    await memory.add_facts(["I have two children."])
    store.go_ahead = anyio.Event()
    store.writing = anyio.Event()
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def interrupt_the_write() -> None:
                await store.writing.wait()
                scope.cancel()
                store.go_ahead.set()

            tg.start_soon(interrupt_the_write)
            await memory.add_facts(["I have three children."])
    assert scope.cancelled_caught
    assert await _all_facts(memory) == ["I have three children."]
