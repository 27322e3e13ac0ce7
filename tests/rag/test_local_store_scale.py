"""LocalVectorStore at scale: the approximate index holds half-precision vectors (ranked again
exactly), a saved index reopens with the store's search settings, an index saved in float32
by an earlier version still loads, a damaged index file is rebuilt, and catching up with the
index after overwrites and cancelled adds leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.lowlevel
import numpy as np
from usearch.index import Index

from agentscope_rt.rag import LocalVectorStore

from .test_local_store import DIM, docs_of, exact_top, texts, vectors


async def recall(store: LocalVectorStore, data: np.ndarray, seed: int) -> float:
    hits = 0
    queries = vectors(50, seed)
    for query in queries:
        found = await store.search(query.tolist(), limit=5)
        hits += len({f"t{i}" for i in exact_top(data, query, 5)} & set(texts(found)))
    return hits / (5 * len(queries))


async def test_the_saved_index_holds_half_precision_and_reopens_with_its_recall(
    tmp_path: Path,
) -> None:
    data = vectors(3000, 21)
    async with LocalVectorStore(tmp_path, "c", DIM, exact_limit=300) as store:
        await store.add(docs_of(data))
        before = await recall(store, data, 22)
        await store.build_index()
    meta = Index.metadata(str(tmp_path / "c.usearch"))
    assert str(meta["kind_scalar"]).endswith("F16") and meta["count_present"] == 3000
    async with LocalVectorStore(tmp_path, "c", DIM, exact_limit=300) as store:
        assert store.get_client().backlog() == 0  # loaded, not rebuilt
        assert await recall(store, data, 22) == before >= 0.95


async def test_dot_and_euclid_indexes_keep_float32_range(tmp_path: Path) -> None:
    # Values far beyond float16's 65,504: bfloat16 keeps float32's range.
    data = vectors(2000, 23) * 1e6
    queries = vectors(50, 24) * 1e6
    for distance in ("Dot", "Euclid"):
        async with LocalVectorStore(tmp_path, distance, DIM, distance, exact_limit=300) as store:
            await store.add(docs_of(data))
            await store.build_index()
            hits = 0
            for query in queries:
                near = -np.linalg.norm(data - query, axis=1)
                keys = data @ query if distance == "Dot" else near
                expected = {f"t{i}" for i in np.argsort(-keys)[:5]}
                hits += len(expected & set(texts(await store.search(query.tolist(), limit=5))))
            assert hits / (5 * len(queries)) >= 0.95
        meta = Index.metadata(str(tmp_path / f"{distance}.usearch"))
        assert str(meta["kind_scalar"]).endswith("BF16")


async def test_an_index_saved_in_float32_still_loads(tmp_path: Path) -> None:
    data = vectors(2000, 25)
    async with LocalVectorStore(tmp_path, "c", DIM, exact_limit=300) as store:
        await store.add(docs_of(data))
    # The index file as earlier versions wrote it: float32 vectors, keyed by slot.
    unit = (data / np.linalg.norm(data, axis=1, keepdims=True)).astype(np.float32)
    old = Index(ndim=DIM, metric="ip", dtype="f32", connectivity=16, expansion_add=128)
    old.add(np.arange(2000), unit)
    old.save(str(tmp_path / "c.usearch"))
    async with LocalVectorStore(tmp_path, "c", DIM, exact_limit=300) as store:
        assert store.get_client().backlog() == 0  # loaded, not rebuilt
        assert await recall(store, data, 26) >= 0.95
        await store.add(docs_of(vectors(10, 27), prefix="new"))
        assert store.get_client().backlog() == 0
        assert store.get_client().count() == 2010


async def test_a_damaged_index_file_is_rebuilt(tmp_path: Path) -> None:
    data = vectors(2000, 28)
    async with LocalVectorStore(tmp_path, "c", DIM, exact_limit=300) as store:
        await store.add(docs_of(data))
    (tmp_path / "c.usearch").write_bytes(b"not an index")
    async with LocalVectorStore(tmp_path, "c", DIM, exact_limit=300) as store:
        assert store.get_client().backlog() == 2000  # searched exactly until rebuilt
        assert await recall(store, data, 29) == 1.0
        await store.build_index()
        assert store.get_client().backlog() == 0
        assert await recall(store, data, 29) >= 0.95
    assert Index.metadata(str(tmp_path / "c.usearch"))["count_present"] == 2000


async def test_overwrites_below_the_indexed_chunks_are_indexed_again() -> None:
    data = vectors(3000, 30)
    docs = docs_of(data)
    async with LocalVectorStore(":memory:", "c", DIM, exact_limit=300) as store:
        await store.add(docs)
        # The first chunks again, with the vectors of the last ones: their slots are the
        # lowest, below everything indexed since.
        moved = docs_of(data[:20])
        for doc, row in zip(moved, data[-20:], strict=True):
            doc.embedding = row.tolist()
        await store.add(moved)
        assert store.get_client().backlog() == 0
        for n in range(20):
            found = texts(await store.search(data[-20 + n].tolist(), limit=2))
            assert sorted(found) == sorted([f"t{n}", f"t{3000 - 20 + n}"])


async def test_a_cancelled_catch_up_leaves_chunks_found_then_indexed() -> None:
    data = vectors(6000, 31)
    async with LocalVectorStore(":memory:", "c", DIM, exact_limit=300) as store:
        await store.add(docs_of(data[:400]))

        async def cancel_once_written(scope: anyio.CancelScope) -> None:
            # The store's count is plain data (no event to wait for): look after each step.
            while store.get_client().count() < 6000:
                await anyio.lowlevel.checkpoint()
            scope.cancel()  # most likely while the index catches up

        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_once_written, tg.cancel_scope)
            await store.add(docs_of(data)[400:])
        assert store.get_client().count() == 6000
        for i in range(0, 6000, 211):  # waiting or indexed, every chunk is found
            assert texts(await store.search(data[i].tolist(), limit=1)) == [f"t{i}"]
        await store.build_index()
        assert store.get_client().backlog() == 0
        for i in range(0, 6000, 211):
            assert texts(await store.search(data[i].tolist(), limit=1)) == [f"t{i}"]
