"""How LocalVectorStore ingests: a chunk's id and stored JSON come from one encoding and match
AgentScope's scheme; SimpleKnowledge hands the store its own slices; a batch of one slice is
checked and written in one trip, a larger one checked whole before anything is written; and a
cancelled add of either kind leaves whole batches; the index inserts on every core but one."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import numpy as np
import pytest

from agentscope_rt.embedding import EmbeddingModelBase, EmbeddingResponse
from agentscope_rt.message import ImageBlock, TextBlock
from agentscope_rt.rag import DocMetadata, Document, LocalVectorStore, SimpleKnowledge
from agentscope_rt.rag._document import chunk_id_and_json, chunk_id_of
from agentscope_rt.rag._simple_knowledge import PREPARE_SLICE
from agentscope_rt.rag._store._local_collection import add_slice, index_threads

DIM = 64


def docs(n: int, prefix: str = "t") -> list[Document]:
    rng = np.random.default_rng(5)
    return [
        Document(
            DocMetadata(TextBlock(text=f"{prefix}{i} é ✓"), f"doc{i // 50}", i % 50, 50),
            embedding=rng.standard_normal(DIM).tolist(),
        )
        for i in range(n)
    ]


class TableEmbedding(EmbeddingModelBase):
    """Looks each text's vector up in a table (the chunks' own embeddings)."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        super().__init__("table", DIM)
        self.table = table

    async def __call__(self, text: list[Any], **kwargs: Any) -> EmbeddingResponse:
        return EmbeddingResponse(
            embeddings=[self.table[t if isinstance(t, str) else t["text"]] for t in text]
        )


@pytest.mark.parametrize(
    ("doc_id", "position", "content"),
    [
        ("d", 3, {"type": "text", "text": 'héllo \u2028 "q"\n\t日本'}),
        ("文書", 0, {"type": "image", "source": {"type": "url", "url": "http://x/a.png"}}),
        ("x", 7, {"type": "text", "text": "", "extra": [1.5, None, True, 10**20]}),
    ],
)
def test_the_id_and_the_stored_json_are_agentscopes(
    doc_id: str, position: int, content: dict[str, Any]
) -> None:
    key = json.dumps(
        {"doc_id": doc_id, "chunk_id": position, "content": content}, ensure_ascii=False
    )
    chunk_id, content_json = chunk_id_and_json(doc_id, position, content)
    assert chunk_id == str(uuid.uuid3(uuid.NAMESPACE_DNS, key))
    assert content_json == json.dumps(content, ensure_ascii=False)
    assert chunk_id_of(doc_id, position, content) == chunk_id


def test_content_json_cannot_encode_is_refused() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        chunk_id_and_json("d", 0, {"type": "text", "text": object()})


async def test_simple_knowledge_hands_the_store_its_own_slices(tmp_path: Path) -> None:
    step = add_slice(DIM)
    total = 2 * step + 22
    chunks = docs(total)
    table = {d.metadata.content["text"]: list(d.embedding or []) for d in chunks}
    async with LocalVectorStore(str(tmp_path), "kb", DIM) as store:
        sizes: list[int] = []
        original_add = store.add

        async def counting_add(documents: list[Document], **kwargs: Any) -> None:
            sizes.append(len(documents))
            await original_add(documents, **kwargs)

        store.add = counting_add  # type: ignore[method-assign]
        kb = SimpleKnowledge(store, TableEmbedding(table))
        await kb.add_documents(chunks)
        assert sizes == [step, step, 22]
        assert store.get_client().count() == total
    # Reopened: every chunk's text (stored as its JSON) and id read back.
    async with LocalVectorStore(str(tmp_path), "kb", DIM) as store:
        for i in (0, step + 1, total - 1):
            found = await store.search(table[f"t{i} é ✓"], limit=1)
            assert [d.metadata.content["text"] for d in found] == [f"t{i} é ✓"]
            meta = chunks[i].metadata
            assert found[0].id == chunk_id_of(meta.doc_id, meta.chunk_id, meta.content)


async def test_a_bad_chunk_in_the_last_slice_stores_nothing() -> None:
    chunks = docs(3 * add_slice(DIM))
    assert chunks[-1].embedding is not None
    chunks[-1].embedding[5] = float("nan")
    async with LocalVectorStore(":memory:", "c", DIM) as store:
        with pytest.raises(
            ValueError, match=rf"documents\[{add_slice(DIM) - 1}\] .*nan at position 5"
        ):
            await store.add(chunks)
        assert store.get_client().count() == 0


async def test_an_image_chunk_is_stored_as_its_json() -> None:
    image = Document(
        DocMetadata(ImageBlock(source={"type": "url", "url": "http://x/a.png"}), "d", 0, 1),
        embedding=[1.0] * DIM,
    )
    async with LocalVectorStore(":memory:", "c", DIM) as store:
        await store.add([image])
        found = await store.search([1.0] * DIM, limit=1)
    assert found[0].metadata.content.to_dict() == image.metadata.content.to_dict()


@pytest.mark.parametrize("slices", [1, 3])
async def test_a_cancelled_add_leaves_its_whole_batch_or_nothing(slices: int) -> None:
    chunks = docs(slices * add_slice(DIM))
    async with LocalVectorStore(":memory:", "c", DIM) as store:
        await store.add(docs(1, prefix="first"))  # the collection is open
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(store.add, chunks)
                await anyio.lowlevel.checkpoint()  # the add has started its first trip
                scope.cancel()
        held = store.get_client().count() - 1
        assert held in (0, len(chunks))
        await store.add(chunks)  # redone: overwritten, not duplicated
        assert store.get_client().count() == len(chunks) + 1


async def test_other_tasks_run_while_a_large_batch_is_prepared() -> None:
    chunks = docs(3 * PREPARE_SLICE)
    table = {d.metadata.content["text"]: list(d.embedding or []) for d in chunks}
    ticks = 0
    ticks_when_embedding: list[int] = []
    done = anyio.Event()

    class RecordingEmbedding(TableEmbedding):
        async def __call__(self, text: list[Any], **kwargs: Any) -> EmbeddingResponse:
            ticks_when_embedding.append(ticks)
            return await super().__call__(text, **kwargs)

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await anyio.lowlevel.checkpoint()

    async with LocalVectorStore(":memory:", "c", DIM) as store:
        kb = SimpleKnowledge(store, RecordingEmbedding(table))
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            await anyio.lowlevel.checkpoint()
            start = ticks
            await kb.add_documents(chunks)
            done.set()
        # Two checkpoints while checking the chunks: the ticker ran before the model was called
        # (once at least: trio may run this task first in the batch after each checkpoint).
        assert ticks_when_embedding[0] - start >= 1
        assert store.get_client().count() == len(chunks)


def test_the_index_inserts_on_every_core_but_one() -> None:
    cores = len(os.sched_getaffinity(0))
    assert index_threads() == max(1, cores - 1)
