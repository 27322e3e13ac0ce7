"""A local knowledge base in a folder: the embedded vector store, reopened, filtered, and past
the size where it switches to an approximate index.

1. Sentences are embedded by the bundled all-MiniLM-L6-v2 model (``LocalTextEmbedding``,
   offline) and added through ``SimpleKnowledge`` to a ``LocalVectorStore`` in a folder; the
   store is closed, and a new one on the same folder finds the same chunks, under the same ids.
2. A search filtered on one document, and that document deleted.
3. A collection larger than the store's exact limit (set low here, 2,000 chunks, to keep the
   run short; by default 16 MiB of vectors) is searched through its HNSW index: the example
   measures recall@5 against exact search and prints it.

Run: ``python examples/73_local_vector_store.py`` (asyncio) or
``python examples/73_local_vector_store.py trio``. Needs the ``embedding`` and
``vector`` extras (both in ``local``).

What to look for: the watering sentence found, the same chunk and id after reopening the
folder, only kitchen notes in the filtered search and none after deleting them; then 6,000
chunks added past the exact limit and a recall@5 near 1.0 for the approximate index.
"""

from __future__ import annotations

import sys
import tempfile
import time

import anyio
import numpy as np

from agentscope_rt.embedding import LocalTextEmbedding
from agentscope_rt.message import TextBlock
from agentscope_rt.rag import DocMetadata, Document, LocalVectorStore, SimpleKnowledge

FACTS = {
    "garden": [
        "Tomatoes need six hours of sun a day.",
        "Basil grows well beside tomatoes.",
        "Water the garden early in the morning.",
    ],
    "kitchen": [
        "A sharp knife is safer than a dull one.",
        "Rest a steak for five minutes after cooking.",
    ],
}


def chunks() -> list[Document]:
    return [
        Document(DocMetadata(TextBlock(text=text), doc_id, i, len(texts)))
        for doc_id, texts in FACTS.items()
        for i, text in enumerate(texts)
    ]


async def knowledge_in_a_folder(folder: str) -> None:
    embedding = LocalTextEmbedding()
    async with LocalVectorStore(folder, "notes", embedding.dimensions) as store:
        kb = SimpleKnowledge(embedding_store=store, embedding_model=embedding)
        await kb.add_documents(chunks())
        first = await kb.retrieve("When should I water the plants?", limit=1)
    print("found:", first[0].metadata.content["text"], f"(score {first[0].score:.2f})")

    async with LocalVectorStore(folder, "notes", embedding.dimensions) as store:
        kb = SimpleKnowledge(embedding_store=store, embedding_model=embedding)
        again = await kb.retrieve("When should I water the plants?", limit=1)
        print("after reopening, the same chunk and id:", again[0].id == first[0].id)
        kitchen = await kb.retrieve(
            "How long should meat rest?", limit=5, filter={"doc_id": "kitchen"}
        )
        print("kitchen only:", [d.metadata.content["text"] for d in kitchen])
        await store.delete(doc_ids="kitchen")
        left = await kb.retrieve("cooking", limit=5)
        print("after deleting the kitchen notes:", sorted({d.metadata.doc_id for d in left}))


async def beyond_the_exact_limit() -> None:
    rng = np.random.default_rng(0)
    basis = rng.standard_normal((16, 64))
    data = rng.standard_normal((6000, 16)) @ basis + 0.5 * rng.standard_normal((6000, 64))
    docs = [
        Document(DocMetadata(TextBlock(text=str(i)), f"d{i // 100}", i % 100, 100), embedding=v)
        for i, v in enumerate(data.tolist())
    ]
    async with LocalVectorStore(":memory:", "big", 64, exact_limit=2000) as store:
        start = time.perf_counter()
        await store.add(docs)
        print(f"added {len(docs):,} chunks in {time.perf_counter() - start:.1f} s (index built)")
        unit = data / np.linalg.norm(data, axis=1, keepdims=True)
        queries = rng.standard_normal((100, 16)) @ basis
        hits = 0
        for q in queries:
            exact = set(np.argsort(-(unit @ q))[:5].tolist())
            found = await store.search(q.tolist(), limit=5)
            hits += len(exact & {int(d.metadata.content["text"]) for d in found})
        print(f"recall@5 against exact search: {hits / 500:.2f}")


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        await knowledge_in_a_folder(folder + "/kb")
    await beyond_the_exact_limit()


if __name__ == "__main__":
    anyio.run(main, backend="trio" if "trio" in sys.argv[1:] else "asyncio")
