"""Vector stores refuse vectors whose components fit float32 but whose norm is too large for the
databases' float32 arithmetic. Qdrant's and Milvus Lite's cosine normalisation squares and adds
the components in float32: past about 1.8e19 the sum overflows and such a chunk scores 0.0
against every query (such a query scores every chunk 0.0); past about 9.2e18 the squared
Euclidean distance between two such vectors overflows and they are at an infinite distance."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentscope_rt.message import TextBlock
from agentscope_rt.rag import DocMetadata, Document, MilvusLiteStore, QdrantStore, VDBStoreBase

DIM = 4
FLOAT32_MAX = 3.4028234663852886e38
NORM_MAX = 9e18  # a little below sqrt(FLOAT32_MAX) / 2

# Every component is a finite float32 number; the norm is too large.
HUGE = [
    [2e19, 0.0, 0.0, 0.0],  # its squared norm overflows float32
    [-1.5e19, 1.5e19, 0.0, 0.0],
    [1e19, 1e19, 1e19, 1e19],
    [FLOAT32_MAX, 0.0, 0.0, 0.0],
    [1.2e19, 0.0, 0.0, 0.0],  # fits, but its distance to its opposite overflows
    [0.0, 0.0, 0.0, -9.1e18],
]
HUGE_IDS = ["2e19", "two-1.5e19", "four-1e19", "max32", "1.2e19", "-9.1e18"]

STORES = [("qdrant", "Cosine"), ("qdrant", "Euclid"), ("milvus", "COSINE"), ("milvus", "L2")]


def _doc(text: str, vector: list[float], chunk_id: int = 0) -> Document:
    return Document(DocMetadata(TextBlock(text=text), "doc", chunk_id, 3), embedding=vector)


@pytest.fixture(params=STORES, ids=[f"{kind}-{distance}" for kind, distance in STORES])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[VDBStoreBase]:
    kind, distance = request.param
    made: VDBStoreBase
    if kind == "qdrant":
        made = QdrantStore(":memory:", "huge", DIM, distance=distance)
    else:
        made = MilvusLiteStore(str(tmp_path / "huge.db"), "huge", DIM, distance=distance)
    yield made
    await made.close()


def _norm(vector: list[float]) -> float:
    return math.hypot(*vector)


@pytest.mark.parametrize("vector", HUGE, ids=HUGE_IDS)
async def test_a_vector_whose_norm_overflows_float32_is_refused_before_anything_is_written(
    store: VDBStoreBase, vector: list[float]
) -> None:
    good = _doc("good", [1.0, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"documents\[1\] has a norm of .*finite") as info:
        await store.add([good, _doc("huge", vector, chunk_id=1)])
    assert f"{_norm(vector):.7g}" in str(info.value)
    # Nothing of the batch was written: the good chunk is not there either.
    assert await store.search([1.0, 0.0, 0.0, 0.0], limit=5) == []


@pytest.mark.parametrize("vector", HUGE, ids=HUGE_IDS)
async def test_a_query_whose_norm_overflows_float32_is_refused(
    store: VDBStoreBase, vector: list[float]
) -> None:
    await store.add([_doc("good", [1.0, 0.0, 0.0, 0.0])])
    with pytest.raises(ValueError, match=r"query_embedding has a norm of .*finite"):
        await store.search(vector, limit=5)


async def test_large_vectors_within_the_bound_are_stored_and_scored_in_order(
    store: VDBStoreBase,
) -> None:
    big = NORM_MAX * 0.99
    await store.add(
        [
            _doc("big", [big, 0.0, 0.0, 0.0]),
            _doc("diagonal", [big / 2, big / 2, big / 2, big / 2], chunk_id=1),
            _doc("opposite", [-big, 0.0, 0.0, 0.0], chunk_id=2),
        ]
    )
    results = await store.search([big, 0.0, 0.0, 0.0], limit=5)
    # Cosine and Euclidean order alike here; every score is a number and they all differ.
    assert [d.metadata.content["text"] for d in results] == ["big", "diagonal", "opposite"]
    scores = [d.score for d in results]
    assert all(s is not None and math.isfinite(s) for s in scores)
    assert len(set(scores)) == 3
