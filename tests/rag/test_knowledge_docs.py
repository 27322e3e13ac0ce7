"""Retrieval over the project's own documentation, offline, end to end.

``docs/*.md`` is read with ``TextReader`` (sentence chunks), embedded with the local
all-MiniLM-L6-v2 model and stored in ``QdrantStore(":memory:")`` through ``SimpleKnowledge``;
then each question of ``_doc_questions.py`` is asked and the rank of the chunk holding its
phrase is checked. Measured here (25 questions, about 1,500 chunks): recall@1 0.56,
recall@5 0.80 (0.65 and 0.81 with fewer pages: a new paragraph beside the chunk asked for can
outrank it); the floors below leave room for two more misses (the docs keep changing).

The corpus is embedded once per module (about 30 s of CPU for the local model; a cache in a
temporary folder then serves every test on both backends), so each test only stores the
vectors and runs its queries.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from agentscope_rt.embedding import FileEmbeddingCache, LocalTextEmbedding
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.rag import Document, QdrantStore, SimpleKnowledge, TextReader, read_files
from agentscope_rt.tool import Toolkit

from ..react._support import call, history, make_agent, response, text, texts_of, user
from ._doc_questions import QUESTIONS

DOCS = Path(__file__).parents[2] / "docs"
CHUNK_SIZE = 512
RECALL_AT_1_FLOOR = 0.48
RECALL_AT_5_FLOOR = 0.72
# Docs are edited over time; a question whose phrase no longer sits in exactly one chunk is
# left out of the figures, as long as this many remain.
MIN_QUESTIONS = 22


def _normalise(value: str) -> str:
    return re.sub(r"\s+", " ", value)


@attrs.frozen
class Corpus:
    docs: list[Document]
    cache_dir: Path
    # question -> the id of the one chunk holding its phrase
    expected: dict[str, str]


async def _read_and_embed(cache_dir: Path) -> list[Document]:
    docs = await read_files(
        TextReader(chunk_size=CHUNK_SIZE, split_by="sentence"),
        sorted(DOCS.glob("*.md")),
        show_progress=False,
    )
    # The request SimpleKnowledge.add_documents makes, so every test finds it in the cache.
    model = LocalTextEmbedding(embedding_cache=FileEmbeddingCache(cache_dir))
    await model([d.metadata.content for d in docs])
    return docs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    cache_dir = tmp_path_factory.mktemp("embeddings")
    docs = anyio.run(_read_and_embed, cache_dir)
    expected: dict[str, str] = {}
    for question, phrase in QUESTIONS:
        holders = [d.id for d in docs if _normalise(phrase) in _normalise(d.metadata.content.text)]
        if len(holders) == 1:
            expected[question] = holders[0]
    assert len(expected) >= MIN_QUESTIONS, (
        f"only {len(expected)} phrases of tests/rag/_doc_questions.py are found in exactly one "
        "chunk of docs/*.md: the docs changed, update the questions"
    )
    return Corpus(docs, cache_dir, expected)


@pytest.fixture
async def knowledge(corpus: Corpus) -> AsyncIterator[SimpleKnowledge]:
    model = LocalTextEmbedding(embedding_cache=FileEmbeddingCache(corpus.cache_dir))
    async with QdrantStore(":memory:", "docs", dimensions=model.dimensions) as store:
        kb = SimpleKnowledge(embedding_store=store, embedding_model=model)
        await kb.add_documents([attrs.evolve(d, embedding=None) for d in corpus.docs])
        yield kb


async def test_recall_over_the_docs(corpus: Corpus, knowledge: SimpleKnowledge) -> None:
    ranks: dict[str, int | None] = {}
    for question, chunk_id in corpus.expected.items():
        hits = await knowledge.retrieve(question, limit=5)
        assert len(hits) == 5
        scores = [h.score or 0.0 for h in hits]
        assert scores == sorted(scores, reverse=True)
        ids = [h.id for h in hits]
        ranks[question] = ids.index(chunk_id) + 1 if chunk_id in ids else None
    n = len(ranks)
    recall_1 = sum(r == 1 for r in ranks.values()) / n
    recall_5 = sum(r is not None for r in ranks.values()) / n
    report = json.dumps(ranks, indent=1)
    print(f"recall@1 {recall_1:.2f}, recall@5 {recall_5:.2f} over {n} questions")
    assert recall_1 >= RECALL_AT_1_FLOOR, f"recall@1 {recall_1:.2f} over {n}: {report}"
    assert recall_5 >= RECALL_AT_5_FLOOR, f"recall@5 {recall_5:.2f} over {n}: {report}"


async def test_the_agent_answers_with_the_retrieved_chunk_in_its_prompt(
    corpus: Corpus, knowledge: SimpleKnowledge
) -> None:
    question = "Can the file tools read a FIFO or a socket?"
    chunk = next(d for d in corpus.docs if d.id == corpus.expected[question])
    model = ScriptedChatModel([response(text("No: they are refused before being opened."))])
    agent = make_agent(model, knowledge=knowledge, enable_rewrite_query=False)
    await agent(user(question))
    prompt = json.dumps(model.calls[0].messages, ensure_ascii=False)
    assert json.dumps(chunk.metadata.content.text, ensure_ascii=False)[1:-1] in prompt
    retrieved = texts_of((await history(agent.memory))[1])
    assert retrieved.startswith("<retrieved_knowledge>")
    assert retrieved.count("\n") >= 5  # five chunks between the wrapper's texts


async def test_a_model_searches_the_docs_with_the_retrieve_knowledge_tool(
    corpus: Corpus, knowledge: SimpleKnowledge
) -> None:
    question = "Does HttpStatelessClient need connect and close calls?"
    chunk = next(d for d in corpus.docs if d.id == corpus.expected[question])
    toolkit = Toolkit()
    toolkit.register_tool_function(knowledge.retrieve_knowledge)
    model = ScriptedChatModel(
        [
            response(call("retrieve_knowledge", "k1", query=question, limit=3)),
            response(text("No, each call opens and closes its own session.")),
        ]
    )
    agent = make_agent(model, toolkit)
    reply = await agent(user(question))
    assert reply.get_text_content() == "No, each call opens and closes its own session."
    result_msg = (await history(agent.memory))[2]
    blocks: list[Any] = [b for b in result_msg.get_content_blocks() if b.type == "tool_result"]
    outputs = [b.text for b in blocks[0].output]
    assert len(outputs) == 3
    assert all(o.startswith("Score: ") for o in outputs)
    assert any(o.endswith(f"Content: {chunk.metadata.content.text}") for o in outputs)
