"""Vector stores refuse vectors no distance can be computed for: infinities, NaN and values
beyond float32 (which the databases keep as infinities). One such chunk would otherwise rank
first, with score NaN, in every search without a threshold."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentscope_rt.message import TextBlock
from agentscope_rt.rag import DocMetadata, Document, MilvusLiteStore, QdrantStore, VDBStoreBase

DIM = 4
FLOAT32_MAX = 3.4028234663852886e38
NON_FINITE = [math.inf, -math.inf, math.nan, 1e39, -FLOAT32_MAX * 2]


def _doc(text: str, vector: list[float], chunk_id: int = 0) -> Document:
    return Document(DocMetadata(TextBlock(text=text), "doc", chunk_id, 3), embedding=vector)


@pytest.fixture(params=["qdrant", "milvus"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[VDBStoreBase]:
    made: VDBStoreBase
    if request.param == "qdrant":
        made = QdrantStore(":memory:", "non_finite", DIM)
    else:
        made = MilvusLiteStore(str(tmp_path / "non_finite.db"), "non_finite", DIM)
    yield made
    await made.close()


@pytest.mark.parametrize("bad", NON_FINITE, ids=["inf", "-inf", "nan", "1e39", "-2max32"])
async def test_a_non_finite_vector_is_refused_before_anything_is_written(
    store: VDBStoreBase, bad: float
) -> None:
    good = _doc("good", [1.0, 0.0, 0.0, 0.0])
    non_finite = _doc("non_finite", [bad, 0.0, 0.0, 0.0], chunk_id=1)
    with pytest.raises(ValueError, match=r"documents\[1\].*finite"):
        await store.add([good, non_finite])
    # Nothing of the batch was written: the good chunk is not there either.
    assert await store.search([1.0, 0.0, 0.0, 0.0], limit=5) == []


@pytest.mark.parametrize("bad", NON_FINITE, ids=["inf", "-inf", "nan", "1e39", "-2max32"])
async def test_a_non_finite_query_is_refused(store: VDBStoreBase, bad: float) -> None:
    await store.add([_doc("good", [1.0, 0.0, 0.0, 0.0])])
    with pytest.raises(ValueError, match=r"query_embedding.*finite"):
        await store.search([0.0, bad, 0.0, 0.0], limit=5)
