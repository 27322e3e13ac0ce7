"""The embedded vector store: chunks in SQLite, vectors in a NumPy matrix, an HNSW index
(usearch) once a collection is too large to scan.

The storage engine (SQLite, the vector matrix, the index) is ``_local_collection.py``.

**Search.** Up to :func:`exact_limit` chunks (16 MiB of float32 vectors: 65,536 chunks of 64
dimensions, 10,922 of 384) every search is exact: one matrix-vector product over the
collection. Beyond that an approximate index is built (usearch's HNSW) and searches go
through it; chunks not indexed yet (the index's *backlog*) are still searched exactly, so a
chunk is found as soon as its ``add`` returns. Scores are always computed exactly from the
stored vectors, whichever way a chunk was found.

**Persistence.** ``":memory:"`` keeps everything in the process; a folder holds one SQLite
database per collection (``<collection>.sqlite3``, write-ahead log) and its saved index
(``<collection>.usearch``). Every ``add`` and ``delete`` is one or more committed SQLite
transactions before it returns, so a process killed at any moment leaves a store that opens
and holds every chunk whose ``add`` returned (SQLite's ``synchronous=NORMAL``: a power cut
may lose the last transactions, a killed process does not). The index is saved when the store
is closed and after :meth:`LocalVectorStore.build_index`; an index that does not match the
database (the process died after a write) is dropped on opening and rebuilt.

**Event loop.** An unfiltered search of a small in-memory collection (exact, at most
4 MiB of vectors, ``INLINE_BYTES``: no disk read, a few hundred microseconds) runs on the event
loop's thread, which a worker-thread round trip would cost more than; unless an ``add`` or
``delete`` holds the store, when it waits for its turn in a worker thread like all the rest.
Other work runs in worker threads (``anyio.to_thread``) in slices: ``add`` checks and
writes at most :func:`add_slice` chunks per trip, and builds the index up to
:data:`INDEX_SLICE` vectors per trip; NumPy's product and usearch's inserts release the
interpreter while they compute. Opening a folder reads its vectors in steps, and loading or
saving the index hands the interpreter over every few hundred vectors. So a task of the event
loop waits for the store a couple of milliseconds at most, on asyncio and trio.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.lowlevel

from .._document import Document, chunk_id_and_json
from ._store_base import (
    SyncClientStoreBase,
    as_id_list,
    check_delete_args,
    check_dimensions,
    check_documents,
    check_limit,
    check_name,
    check_threshold,
    keep,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float32]
    IntArray = npt.NDArray[np.int64]

from ._local_collection import (
    _DISTANCES,
    _FILTER_FIELDS,
    INDEX_SLICE,
    LocalCollection,
    _Batch,
    _check_collection_name,
    _checked_vectors,
    _require_libraries,
    add_slice,
    checked_query,
)
from ._local_collection import (
    exact_limit as _exact_limit,
)

__all__ = ["LocalVectorStore"]


class LocalVectorStore(SyncClientStoreBase[LocalCollection]):
    """Chunks kept by this process: in memory, or in a folder that survives restarts.

    The default store of :class:`~agentscope_rt.rag.SimpleKnowledge` and
    :class:`~agentscope_rt.memory.VectorLongTermMemory`. Needs the ``vector`` extra (NumPy and
    usearch). See the module docstring for exact and approximate search, persistence and how
    the event loop is spared; :mod:`._store_base` for scores and identity.

    :param location: ``":memory:"`` or a folder (a string or a path), created readable by its
        owner only (``0o700``) if missing. One open store per collection and folder.
    :param collection_name: the collection: 1-128 letters, digits, ``_``, ``.``, ``-`` (it
        names the collection's files).
    :param dimensions: the size of the embeddings.
    :param distance: ``"Cosine"``, ``"Dot"`` or ``"Euclid"`` (any case; Milvus's ``"IP"`` and
        ``"L2"`` too).
    :param exact_limit: the most chunks searched exactly, beyond which the approximate index
        is built (default: :func:`exact_limit` of the dimensions, 16 MiB of vectors).
    :raises ValueError: for an unknown distance, non-positive dimensions or exact limit, or a
        collection name that is not a plain file name.
    :raises TypeError: for a location or collection name that is not a string or path.
    :raises ImportError: if NumPy or usearch is not installed.
    """

    def __init__(
        self,
        location: Literal[":memory:"] | str | os.PathLike[str] = ":memory:",
        collection_name: str = "knowledge",
        dimensions: int = 0,
        distance: Literal["Cosine", "Dot", "Euclid"] = "Cosine",
        *,
        exact_limit: int | None = None,
    ) -> None:
        super().__init__()
        _require_libraries()
        if not isinstance(distance, str) or distance.lower() not in _DISTANCES:
            raise ValueError(
                f"distance must be one of 'Cosine', 'Dot', 'Euclid' (or 'IP', 'L2'), got "
                f"{distance!r}"
            )
        check_dimensions(dimensions)
        self.location = check_name(location, "location")
        self.collection_name = _check_collection_name(collection_name)
        self.dimensions = dimensions
        self.distance = _DISTANCES[distance.lower()]
        if exact_limit is not None and (
            isinstance(exact_limit, bool) or not isinstance(exact_limit, int) or exact_limit < 1
        ):
            raise ValueError(f"exact_limit must be a positive integer, got {exact_limit!r}")
        self.exact_limit = _exact_limit(dimensions) if exact_limit is None else exact_limit

    def __repr__(self) -> str:
        return (
            f"LocalVectorStore(location={self.location!r}, "
            f"collection_name={self.collection_name!r}, dimensions={self.dimensions}, "
            f"distance={self.distance!r})"
        )

    # -- runs in worker threads, under the lock -------------------------------------------------

    def _open(self) -> LocalCollection:
        folder = None if self.location == ":memory:" else self.location
        return LocalCollection(
            folder, self.collection_name, self.dimensions, self.distance, self.exact_limit
        )

    def _rows(self, documents: list[Document]) -> list[Any]:
        vectors = _checked_vectors(documents, self.dimensions)
        ids, rows = [], []
        for doc in documents:
            meta = doc.metadata
            # The id (see QdrantStore._rows) and the stored JSON from one encoding.
            doc.id, content = chunk_id_and_json(meta.doc_id, meta.chunk_id, meta.content.to_dict())
            ids.append(doc.id)
            rows.append((doc.id, meta.doc_id, meta.chunk_id, meta.total_chunks, content))
        return [_Batch(ids, rows, vectors)]

    def _upsert(self, rows: list[Any]) -> None:
        collection = self._get()
        for batch in rows:
            collection.upsert(batch)

    def _index_some(self) -> int:
        return self._get().index_some(INDEX_SLICE)

    def _search(
        self, vector: FloatArray, limit: int, where: dict[str, list[Any]] | None, vectors: bool
    ) -> list[Document]:
        return self._get().search(vector, limit, where, vectors)

    def _delete(self, field: str, values: list[str]) -> None:
        self._get().delete(field, values)

    # -- the store ------------------------------------------------------------------------------

    @property
    def add_batch(self) -> int:
        """One of this store's own slices (:func:`add_slice`: 8 to 128 chunks by their size,
        about two milliseconds of work), checked and written in one trip."""
        return add_slice(self.dimensions)

    async def add(self, documents: list[Document], **kwargs: Any) -> None:
        """Upsert *documents*, then bring the approximate index up to date (if the collection
        has one). Checked and written in slices of :func:`add_slice` chunks, one trip to the
        worker thread each; every slice is checked before the first is written (a batch of
        one slice is checked and written in the same trip).

        A cancelled ``add`` writes every chunk before the cancellation is delivered (delivered
        while the index catches up, it leaves chunks waiting for the index, found by exact
        search meanwhile); once ``add`` returns, its chunks are committed to disk.

        :raises ValueError: for a document without an embedding, one of the wrong size, one
            holding a value that is not a finite float32 number, or one whose norm exceeds
            9e18 (nothing of the batch is stored then).
        :raises TypeError: for an item that is not a :class:`Document`.
        :raises RuntimeError: once the store is closed.
        """
        documents = check_documents(documents)
        if not documents:
            return
        step = add_slice(self.dimensions)
        if len(documents) <= step:
            # One slice: checked and written in one trip (a trip is never interrupted, so a
            # cancellation finds the chunks written, as below).
            await self._call(self._add, documents)
        else:
            await self._add_slices(documents, step)
        # Only a collection with an index has anything to catch up (read without the lock:
        # an int, and a stale answer only delays the catching up to the next add).
        client = self._client
        if client is not None and client.backlog():
            await self._catch_up()

    async def _add_slices(self, documents: list[Document], step: int) -> None:
        """Check every slice of *documents* (one trip each), then write them (one trip each,
        shielded from cancellation)."""
        batches: list[Any] = []
        for start in range(0, len(documents), step):
            batches.extend(await self._call(self._rows, documents[start : start + step]))
        with anyio.CancelScope(shield=True):
            for batch in batches:
                await self._call(self._upsert, [batch])

    async def _catch_up(self) -> None:
        """Add every chunk waiting for the approximate index to it, :data:`INDEX_SLICE`
        vectors per trip to the worker thread."""
        while await self._call(self._index_some):
            pass

    async def build_index(self) -> None:
        """Add every chunk that waits for the approximate index to it, then save the index
        (a folder store). Nothing to do for a collection searched exactly.

        ``add`` keeps the index up to date itself; a store reopened after a crash, or an
        ``add`` that was cancelled, leaves chunks waiting (searched exactly until then). The
        index is saved when the store is closed anyway: saving it now spares rebuilding it if
        the process dies before.
        """
        await self._catch_up()
        if self.location != ":memory:":
            await self._call(self._save_index)

    def _save_index(self) -> None:
        self._get().save_index()

    async def search(
        self,
        query_embedding: list[float],
        limit: int,
        score_threshold: float | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """The up to *limit* chunks nearest *query_embedding*, most relevant first.

        Scores are the cosine similarity or dot product, or ``1 / (1 + d)`` for the
        Euclidean distance ``d``, computed from the stored vectors.

        :param score_threshold: only chunks scoring at least this much (in those units).
        :param kwargs: ``filter``, a mapping of ``doc_id``, ``chunk_id`` or ``total_chunks`` to
            a value or a list of values (all fields must match one of their values);
            ``with_vectors=True`` to get each chunk's stored vector as its ``embedding``.
        :raises ValueError: for a query of the wrong size, with a non-finite value or a norm
            beyond 9e18, a non-positive *limit*, a *score_threshold* that is not a number, or
            a malformed ``filter``.
        :raises TypeError: for another keyword argument.
        """
        check_limit(limit)
        check_threshold(score_threshold)
        where = _where(kwargs.pop("filter", None))
        with_vectors = kwargs.pop("with_vectors", False)
        if kwargs:
            raise TypeError(
                f"LocalVectorStore.search got unexpected arguments {sorted(kwargs)}; it takes "
                "filter and with_vectors"
            )
        vector = checked_query(query_embedding, self.dimensions)
        client = self._client
        if where is None and client is not None and client.searches_inline():
            await anyio.lowlevel.checkpoint()
            found = self._search_here(vector, limit, bool(with_vectors))
            if found is not None:
                return keep(found, score_threshold)
        found = await self._call(self._search, vector, limit, where, bool(with_vectors))
        return keep(found, score_threshold)

    def _search_here(self, vector: FloatArray, limit: int, vectors: bool) -> list[Document] | None:
        """An unfiltered search run on the calling (event loop's) thread, or ``None`` when the
        store is busy (an add or delete holds it) or the collection has outgrown
        :meth:`LocalCollection.searches_inline` since the caller looked.

        :raises RuntimeError: once the store is closed.
        """
        if not self._lock.acquire(blocking=False):
            return None
        try:
            collection = self._get()
            if not collection.searches_inline():
                return None
            return collection.search(vector, limit, None, vectors)
        finally:
            self._lock.release()

    async def delete(
        self,
        ids: str | Sequence[str] | None = None,
        *,
        doc_ids: str | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remove the chunks with these *ids*, and every chunk of the documents *doc_ids*.

        :raises ValueError: if neither is given.
        """
        check_delete_args(ids, doc_ids)
        chunk_ids = as_id_list(ids, "ids")
        documents = as_id_list(doc_ids, "doc_ids")
        if chunk_ids:
            await self._call(self._delete, "id", chunk_ids)
        if documents:
            await self._call(self._delete, "doc_id", documents)

    def get_client(self) -> LocalCollection:
        """The open collection (:meth:`LocalCollection.count`, :meth:`LocalCollection.backlog`).
        Opening it the first time reads the folder here, blocking.

        :raises RuntimeError: once the store is closed.
        """
        return super().get_client()


def _where(value: object) -> dict[str, list[Any]] | None:
    """A ``filter`` as ``{field: [values]}``.

    :raises ValueError: for anything but a mapping of metadata fields to a value or a list of
        values (strings for ``doc_id``, integers for the others).
    """
    if value is None:
        return None
    if not isinstance(value, Mapping) or not value:
        raise ValueError(
            "filter must be a non-empty mapping of doc_id, chunk_id or total_chunks to a value "
            f"or a list of values, got {value!r}"
        )
    where: dict[str, list[Any]] = {}
    for field, wanted in value.items():
        if field not in _FILTER_FIELDS:
            raise ValueError(f"filter field {field!r} is not one of {', '.join(_FILTER_FIELDS)}")
        values = list(wanted) if isinstance(wanted, list | tuple | set | frozenset) else [wanted]
        kind: type = str if field == "doc_id" else int
        for item in values:
            if not isinstance(item, kind) or isinstance(item, bool):
                raise ValueError(f"filter {field!r} values must be {kind.__name__}s, got {item!r}")
        if not values:
            raise ValueError(f"filter {field!r} has no values")
        where[field] = values
    return where
