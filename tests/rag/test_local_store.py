"""LocalVectorStore's own behaviour: exact search, then an approximate index with measured
recall; a folder that survives restarts and a killed process; filters; refusals; and the
default store of SimpleKnowledge and VectorLongTermMemory. (The contract every store keeps
is in test_stores.py, run against this store too.)"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import anyio.lowlevel
import numpy as np
import pytest

from agentscope_rt.message import TextBlock
from agentscope_rt.rag import DocMetadata, Document, LocalVectorStore, SimpleKnowledge

DIM = 24


def vectors(n: int, seed: int, dim: int = DIM) -> np.ndarray:
    """*n* vectors shaped like embeddings: a low-dimensional signal plus a little noise (a
    uniform random cloud has no near neighbours to find)."""
    rng = np.random.default_rng(seed)
    basis = np.random.default_rng(99).standard_normal((6, dim))
    return rng.standard_normal((n, 6)) @ basis + 0.1 * rng.standard_normal((n, dim))


def docs_of(matrix: np.ndarray, prefix: str = "t", per_doc: int = 100) -> list[Document]:
    return [
        Document(
            DocMetadata(TextBlock(text=f"{prefix}{i}"), f"doc{i // per_doc}", i % per_doc, per_doc),
            embedding=row.tolist(),
        )
        for i, row in enumerate(matrix)
    ]


def exact_top(matrix: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return list(np.argsort(-(unit @ (query / np.linalg.norm(query))))[:k])


def texts(found: list[Document]) -> list[str]:
    return [d.metadata.content["text"] for d in found]


async def test_small_collections_are_searched_exactly() -> None:
    data = vectors(2000, 1)
    async with LocalVectorStore(":memory:", "c", DIM) as store:
        await store.add(docs_of(data))
        assert store.get_client().backlog() == 0
        for seed in range(20):
            query = vectors(1, 100 + seed)[0]
            found = await store.search(query.tolist(), limit=5)
            assert texts(found) == [f"t{i}" for i in exact_top(data, query, 5)]


async def test_beyond_the_exact_limit_an_index_answers_with_measured_recall() -> None:
    data = vectors(4000, 2)
    async with LocalVectorStore(":memory:", "c", DIM, exact_limit=500) as store:
        await store.add(docs_of(data[:300]))
        assert store.get_client().backlog() == 0  # no index yet
        await store.add(docs_of(data)[300:])
        assert store.get_client().count() == 4000
        assert store.get_client().backlog() == 0  # add brought the index up to date
        hits = 0
        queries = vectors(100, 3)
        for query in queries:
            found = await store.search(query.tolist(), limit=5)
            expected = {f"t{i}" for i in exact_top(data, query, 5)}
            hits += len(expected & set(texts(found)))
            # Scores are exact, whichever way a chunk was found.
            unit = data / np.linalg.norm(data, axis=1, keepdims=True)
            q = query / np.linalg.norm(query)
            for doc in found:
                i = int(doc.metadata.content["text"][1:])
                assert doc.score == pytest.approx(float(unit[i] @ q), abs=1e-5)
        assert hits / (5 * len(queries)) >= 0.95


async def test_deleted_and_overwritten_chunks_leave_the_index(tmp_path: Path) -> None:
    data = vectors(1500, 4)
    docs = docs_of(data)
    async with LocalVectorStore(tmp_path, "c", DIM, exact_limit=200) as store:
        await store.add(docs)
        await store.delete(ids=[docs[7].id])
        await store.delete(doc_ids="doc3")
        assert store.get_client().count() == 1500 - 1 - 100
        found = await store.search(data[7].tolist(), limit=3)
        assert "t7" not in texts(found)
        assert not any(
            d.metadata.doc_id == "doc3" for d in await store.search(data[350].tolist(), 20)
        )
        # The same chunk with another vector: one copy, found at its new place.
        moved = docs_of(data[:1])[0]
        moved.embedding = data[900].tolist()
        await store.add([moved])
        found = await store.search(data[900].tolist(), limit=2)
        assert sorted(texts(found)) == ["t0", "t900"]
        assert store.get_client().count() == 1500 - 1 - 100
        # Freed places are reused by new chunks.
        await store.add(docs_of(vectors(150, 5), prefix="new"))
        assert store.get_client().count() == 1500 - 101 + 150
    async with LocalVectorStore(tmp_path, "c", DIM, exact_limit=200) as store:
        assert store.get_client().count() == 1549
        assert store.get_client().backlog() == 0  # the saved index matched the database
        found = await store.search(data[900].tolist(), limit=2)
        assert sorted(texts(found)) == ["t0", "t900"]


async def test_filters_select_by_metadata_exactly_and_through_the_index() -> None:
    data = vectors(3000, 6)
    async with LocalVectorStore(":memory:", "c", DIM, exact_limit=400) as store:
        await store.add(docs_of(data, per_doc=1000))  # doc0, doc1, doc2
        query = data[10].tolist()
        few = await store.search(query, 5, filter={"doc_id": "doc2", "chunk_id": [1, 2, 3]})
        assert sorted(texts(few)) == ["t2001", "t2002", "t2003"]
        many = await store.search(query, 5, filter={"doc_id": ["doc1", "doc2"]})
        assert len(many) == 5 and {d.metadata.doc_id for d in many} <= {"doc1", "doc2"}
        unfiltered = await store.search(query, 5)
        assert texts(unfiltered)[0] == "t10"
        assert await store.search(query, 5, filter={"doc_id": "nobody"}) == []
        for bad in ({}, {"content": "x"}, {"doc_id": 3}, {"chunk_id": "1"}, {"doc_id": []}, "x"):
            with pytest.raises(ValueError, match="filter"):
                await store.search(query, 5, filter=bad)
        with pytest.raises(TypeError, match="query_filter"):
            await store.search(query, 5, query_filter={"doc_id": "doc1"})


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (float("nan"), "nan at position 3"),
        (float("inf"), "inf at position 3"),
        (1e39, "at position 3: vectors must be finite float32"),
        (8e18, "has a norm of"),
    ],
)
async def test_vectors_that_float32_cannot_hold_are_refused(value: float, message: str) -> None:
    good = docs_of(vectors(3, 7))
    bad = docs_of(vectors(1, 8), prefix="bad")[0]
    assert bad.embedding is not None
    bad.embedding[3] = value
    bad.embedding[4] = value  # for the norm: two values of 8e18 make 1.13e19
    async with LocalVectorStore(":memory:", "c", DIM) as store:
        with pytest.raises(ValueError, match=rf"documents\[2\] .*{message}"):
            await store.add([good[0], good[1], bad])
        assert store.get_client().count() == 0  # nothing of the batch
        with pytest.raises(ValueError, match=message):
            await store.search(bad.embedding, limit=1)


async def test_a_folder_holds_each_collection_privately(tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    async with (
        LocalVectorStore(folder, "alice", DIM) as alice,
        LocalVectorStore(folder, "bob", DIM) as bob,
    ):
        await alice.add(docs_of(vectors(5, 9), prefix="alice"))
        await bob.add(docs_of(vectors(5, 10), prefix="bob"))
        assert all(t.startswith("bob") for t in texts(await bob.search([1.0] * DIM, 10)))
        with pytest.raises(RuntimeError, match="open in another LocalVectorStore"):
            await LocalVectorStore(folder, "alice", DIM).search([1.0] * DIM, 1)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for file in folder.iterdir():
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file
    for bad in ("../escape", "a/b", ".hidden", "-x", "x" * 129):
        with pytest.raises(ValueError, match="collection_name"):
            LocalVectorStore(folder, bad, DIM)
    with pytest.raises(ValueError, match="holds 24-dimensional vectors compared by cosine"):
        await LocalVectorStore(folder, "alice", DIM + 1).search([1.0] * (DIM + 1), 1)
    with pytest.raises(ValueError, match="holds 24-dimensional vectors compared by cosine"):
        await LocalVectorStore(folder, "alice", DIM, "Euclid").search([1.0] * DIM, 1)
    for bad_limit in (0, True, 2.5):
        with pytest.raises(ValueError, match="exact_limit"):
            LocalVectorStore(folder, "alice", DIM, exact_limit=bad_limit)  # type: ignore[arg-type]


_INGEST = textwrap.dedent(
    """
    import sys, anyio
    sys.path.insert(0, {tests!r})
    from rag.test_local_store import docs_of, vectors
    from agentscope_rt.rag import LocalVectorStore

    async def main():
        store = LocalVectorStore({folder!r}, "kb", {dim}, exact_limit=300)
        data = vectors(20_000, 11)
        docs = docs_of(data)
        for start in range(0, len(docs), 50):
            await store.add(docs[start : start + 50])
            print(start + 50, flush=True)  # every chunk up to here: add returned

    anyio.run(main)
    """
)


async def test_a_process_killed_while_adding_leaves_every_added_chunk(tmp_path: Path) -> None:
    folder = str(tmp_path / "kb")
    code = _INGEST.format(tests=str(Path(__file__).parents[1]), folder=folder, dim=DIM)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with subprocess.Popen(  # noqa: ASYNC220 - the test reads its output line by line
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env
    ) as child:
        assert child.stdout is not None
        added = 0
        while added < 1000:  # well past the exact limit: the index is in use
            line = child.stdout.readline()
            assert line, "the ingesting process stopped early"
            added = int(line)
        child.send_signal(signal.SIGKILL)
        child.wait()
    data = vectors(added, 11)
    async with LocalVectorStore(folder, "kb", DIM, exact_limit=300) as store:
        held = store.get_client().count()
        assert held >= added
        # Every added chunk is found by its own vector (the index, never saved, is rebuilt).
        for i in range(0, added, 37):
            found = await store.search(data[i].tolist(), limit=1)
            assert texts(found) == [f"t{i}"]
        await store.build_index()
        assert store.get_client().backlog() == 0
        for i in range(0, added, 37):
            assert texts(await store.search(data[i].tolist(), limit=1)) == [f"t{i}"]


async def test_simple_knowledge_and_memory_default_to_this_store() -> None:
    from agentscope_rt.embedding import EmbeddingModelBase, EmbeddingResponse

    class Hash(EmbeddingModelBase):
        def __init__(self) -> None:
            super().__init__("hash", DIM)

        async def __call__(self, text: list[object], **kwargs: object) -> EmbeddingResponse:
            out = []
            for item in text:
                words = str(item["text"] if isinstance(item, dict) else item)
                out.append(vectors(1, sum(map(ord, words)))[0].tolist())
            return EmbeddingResponse(embeddings=out)

    knowledge = SimpleKnowledge(embedding_model=Hash())
    assert isinstance(knowledge.embedding_store, LocalVectorStore)
    assert knowledge.embedding_store.dimensions == DIM
    docs = [Document(DocMetadata(TextBlock(text=t), "d", i, 2)) for i, t in enumerate("ab")]
    await knowledge.add_documents(docs)
    assert texts(await knowledge.retrieve("b", limit=1)) == ["b"]
    await knowledge.embedding_store.close()
    with pytest.raises(TypeError, match="embedding_model"):
        SimpleKnowledge()
    with pytest.raises(TypeError, match="first argument is the store"):
        SimpleKnowledge(Hash())  # type: ignore[arg-type]

    from agentscope_rt.memory import VectorLongTermMemory

    async with VectorLongTermMemory(Hash(), user_id="ada") as memory:
        assert isinstance(memory.store, LocalVectorStore)


def test_without_the_extra_the_default_says_which_extra_to_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['usearch'] = None\n"
        "from agentscope_rt.rag import LocalVectorStore\n"
        "try:\n"
        "    LocalVectorStore(':memory:', 'c', 3)\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    assert "'vector' extra" in out and 'pip install -e ".[vector]"' in out and "usearch" in out


async def test_searching_while_another_task_adds_sees_whole_slices() -> None:
    # Adds run in slices, each committed as a whole: a concurrent search sees a prefix of
    # the slices, never half of one, and the event loop runs the other task in between.
    data = vectors(3000, 12)
    async with LocalVectorStore(":memory:", "c", DIM) as store:
        seen: list[int] = []

        async def watch() -> None:
            while not seen or seen[-1] < 3000:
                seen.append(store.get_client().count())
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await store.add(docs_of(data))
        assert len(set(seen)) > 2  # the watcher ran while add was under way
        assert all(count % 64 == 0 or count == 3000 for count in seen)


async def test_small_in_memory_searches_answer_while_every_worker_thread_is_busy(
    tmp_path: Path,
) -> None:
    # A small in-memory collection is searched on the event loop's thread (a scan of a few
    # MiB costs less than a worker-thread round trip); a folder's goes through a thread. Both
    # give the same answers.
    data = vectors(500, 13)
    query = vectors(1, 14)[0].tolist()
    limiter = anyio.to_thread.current_default_thread_limiter()
    async with (
        LocalVectorStore(":memory:", "c", DIM) as memory_store,
        LocalVectorStore(tmp_path, "c", DIM) as folder_store,
    ):
        await memory_store.add(docs_of(data))
        await folder_store.add(docs_of(data))
        expected = await folder_store.search(query, limit=5)
        release = anyio.Event()
        saved_tokens = limiter.total_tokens
        limiter.total_tokens = 1
        try:
            async with anyio.create_task_group() as tg:
                # The only worker thread is taken until release is set.
                tg.start_soon(anyio.to_thread.run_sync, lambda: anyio.from_thread.run(release.wait))
                await anyio.wait_all_tasks_blocked()
                with anyio.fail_after(10):
                    found = await memory_store.search(query, limit=5)
                with anyio.move_on_after(0.2) as waiting:
                    await folder_store.search(query, limit=5)
                assert waiting.cancelled_caught  # no thread for it until the other is done
                release.set()
        finally:
            limiter.total_tokens = saved_tokens
        assert [(d.id, d.score) for d in found] == [(d.id, d.score) for d in expected]
        assert texts(found) == [f"t{i}" for i in exact_top(data, np.array(query), 5)]


async def test_a_search_after_close_says_the_store_is_closed() -> None:
    store = LocalVectorStore(":memory:", "c", DIM)
    await store.add(docs_of(vectors(10, 15)))
    await store.close()
    with pytest.raises(RuntimeError, match="closed"):
        await store.search(vectors(1, 16)[0].tolist(), limit=3)


async def test_in_memory_hits_show_the_rows_as_last_written(tmp_path: Path) -> None:
    # An in-memory collection reads its hits' fields from its own copy of the rows: after
    # deletes, reused slots and overwrites it answers as a folder (read from SQLite) does.
    first = docs_of(vectors(300, 17), "a", per_doc=50)
    second = docs_of(vectors(120, 18), "b", per_doc=40)
    rewritten = docs_of(vectors(300, 17), "a", per_doc=50)[:20]
    for doc in rewritten:
        doc.metadata.total_chunks = 999  # not part of the id: the same chunks, overwritten
    answers = []
    for location in (":memory:", tmp_path):
        async with LocalVectorStore(location, "c", DIM) as store:
            await store.add(first)
            await store.delete(doc_ids=["doc1", "doc3"])  # frees 100 slots
            await store.add(second)  # takes freed slots, then new ones
            await store.add(rewritten)
            found = []
            for doc in [*first[:20], *first[60:70], *second]:
                hits = await store.search(doc.embedding or [], limit=1)
                found.append(
                    [
                        (
                            h.id,
                            h.metadata.content["text"],
                            h.metadata.doc_id,
                            h.metadata.chunk_id,
                            h.metadata.total_chunks,
                        )
                        for h in hits
                    ]
                )
            answers.append(found)
    memory, folder = answers
    assert memory == folder
    assert [hit[0][4] for hit in memory[:20]] == [999] * 20
    assert all(hit[0][1].startswith("b") for hit in memory[30:])


async def test_a_timeout_inside_the_block_still_closes_the_store(tmp_path: Path) -> None:
    data = vectors(300, 8)
    with anyio.move_on_after(60) as scope:
        async with LocalVectorStore(tmp_path, "kb", DIM, exact_limit=200) as store:
            await store.add(docs_of(data))
            assert store.get_client().backlog() == 0
            scope.cancel()  # as a timeout firing inside the block
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    # Closed for all that: the folder's lock is released and the index was saved with it.
    assert (tmp_path / "kb.usearch").is_file()
    async with LocalVectorStore(tmp_path, "kb", DIM, exact_limit=200) as again:
        assert again.get_client().count() == 300
        assert again.get_client().backlog() == 0
        assert texts(await again.search(data[42].tolist(), limit=1)) == ["t42"]
