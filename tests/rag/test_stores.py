"""LocalVectorStore, QdrantStore and MilvusLiteStore: add/search/delete, upserts instead of
duplicates, higher-is-better scores and thresholds for every distance, and Qdrant's on-disk
persistence (LocalVectorStore's own in test_local_store.py)."""

from __future__ import annotations

import hashlib
import logging
import math
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.rag import (
    DocMetadata,
    Document,
    LocalVectorStore,
    MilvusLiteStore,
    QdrantStore,
    TextReader,
    VDBStoreBase,
)

from .._cancellation import used_then_cancelled

DIM = 8


def embed(text: str) -> list[float]:
    """A deterministic embedding: 8 numbers from the text's SHA-256, normalised."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    values = [b - 127.5 for b in digest[:DIM]]
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


async def embedded_chunks(text: str) -> list[Document]:
    docs = await TextReader(chunk_size=200, split_by="sentence")(text)
    for doc in docs:
        doc.embedding = embed(doc.metadata.content["text"])
    return docs


def _vector_doc(doc_id: str, text: str, vector: list[float], chunk_id: int = 0) -> Document:
    from agentscope_rt.message import TextBlock

    return Document(DocMetadata(TextBlock(text=text), doc_id, chunk_id, 1), embedding=vector)


class StoreFactory:
    """Builds stores of one kind (``"qdrant"``, ``"milvus"`` or ``"local"``) and closes them
    afterwards."""

    def __init__(self, kind: str, folder: Path) -> None:
        self.kind = kind
        self.folder = folder
        self.stores: list[VDBStoreBase] = []

    def __call__(self, distance: str | None = None, dimensions: int = DIM) -> VDBStoreBase:
        store: VDBStoreBase
        if self.kind == "qdrant":
            store = QdrantStore(":memory:", "test", dimensions, distance=distance or "Cosine")  # type: ignore[arg-type]
        elif self.kind == "local":
            store = LocalVectorStore(":memory:", "test", dimensions, distance or "Cosine")  # type: ignore[arg-type]
        else:
            uri = str(self.folder / f"milvus{len(self.stores)}.db")
            store = MilvusLiteStore(uri, "test", dimensions, distance or "COSINE")  # type: ignore[arg-type]
        self.stores.append(store)
        return store


async def _factory(kind: str, folder: Path) -> AsyncIterator[StoreFactory]:
    factory = StoreFactory(kind, folder)
    yield factory
    for store in factory.stores:
        await store.close()


@pytest.fixture(params=["qdrant", "milvus", "local"])
async def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreFactory]:
    async for factory in _factory(request.param, tmp_path):
        yield factory


@pytest.fixture(params=["qdrant", "milvus"])
async def make_db_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[StoreFactory]:
    """The stores of a database that has collections of its own (which can be dropped)."""
    async for factory in _factory(request.param, tmp_path):
        yield factory


TEXT = (
    "Qdrant is a vector database. Milvus Lite runs in a file. "
    "Agents retrieve knowledge before they answer."
)


async def test_add_search_and_readding_is_an_upsert(make_store: StoreFactory) -> None:
    store = make_store()
    # Before the first add there is no collection: nothing to find, nothing to delete.
    assert await store.search(embed("anything"), limit=3) == []
    await store.delete(doc_ids="nothing-yet")
    docs = await embedded_chunks(TEXT)
    await store.add(docs)
    await store.add(await embedded_chunks(TEXT))  # the same file read again

    query = docs[1].metadata.content["text"]
    found = await store.search(embed(query), limit=10)
    assert len(found) == 3  # no duplicates
    assert found[0].metadata.content["text"] == query
    assert found[0].score == pytest.approx(1.0, abs=1e-5)
    assert found[0].id == docs[1].id
    assert found[0].metadata == docs[1].metadata
    scores = [d.score for d in found]
    assert scores == sorted(scores, reverse=True)
    assert len(await store.search(embed(query), limit=2)) == 2


async def test_delete_by_chunk_id_and_by_document(make_store: StoreFactory) -> None:
    store = make_store()
    first = await embedded_chunks(TEXT)
    second = await embedded_chunks("Another document. With two sentences.")
    await store.add(first + second)

    await store.delete(ids=[first[0].id, "not-a-stored-id"])
    remaining = await store.search(embed("x"), limit=10)
    assert sorted(d.id for d in remaining) == sorted(d.id for d in first[1:] + second)

    await store.delete(doc_ids=first[0].metadata.doc_id)
    remaining = await store.search(embed("x"), limit=10)
    assert sorted(d.id for d in remaining) == sorted(d.id for d in second)

    with pytest.raises(ValueError, match="ids"):
        await store.delete()


async def test_delete_handles_quotes_in_document_ids(make_store: StoreFactory) -> None:
    store = make_store()
    odd = _vector_doc('doc "quoted" \\ one', "odd", embed("odd"))
    plain = _vector_doc("plain", "plain", embed("plain"))
    await store.add([odd, plain])
    await store.delete(doc_ids=[odd.metadata.doc_id])
    assert [d.metadata.doc_id for d in await store.search(embed("odd"), limit=5)] == ["plain"]


# Documents at known places: the query is (1, 0); "near" is the query itself, "far" at (0, 1).
_NEAR, _FAR, _QUERY = [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]


@pytest.mark.parametrize(
    ("qdrant", "milvus", "near", "far"),
    [
        ("Cosine", "COSINE", 1.0, 0.0),
        ("Dot", "IP", 1.0, 0.0),
        # Distances become 1 / (1 + d): 0 -> 1, sqrt(2) -> 1 / (1 + sqrt(2)).
        ("Euclid", "L2", 1.0, 1 / (1 + math.sqrt(2))),
    ],
)
async def test_scores_are_higher_for_nearer_and_thresholds_keep_the_near(
    make_store: StoreFactory, qdrant: str, milvus: str, near: float, far: float
) -> None:
    # LocalVectorStore takes both spellings: Qdrant's for one half of the cases, Milvus's for
    # the other.
    store = make_store(distance=qdrant if make_store.kind == "qdrant" else milvus, dimensions=2)
    await store.add([_vector_doc("n", "near", _NEAR), _vector_doc("f", "far", _FAR)])
    found = await store.search(_QUERY, limit=5)
    assert [d.metadata.content["text"] for d in found] == ["near", "far"]
    assert [d.score for d in found] == pytest.approx([near, far], abs=1e-5)
    threshold = (near + far) / 2
    kept = await store.search(_QUERY, limit=5, score_threshold=threshold)
    assert [d.metadata.content["text"] for d in kept] == ["near"]
    assert await store.search(_QUERY, limit=5, score_threshold=near + 0.5) == []


@pytest.mark.parametrize("distance", ["Cosine", "Dot", "Euclid", "Manhattan"])
async def test_qdrant_embedded_search_ranks_as_the_client_does(distance: str) -> None:
    # The store hands the embedded engine a float32 query (see QdrantStore._query): the same
    # points in the same order as the client's own list query, scores equal to float32
    # precision, filters honoured.
    import random

    from qdrant_client import models

    rng = random.Random(7)
    docs = [
        _vector_doc(f"d{i % 3}", f"text {i}", [rng.uniform(-1, 1) for _ in range(DIM)], i)
        for i in range(300)
    ]
    queries = [[rng.uniform(-1, 1) for _ in range(DIM)] for _ in range(20)]
    only_d1 = models.Filter(
        must=[models.FieldCondition(key="doc_id", match=models.MatchValue(value="d1"))]
    )
    async with QdrantStore(":memory:", "f32", DIM, distance=distance) as store:  # type: ignore[arg-type]
        await store.add(docs)
        client = store.get_client()
        for query in queries:
            for kwargs in ({}, {"query_filter": only_d1}):
                found = await store.search(query, limit=7, **kwargs)  # type: ignore[arg-type]
                expected = client.query_points("f32", query=query, limit=7, **kwargs).points
                assert [d.id for d in found] == [str(p.id) for p in expected]
                raw = [p.score for p in expected]
                if distance in ("Euclid", "Manhattan"):
                    raw = [1 / (1 + d) for d in raw]
                assert [d.score for d in found] == pytest.approx(raw, rel=1e-5, abs=1e-6)
                if kwargs:
                    assert {d.metadata["doc_id"] for d in found} == {"d1"}


async def test_qdrant_manhattan_distance_is_a_score_too() -> None:
    async with QdrantStore(":memory:", "m", 2, distance="Manhattan") as store:
        await store.add([_vector_doc("n", "near", _NEAR), _vector_doc("f", "far", _FAR)])
        found = await store.search(_QUERY, limit=5, score_threshold=0.5)
        assert [(d.metadata.content["text"], d.score) for d in found] == [("near", 1.0)]
        found = await store.search(_QUERY, limit=5)
        assert found[1].score == pytest.approx(1 / 3)  # |1-0| + |0-1| = 2


async def test_bad_input_is_refused_before_it_reaches_the_database(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    docs = await embedded_chunks(TEXT)
    docs[1].embedding = None
    with pytest.raises(ValueError, match=r"documents\[1\] has no embedding"):
        await store.add(docs)
    docs[1].embedding = [0.0] * (DIM + 1)
    with pytest.raises(ValueError, match=r"documents\[1\] has 9 dimensions"):
        await store.add(docs)
    with pytest.raises(TypeError, match=r"documents\[1\] must be a Document, not dict"):
        await store.add([docs[0], docs[1].to_dict()])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="query_embedding has 2 dimensions"):
        await store.search([1.0, 0.0], limit=1)
    with pytest.raises(ValueError, match="limit"):
        await store.search(embed("x"), limit=0)
    # A threshold a model sent as text (or NaN, which nothing reaches) is named as such.
    for threshold in ("0.5", float("nan"), True):
        with pytest.raises(ValueError, match="score_threshold must be a number"):
            await store.search(embed("x"), limit=1, score_threshold=threshold)  # type: ignore[arg-type]
    assert await store.search(embed("x"), limit=5) == []  # nothing half-added


async def test_qdrant_on_disk_collection_survives_reopening(tmp_path: Path) -> None:
    folder = str(tmp_path / "qdrant")
    docs = await embedded_chunks(TEXT)
    async with QdrantStore(folder, "kb", DIM) as store:
        await store.add(docs)
    async with QdrantStore(folder, "kb", DIM) as store:
        found = await store.search(docs[2].embedding or [], limit=10)
        assert len(found) == 3
        assert found[0].id == docs[2].id
        await store.add(docs)  # still an upsert after reopening
        assert len(await store.search(embed("x"), limit=10)) == 3


async def test_qdrant_folder_is_released_when_a_timeout_fires_inside_the_block(
    tmp_path: Path,
) -> None:
    folder = str(tmp_path / "qdrant")
    docs = await embedded_chunks(TEXT)
    with anyio.move_on_after(60) as scope:
        async with QdrantStore(folder, "kb", DIM) as store:
            await store.add(docs)
            scope.cancel()  # as a timeout firing inside the block
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    with pytest.raises(RuntimeError, match="closed"):
        store.get_client()
    async with QdrantStore(folder, "kb", DIM) as again:
        assert len(await again.search(embed("x"), limit=10)) == len(docs)


async def test_milvus_rows_survive_reopening_with_the_same_ids(tmp_path: Path) -> None:
    uri = str(tmp_path / "kb.db")
    docs = await embedded_chunks(TEXT)
    async with MilvusLiteStore(uri, "kb", DIM) as store:
        await store.add(docs)
    async with MilvusLiteStore(uri, "kb", DIM) as store:
        await store.add(docs)  # ids do not depend on the process: no duplicates
        found = await store.search(embed("x"), limit=10)
        assert sorted(d.id for d in found) == sorted(d.id for d in docs)


def test_constructor_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="distance"):
        QdrantStore(":memory:", "c", 3, distance="L2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="distance"):
        MilvusLiteStore("x.db", "c", 3, distance="Euclid")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dimensions"):
        QdrantStore(":memory:", "c", 0)
    with pytest.raises(ValueError, match="id_type"):
        MilvusLiteStore("x.db", "c", 3, collection_kwargs={"id_type": "int"})
    for bad in (None, 3, ""):
        with pytest.raises((TypeError, ValueError), match="location"):
            QdrantStore(bad, "c", 3)  # type: ignore[arg-type]
        with pytest.raises((TypeError, ValueError), match="uri"):
            MilvusLiteStore(bad, "c", 3)  # type: ignore[arg-type]
        with pytest.raises((TypeError, ValueError), match="collection_name"):
            QdrantStore(":memory:", bad, 3)  # type: ignore[arg-type]
        with pytest.raises((TypeError, ValueError), match="collection_name"):
            MilvusLiteStore("x.db", bad, 3)  # type: ignore[arg-type]


async def test_vectors_asked_for_come_back_as_embeddings(make_store: StoreFactory) -> None:
    store = make_store(distance="Dot" if make_store.kind == "qdrant" else "IP")
    docs = await embedded_chunks(TEXT)
    await store.add(docs)
    if make_store.kind in ("qdrant", "local"):
        found = await store.search(embed("x"), limit=10, with_vectors=True)
    else:
        # The metadata fields come back whatever output_fields names.
        found = await store.search(embed("x"), limit=10, output_fields=["vector"])
    by_id = {d.id: d.embedding for d in docs}
    assert len(found) == 3
    for doc in found:
        assert doc.embedding == pytest.approx(by_id[doc.id], abs=1e-6)
    assert all(d.embedding is None for d in await store.search(embed("x"), limit=10))


def test_a_server_address_without_a_scheme_is_not_taken_for_a_folder() -> None:
    # qdrant-client reads "localhost:6333" as a server; taken as a folder, the chunks would
    # silently go to disk here instead.
    for address in ("localhost:6333", "qdrant.internal:6334", "10.0.0.5:6333"):
        with pytest.raises(ValueError, match=f"http://{address}"):
            QdrantStore(address, "c", 3)


async def test_a_folder_or_file_may_be_given_as_a_path(tmp_path: Path) -> None:
    docs = await embedded_chunks(TEXT)
    async with QdrantStore(tmp_path / "qdrant", "kb", DIM) as qdrant:
        await qdrant.add(docs)
        assert qdrant.location == str(tmp_path / "qdrant")
    async with MilvusLiteStore(tmp_path / "m.db", "kb", DIM) as milvus:
        await milvus.add(docs)
        assert milvus.uri == str(tmp_path / "m.db")
    async with QdrantStore(tmp_path / "qdrant", "kb", DIM) as qdrant:
        assert len(await qdrant.search(embed("x"), limit=10)) == 3


def test_reprs_hold_no_secrets() -> None:
    store = QdrantStore("http://127.0.0.1:1", "c", 3, client_kwargs={"api_key": "s3cret"})
    milvus = MilvusLiteStore("http://127.0.0.1:1", "c", 3, token="user:s3cret")
    assert "s3cret" not in repr(store) and "s3cret" not in repr(milvus)
    # Credentials written into the address itself are left out too.
    store = QdrantStore("http://admin:s3cret@127.0.0.1:1/?api-key=s3cret", "c", 3)
    milvus = MilvusLiteStore("http://root:s3cret@127.0.0.1:1", "c", 3)
    assert "s3cret" not in repr(store) and "s3cret" not in repr(milvus)
    assert "127.0.0.1:1" in repr(store) and "127.0.0.1:1" in repr(milvus)


async def test_client_calls_run_in_worker_threads(make_store: StoreFactory) -> None:
    store = make_store()
    client = store.get_client()
    loop_thread = threading.get_ident()
    searched: list[int] = []
    written: list[int] = []
    names = {
        "qdrant": ("query_points", "upsert"),
        "milvus": ("search", "upsert"),
        "local": ("search", "upsert"),
    }[make_store.kind]

    def recording(name: str, seen: list[int]) -> None:
        original = getattr(client, name)

        def record(*args: object, **kwargs: object) -> object:
            seen.append(threading.get_ident())
            return original(*args, **kwargs)

        setattr(client, name, record)

    recording(names[0], searched)
    recording(names[1], written)
    await store.add(await embedded_chunks(TEXT))
    assert len(await store.search(embed("x"), limit=2)) == 2
    assert written and loop_thread not in written
    assert searched
    if make_store.kind == "local":
        # A small in-memory collection is searched on the event loop's thread (documented:
        # cheaper than a worker-thread round trip, and it reads no disk).
        assert searched == [loop_thread]
    else:
        assert loop_thread not in searched


async def test_the_same_class_talks_to_a_qdrant_server_by_url() -> None:
    from ._qdrant_server import QdrantServer

    docs = await embedded_chunks(TEXT)
    with QdrantServer() as server:
        async with QdrantStore(server.url, "remote", DIM) as store:
            assert await store.search(embed("x"), limit=3) == []
            await store.add(docs)
            await store.add(docs)
            found = await store.search(docs[0].embedding or [], limit=10)
            assert found[0].id == docs[0].id
            assert len(found) == 3
            assert found[0].score == pytest.approx(1.0)
            await store.delete(ids=docs[0].id)
            await store.delete(doc_ids=["unrelated"])
            assert len(await store.search(embed("x"), limit=10)) == 2
            await store.delete(doc_ids=docs[0].metadata.doc_id)
            assert await store.search(embed("x"), limit=10) == []
    assert ("PUT", "/collections/remote") in server.requests
    assert ("POST", "/collections/remote/points/query") in server.requests


async def test_a_server_is_asked_once_whether_the_collection_exists() -> None:
    # Against a server every question is a round trip: searches and adds after the first
    # do not ask again, and a collection dropped behind the store's back is noticed.
    from ._qdrant_server import QdrantServer

    docs = await embedded_chunks(TEXT)
    with QdrantServer() as server:
        async with QdrantStore(server.url, "remote", DIM) as store:
            await store.add(docs)
            for _ in range(5):
                assert len(await store.search(embed("x"), limit=2)) == 2
            await store.add(docs)
            exists = ("GET", "/collections/remote/exists")
            assert server.requests.count(exists) == 1
            queries = server.requests.count(("POST", "/collections/remote/points/query"))
            assert queries == 5

            store.get_client().delete_collection("remote")
            assert await store.search(embed("x"), limit=2) == []
            await store.delete(ids=docs[0].id)
            await store.add(docs)  # created again
            assert len(await store.search(embed("x"), limit=10)) == 3
            assert server.requests.count(("PUT", "/collections/remote")) == 2


async def test_two_stores_creating_one_server_collection_at_once_both_add() -> None:
    # Two stores (two processes) ingest into a new collection: the second may find it missing
    # and then lose the race to create it; Qdrant answers that create with 409, and the
    # store goes on writing into the collection the other one made.
    from ._qdrant_server import QdrantServer

    first = await embedded_chunks(TEXT)
    second = await embedded_chunks("Another text entirely. With two sentences.")
    with QdrantServer() as server:
        async with (
            QdrantStore(server.url, "shared", DIM) as a,
            QdrantStore(server.url, "shared", DIM) as b,
        ):
            client = b.get_client()
            asked = client.collection_exists

            def exists_then_the_other_creates(collection_name: str, **kwargs: Any) -> bool:
                answer = asked(collection_name, **kwargs)
                anyio.from_thread.run(a.add, first)  # created and written meanwhile
                client.collection_exists = asked  # type: ignore[method-assign]
                return answer

            client.collection_exists = exists_then_the_other_creates  # type: ignore[method-assign]
            await b.add(second)
            found = {d.id for d in await a.search(embed("x"), limit=10)}
    assert found == {d.id for d in first + second}
    assert server.requests.count(("PUT", "/collections/shared")) == 2


async def test_a_collection_dropped_behind_the_store_is_recreated_on_add(
    make_db_store: StoreFactory,
) -> None:
    make_store = make_db_store
    store = make_store()
    docs = await embedded_chunks(TEXT)
    await store.add(docs)
    client = store.get_client()
    if make_store.kind == "qdrant":
        client.delete_collection(store.collection_name)
    else:
        client.drop_collection(store.collection_name)
    assert await store.search(embed("x"), limit=2) == []
    await store.delete(doc_ids=docs[0].metadata.doc_id)
    await store.add(docs)
    assert len(await store.search(embed("x"), limit=10)) == 3


async def test_add_gives_each_document_the_id_it_is_stored_under(
    make_store: StoreFactory,
) -> None:
    # An id set by hand, or a chunk edited after it was read, is stored under the id of its
    # metadata; add says so on the document, so delete(ids=doc.id) finds it.
    from agentscope_rt.message import TextBlock

    store = make_store()
    docs = await embedded_chunks(TEXT)
    docs[0].id = "my-own-id"
    docs[1].metadata.content = TextBlock(text="edited after reading")
    await store.add(docs)
    stored = {d.id for d in await store.search(embed("x"), limit=10)}
    assert {d.id for d in docs} == stored
    assert docs[0].id != "my-own-id"
    await store.delete(ids=[docs[0].id, docs[1].id])
    assert {d.id for d in await store.search(embed("x"), limit=10)} == {docs[2].id}


async def test_qdrant_search_needs_the_whole_payload() -> None:
    async with QdrantStore(":memory:", "p", DIM) as store:
        await store.add(await embedded_chunks(TEXT))
        for selector in (False, ["doc_id"]):
            with pytest.raises(ValueError, match="with_payload"):
                await store.search(embed("x"), limit=2, with_payload=selector)
        assert len(await store.search(embed("x"), limit=2, with_payload=True)) == 2


async def test_concurrent_calls_on_one_store_are_serialised(make_store: StoreFactory) -> None:
    store = make_store()
    texts = [f"Sentence number {i}." for i in range(12)]
    results: list[list[Document]] = []

    async def add_then_search(text: str) -> None:
        await store.add(await embedded_chunks(text))
        results.append(await store.search(embed(text), limit=1))

    async with anyio.create_task_group() as tg:
        for text in texts:
            tg.start_soon(add_then_search, text)
    assert len(await store.search(embed("x"), limit=50)) == len(texts)
    assert sorted(r[0].metadata.content["text"] for r in results) == sorted(texts)


async def test_a_cancelled_add_still_completes_its_write(make_store: StoreFactory) -> None:
    store = make_store()
    client = store.get_client()
    started, gate = threading.Event(), threading.Event()
    original = client.upsert

    def held(*args: object, **kwargs: object) -> object:
        started.set()
        gate.wait()
        return original(*args, **kwargs)

    client.upsert = held
    docs = await embedded_chunks(TEXT)
    scopes: list[anyio.CancelScope] = []

    added: list[bool] = []

    async def adder() -> None:
        with anyio.CancelScope() as scope:
            scopes.append(scope)
            await store.add(docs)
            added.append(True)
            # The cancellation arrives at the caller's next checkpoint, after the write.
            await anyio.lowlevel.checkpoint()
            added.append(False)

    async with anyio.create_task_group() as tg:
        tg.start_soon(adder)
        await anyio.to_thread.run_sync(started.wait)
        scopes[0].cancel()
        gate.set()
    assert added == [True] and scopes[0].cancelled_caught
    assert len(await store.search(embed("x"), limit=10)) == len(docs)


async def test_opening_milvus_lite_logs_no_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Milvus Lite's in-process gRPC server logs a traceback for an RPC the client probes on
    # connect; the store keeps that out of the application's logs.
    with caplog.at_level(logging.WARNING):
        async with MilvusLiteStore(str(tmp_path / "quiet.db"), "c", DIM) as store:
            await store.add(await embedded_chunks(TEXT))
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert logging.getLogger("grpc._server").filters == []


class _DictStore(VDBStoreBase):
    """A store written as for AgentScope's base class: no call to the base's __init__."""

    def __init__(self) -> None:
        self.rows: dict[str, Document] = {}

    async def add(self, documents: list[Document], **kwargs: object) -> None:
        await self._call(self.rows.update, {d.id: d for d in documents})

    async def delete(
        self,
        ids: str | Sequence[str] | None = None,
        doc_ids: str | Sequence[str] | None = None,
        **kwargs: object,
    ) -> None:
        for key in [ids] if isinstance(ids, str) else ids or []:
            await self._call(self.rows.pop, key, None)

    async def search(
        self,
        query_embedding: list[float],
        limit: int,
        score_threshold: float | None = None,
        **kwargs: object,
    ) -> list[Document]:
        return list(self.rows.values())[:limit]


async def test_a_store_subclass_gets_the_base_behaviour() -> None:
    async with _DictStore() as store:
        docs = await embedded_chunks(TEXT)
        await store.add(docs)
        await store.delete(ids=docs[0].id)
        assert [d.id for d in await store.search([], limit=5)] == [d.id for d in docs[1:]]
        with pytest.raises(NotImplementedError, match="_DictStore"):
            store.get_client()


async def test_milvus_delete_takes_agentscopes_positional_filter(tmp_path: Path) -> None:
    # AgentScope's MilvusLiteStore.delete(ids=None, filter=None): ported code passes the
    # filter expression second. It must delete, not be taken for a document id.
    docs = await embedded_chunks(TEXT)
    other = _vector_doc("other", "other", embed("other"))
    async with MilvusLiteStore(str(tmp_path / "f.db"), "kb", DIM) as store:
        await store.add([*docs, other])
        await store.delete(None, f'doc_id == "{docs[0].metadata.doc_id}"')
        assert [d.id for d in await store.search(embed("x"), limit=10)] == [other.id]


def test_document_ids_are_passed_by_keyword_to_every_store() -> None:
    import inspect

    for store in (VDBStoreBase, QdrantStore, MilvusLiteStore, LocalVectorStore):
        doc_ids = inspect.signature(store.delete).parameters["doc_ids"]
        assert doc_ids.kind is inspect.Parameter.KEYWORD_ONLY, store


async def test_a_store_cancelled_mid_use_still_releases_its_folder(tmp_path: Path) -> None:
    # The close of ``async with`` runs in the cancelled scope: it must still close the client,
    # or the folder stays locked and the next store on it fails.
    folder = str(tmp_path / "qdrant")
    docs = await embedded_chunks(TEXT)
    first = QdrantStore(folder, "kb", DIM)  # still referenced: no collector closes it
    await used_then_cancelled(first, lambda store: store.add(docs))
    async with QdrantStore(folder, "kb", DIM) as store:
        assert len(await store.search(docs[0].embedding or [], limit=10)) == 3
    with pytest.raises(RuntimeError, match="is closed"):
        await first.search(docs[0].embedding or [], limit=1)
