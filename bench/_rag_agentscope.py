"""AgentScope's half of the RAG benchmark; run by ``bench_rag.py`` with AgentScope's venv.

Usage: ``python _rag_agentscope.py`` prints one JSON object with the same fields as
``bench_rag._run_ours``: the corpus, the hash embedding, the store and the measurements are
``bench_rag.py``'s (imported from there: that module loads agentscope-rt only in its own
worker), with AgentScope's ``SimpleKnowledge``, ``QdrantStore``, ``Document`` and
``EmbeddingModelBase`` in place of agentscope-rt's.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pathlib
import sys
import time
from typing import Any, ClassVar

os.environ["AGENTSCOPE_DISABLE_CONSOLE_OUTPUT"] = "true"
logging.disable(logging.CRITICAL)
sys.path.insert(0, str(pathlib.Path(__file__).parent))

from agentscope.embedding import EmbeddingModelBase, EmbeddingResponse  # noqa: E402
from agentscope.message import TextBlock  # noqa: E402
from agentscope.rag import DocMetadata, Document, QdrantStore, SimpleKnowledge  # noqa: E402
from bench_rag import (  # noqa: E402
    CHUNKS,
    DIMS,
    EMBED_SLICE,
    IDLE_S,
    QUERIES,
    TICK_S,
    chunk_texts,
    embedding_table,
    latency_summary,
    lateness_summary,
    query_texts,
)

TABLE = embedding_table()


class HashEmbedding(EmbeddingModelBase):
    supported_modalities: ClassVar[list[str]] = ["text"]

    def __init__(self) -> None:
        super().__init__("hash", DIMS)

    async def __call__(self, text: list[Any], **kwargs: Any) -> EmbeddingResponse:
        vectors = []
        for i, item in enumerate(text):
            if i % EMBED_SLICE == 0:
                await asyncio.sleep(0)
            vectors.append(TABLE[item if isinstance(item, str) else item["text"]])
        return EmbeddingResponse(embeddings=vectors)


async def run() -> dict[str, Any]:
    texts = chunk_texts(CHUNKS)
    docs = [
        Document(
            metadata=DocMetadata(
                content=TextBlock(type="text", text=t),
                doc_id=f"doc{i // 100}",
                chunk_id=i % 100,
                total_chunks=100,
            )
        )
        for i, t in enumerate(texts)
    ]
    lates: list[float] = []
    idle: list[float] = []
    query_lates: list[float] = []
    state = {"running": True}

    async def ticker(sink: list[float]) -> None:
        due = time.perf_counter() + TICK_S
        while state["running"]:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            now = time.perf_counter()
            sink.append(max(0.0, now - due))
            due = now + TICK_S

    store = QdrantStore(":memory:", "bench", DIMS)
    kb = SimpleKnowledge(embedding_store=store, embedding_model=HashEmbedding())
    await kb.add_documents(docs[:1])  # the collection is created, the engine imported
    task = asyncio.ensure_future(ticker(idle))
    await asyncio.sleep(IDLE_S)
    state["running"] = False
    await task
    state["running"] = True
    task = asyncio.ensure_future(ticker(lates))
    await asyncio.sleep(0)
    start, cpu_start = time.perf_counter(), time.process_time()
    await kb.add_documents(docs)
    ingest = time.perf_counter() - start
    ingest_cpu = time.process_time() - cpu_start
    state["running"] = False
    await task
    samples = []
    state["running"] = True
    task = asyncio.ensure_future(ticker(query_lates))
    await asyncio.sleep(0)
    cpu_start = time.process_time()
    for query in query_texts(QUERIES):
        start = time.perf_counter()
        hits = await kb.retrieve(query, limit=5)
        samples.append(time.perf_counter() - start)
        assert len(hits) == 5
    query_cpu = time.process_time() - cpu_start
    state["running"] = False
    await task
    count = (await store.get_client().count("bench")).count
    assert count == CHUNKS, count
    return {
        "ingest_s": ingest,
        "chunks_per_s": CHUNKS / ingest,
        "ingest_cpu_us_per_chunk": ingest_cpu / CHUNKS * 1e6,
        "query_cpu_us": query_cpu / QUERIES * 1e6,
        "lateness": lateness_summary(lates),
        "query_lateness": lateness_summary(query_lates),
        "idle_lateness": lateness_summary(idle),
        "query": latency_summary(samples),
    }


if __name__ == "__main__":
    sys.stdout.write(json.dumps(asyncio.run(run())))
