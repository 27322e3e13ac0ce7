"""The storage engine of :class:`~agentscope_rt.rag.LocalVectorStore`: one collection's chunks
in SQLite, their vectors in a NumPy matrix and, beyond :func:`exact_limit`, a usearch HNSW
index, kept consistent with each other by :class:`LocalCollection` (blocking; the store calls
it from worker threads, slice by slice). See ``_local_store.py`` for the guarantees.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..._extras import missing_extra
from .._document import DocMetadata, Document
from ._store_base import (
    FLOAT32_MAX,
    NORM_MAX,
    check_name,
    check_vector,
    distance_to_score,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float32]
    IntArray = npt.NDArray[np.int64]

__all__ = ["INLINE_BYTES", "LocalCollection", "add_slice", "checked_query", "exact_limit"]

EXACT_BYTES = 16 * 1024 * 1024
"""Collections whose vectors take at most this much (as float32) are searched exactly: a
scan of 16 MiB is about a millisecond of one core's memory bandwidth, an HNSW search a few
hundred microseconds with recall below 1."""

SLICE_VALUES = 32_768
"""Vector values checked and written per trip to the worker thread in ``add`` (see
:func:`add_slice`)."""

SLICE_CHUNKS = 128
"""The most chunks per trip: checking and writing a chunk (its id, its metadata as JSON, its
SQLite row) is 15-20 us of Python holding the interpreter, so 128 of them about 2 ms. Measured
with 10,000 chunks of 64 dimensions on one core: 128 per trip ingest ~20% faster than 64 (a
trip has ~150 us of fixed work), with the event loop's 1 ms ticker late by 1.3-1.9 ms at p99
(1.1-1.3 ms with 64; with 32, ~20% slower again)."""

INLINE_BYTES = 4 * 1024 * 1024
"""In-memory collections whose vectors take at most this much (as float32) are searched on the
event loop's thread (:meth:`LocalCollection.searches_inline`): a scan of 4 MiB and the rows of
the hits take a few hundred microseconds, less than a round trip to a worker thread."""

INDEX_SLICE = 1024
"""Vectors added to the approximate index per trip to the worker thread, on every core but
one (:func:`index_threads`): usearch releases the interpreter while it inserts (so the event
loop runs), but searches wait for the store's lock meanwhile (a trip is a fraction of a
second)."""


def index_threads() -> int:
    """usearch's insert threads: one per core this process may run on, but one, left to the
    event loop's thread. With a thread on every core the event loop waited for a core
    (140,000 chunks of 384 dimensions on 2 cores: 53 ticks of a 1 ms ticker more than 30 ms
    late, up to 266 ms; with one thread 2, up to 62 ms, and the ingestion no slower)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, cores - 1)


_DISTANCES = {
    "cosine": "cosine",
    "dot": "dot",
    "ip": "dot",
    "euclid": "euclid",
    "l2": "euclid",
}
# One file per collection: the name becomes a file name, so it may not name another folder.
_COLLECTION_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_FILTER_FIELDS = ("doc_id", "chunk_id", "total_chunks")
_FORMAT = "1"
# SQLite's limit on parameters per statement is 32,766 (999 before 3.32): stay under the old.
_SQL_PARAMS = 900
# HNSW settings: 16 links per node, 64 candidates while inserting, at least 128 while
# searching, vectors held in half precision (the index only proposes candidates: they are
# ranked again from the float32 matrix, and _CANDIDATES of them are proposed for a search
# of fewer). Half precision halves the index's memory and inserts ~2x faster than float32,
# 64 candidates ~2x faster than 128; recall@5 against exact search, measured
# (bench/RESULTS.md): 1.00 at 100,000 and at 1,000,000 chunks of 384 dimensions with a
# 16-dimensional structure (as text embeddings have).
_CONNECTIVITY = 16
_EXPANSION_ADD = 64
_EXPANSION_SEARCH = 128
_CANDIDATES = 32
# usearch holds the interpreter while it loads or saves an index (seconds for a million
# vectors); its progress callback, called per vector, hands the interpreter over this often.
_YIELD_EVERY = 512
# Rows read per step when opening a folder (the interpreter is handed over between steps).
_LOAD_ROWS = 4096


def exact_limit(dimensions: int) -> int:
    """The most chunks of *dimensions* that a collection searches exactly (16 MiB of
    vectors); beyond it, an approximate index is built."""
    return max(1024, EXACT_BYTES // (4 * dimensions))


def add_slice(dimensions: int) -> int:
    """Chunks checked and written per trip to the worker thread (8 to 128): about two
    milliseconds of work holding the interpreter, whatever the dimensions."""
    return max(8, min(SLICE_CHUNKS, SLICE_VALUES // dimensions))


def _require_libraries() -> None:
    """:raises ImportError: naming the extra to install, if NumPy or usearch is missing."""
    try:
        import numpy  # noqa: F401
        import usearch.index  # noqa: F401
    except ImportError as error:
        raise missing_extra("LocalVectorStore (NumPy and usearch)", "vector", error.name) from error


def _yielding_progress() -> Callable[[int, int], bool]:
    """A usearch progress callback that lets the event loop's thread run now and then: usearch
    keeps the interpreter through a whole load or save, except while it calls back."""
    calls = 0

    def progress(done: int, total: int) -> bool:
        nonlocal calls
        calls += 1
        if calls % _YIELD_EVERY == 0:
            time.sleep(0)  # releases the interpreter: a thread waiting for it takes it
        return True

    # usearch checks the callback's annotations against the types themselves, and this module's
    # annotations are strings (postponed evaluation).
    progress.__annotations__ = {"done": int, "total": int, "return": bool}
    return progress


def _read_file(path: str) -> Any:
    """The bytes of *path* (a NumPy ``uint8`` array), read in 16 MiB steps: the interpreter is
    free during each. The buffer is not zero-filled first (``bytearray(n)`` is, holding the
    interpreter: ~0.4 s for a million vectors' index)."""
    import numpy as np

    data = np.empty(os.path.getsize(path), np.uint8)
    view = data.data  # a memoryview of the array
    with open(path, "rb") as file:
        done = 0
        while done < len(data):
            read = file.readinto(view[done : done + (16 << 20)])
            if not read:
                raise ValueError(f"{path} ended before its {len(data)} bytes were read")
            done += read
    return data


def _check_collection_name(value: object) -> str:
    name = check_name(value, "collection_name")
    if not _COLLECTION_NAME.fullmatch(name):
        raise ValueError(
            f"collection_name {name!r} must be 1-128 letters, digits, '_', '.' or '-', not "
            "starting with '.' or '-' (it names the collection's files in the folder)"
        )
    return name


class _Batch:
    """Checked rows of one slice of an ``add``: ids, metadata columns and vectors."""

    __slots__ = ("ids", "rows", "vectors")

    def __init__(self, ids: list[str], rows: list[tuple[Any, ...]], vectors: FloatArray) -> None:
        self.ids = ids
        self.rows = rows
        self.vectors = vectors


def _float32_matrix(values: Any, shape: tuple[int, ...]) -> FloatArray | None:
    """*values* as a float32 array of *shape*, or ``None`` unless every value is a finite
    float32 number and every vector's norm at most :data:`NORM_MAX` (what
    :func:`check_vector` asks of one vector, checked for all at once by NumPy)."""
    import numpy as np

    try:
        matrix = np.asarray(values, dtype=np.float64)
    except (ValueError, TypeError):
        return None
    if matrix.shape != shape:
        return None
    # NaN compares false, so a NaN anywhere fails the first test too.
    if not (
        np.abs(matrix).max(initial=0.0) <= FLOAT32_MAX
        and (np.linalg.norm(matrix, axis=-1) <= NORM_MAX).all()
    ):
        return None
    return matrix.astype(np.float32)


def _checked_vectors(documents: list[Document], dimensions: int) -> FloatArray:
    """The embeddings of *documents* as a float32 matrix, every one checked at once.

    :raises ValueError: as :func:`check_vector`, whose message names the first bad document.
    """
    embeddings = [doc.embedding for doc in documents]
    matrix = None
    if all(e is not None for e in embeddings):
        matrix = _float32_matrix(embeddings, (len(documents), dimensions))
    if matrix is None:
        # The shared check names the culprit (and its position) for the error message.
        for index, doc in enumerate(documents):
            check_vector(doc.embedding, dimensions, f"documents[{index}]")
        raise ValueError("the embeddings do not form a matrix of finite float32 numbers")
    return matrix


def checked_query(query: Any, dimensions: int) -> FloatArray:
    """*query* as a float32 vector, checked as :func:`check_vector` checks it but in one NumPy
    pass (a Python loop over 384 values costs more than an exact search's bookkeeping).

    :raises ValueError: as :func:`check_vector`, whose message names the problem.
    """
    import numpy as np

    vector = _float32_matrix(query, (dimensions,))
    if vector is None:
        # The shared check raises with the reason (or accepts what NumPy would not read).
        vector = np.asarray(check_vector(query, dimensions, "query_embedding"), np.float32)
    return vector


class LocalCollection:
    """One collection, open: the SQLite rows, the vector matrix and the approximate index.

    Not thread-safe: :class:`LocalVectorStore` calls it from worker threads under its lock.
    ``get_client`` hands it out for :meth:`count` and :meth:`backlog`; everything else goes
    through the store.
    """

    def __init__(
        self, path: str | None, name: str, dimensions: int, distance: str, exact: int
    ) -> None:
        import numpy as np

        self.name = name
        self.dimensions = dimensions
        self.distance = distance
        self.exact_limit = exact
        self._folder = path
        self._lock_file: int | None = None
        self._index: Any = None  # a usearch Index once the collection outgrew exact search
        self._vectors = np.zeros((0, dimensions), np.float32)
        self._sq_norms = np.zeros(0, np.float32)  # for Euclidean ranking
        self._alive = np.zeros(0, bool)
        self._indexed = np.zeros(0, bool)
        self._high = 0  # slots in use are below this
        self._index_from = 0  # slots below this are indexed or free: index_some starts here
        self._free: list[int] = []
        # An in-memory collection also keeps each stored row's fields (id, doc_id, chunk_id,
        # total_chunks, content JSON) by slot, and a search reads its hits here: SQLite's
        # lookups, once a scan has emptied the caches, cost more than the rest of a small
        # search. A folder's rows are read from its database.
        self._row_cache: list[tuple[Any, ...] | None] | None = [] if path is None else None
        self._alive_count = 0
        self._backlog_count = 0
        self._generation = 0
        self._db = self._connect()
        try:
            self._load()
        except BaseException:
            self.close()
            raise

    # -- opening -----------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._folder is None:
            db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        else:
            self._lock_folder()
            file = os.path.join(self._folder, f"{self.name}.sqlite3")
            # Created readable by its owner only; SQLite gives its -wal/-shm files the same mode.
            os.close(os.open(file, os.O_RDWR | os.O_CREAT, 0o600))
            db = sqlite3.connect(file, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
        db.execute(
            "CREATE TABLE IF NOT EXISTS chunks (slot INTEGER PRIMARY KEY, id TEXT NOT NULL "
            "UNIQUE, doc_id TEXT NOT NULL, chunk_id INTEGER NOT NULL, total_chunks INTEGER NOT "
            "NULL, content TEXT NOT NULL, vector BLOB NOT NULL)"
        )
        db.execute("CREATE INDEX IF NOT EXISTS chunks_doc_id ON chunks (doc_id)")
        db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        return db

    def _lock_folder(self) -> None:
        """Create the folder (``0o700``) and hold the collection's lock file: one open store
        per collection, as its vectors live in that store's memory.

        :raises RuntimeError: if another store (in this process or another) has it open.
        """
        assert self._folder is not None
        created = not os.path.isdir(self._folder)
        os.makedirs(self._folder, mode=0o700, exist_ok=True)
        if created:
            os.chmod(self._folder, 0o700)  # the umask may have taken bits away, never added
        try:
            import fcntl
        except ImportError:  # Windows: no advisory lock
            return
        fd = os.open(os.path.join(self._folder, f"{self.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise RuntimeError(
                f"the collection {self.name!r} in {self._folder!r} is open in another "
                "LocalVectorStore (in this process or another); close that one first"
            ) from None
        self._lock_file = fd

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def _load(self) -> None:
        """Check the collection's settings against the store's and read its vectors.

        :raises ValueError: if the collection was created with other dimensions or distance.
        """
        import numpy as np

        dims, distance = self._meta("dimensions"), self._meta("distance")
        if dims is None:
            with self._transaction():
                self._set_meta("format", _FORMAT)
                self._set_meta("dimensions", str(self.dimensions))
                self._set_meta("distance", self.distance)
                self._set_meta("generation", "0")
            return
        if int(dims) != self.dimensions or distance != self.distance:
            raise ValueError(
                f"the collection {self.name!r} holds {dims}-dimensional vectors compared by "
                f"{distance} distance; this store was built for {self.dimensions} dimensions "
                f"and {self.distance}: open it with those, or use another collection_name"
            )
        self._generation = int(self._meta("generation") or 0)
        top = self._db.execute("SELECT max(slot) FROM chunks").fetchone()[0]
        if top is None:
            return
        self._grow(int(top) + 1)
        cursor = self._db.execute("SELECT slot, vector FROM chunks ORDER BY slot")
        while rows := cursor.fetchmany(_LOAD_ROWS):
            slots = np.fromiter((r[0] for r in rows), np.int64, len(rows))
            vectors = np.frombuffer(b"".join(r[1] for r in rows), np.float32)
            self._place(slots, vectors.reshape(len(rows), self.dimensions))
            time.sleep(0)  # a step is a few milliseconds: the event loop's thread goes next
        self._high = int(top) + 1
        self._free = np.flatnonzero(~self._alive[: self._high]).tolist()[::-1]
        self._alive_count = int(self._alive[: self._high].sum())
        self._open_index()

    def _index_file(self) -> str | None:
        return None if self._folder is None else os.path.join(self._folder, f"{self.name}.usearch")

    def _open_index(self) -> None:
        """Load the saved index if it matches the database; otherwise start a new one when
        the collection is large enough (every chunk in its backlog)."""
        file = self._index_file()
        saved = self._meta("index_generation")
        if file is not None and os.path.exists(file) and saved == str(self._generation):
            self._index = self._load_index(file)
            if self._index is None:  # unreadable: rebuilt, and saved again once complete
                with self._transaction():
                    self._db.execute("DELETE FROM meta WHERE key = 'index_generation'")
        if self._index is not None:
            self._indexed[: self._high] = self._alive[: self._high]
            self._backlog_count = 0
            self._index_from = self._high
            return
        self._maybe_start_index()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # -- memory --------------------------------------------------------------------------------

    def _grow(self, needed: int) -> None:
        import numpy as np

        capacity = len(self._alive)
        if needed <= capacity:
            return
        capacity = max(needed, capacity * 2, 1024)
        vectors = np.zeros((capacity, self.dimensions), np.float32)
        vectors[: self._high] = self._vectors[: self._high]
        self._vectors = vectors
        for attr, dtype in (("_sq_norms", np.float32), ("_alive", bool), ("_indexed", bool)):
            old = getattr(self, attr)
            new = np.zeros(capacity, dtype)
            new[: len(old)] = old
            setattr(self, attr, new)

    def _place(self, slots: IntArray, vectors: FloatArray) -> None:
        """Put *vectors* (as stored) at *slots*, normalised for cosine."""
        import numpy as np

        if self.distance == "cosine":
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = (vectors / np.where(norms > 0, norms, 1)).astype(np.float32, copy=False)
        self._vectors[slots] = vectors
        self._sq_norms[slots] = np.einsum("ij,ij->i", vectors, vectors)
        self._alive[slots] = True

    def _load_index(self, file: str) -> Any:
        """The index saved in *file*, or ``None`` if the file is not a usearch index (it is
        rebuilt then). Its vector type is the file's: an index saved in float32 still loads."""
        from usearch.index import Index

        try:
            meta = Index.metadata(file)
            if not meta or meta["dimensions"] != self.dimensions:
                return None
            index = self._new_index(meta["kind_scalar"], meta["kind_metric"])
            # From memory: loading from the file, usearch reads every vector before its first
            # progress call, keeping the interpreter ~4 s for a million; from a buffer ~5x less.
            index.load(_read_file(file), progress=_yielding_progress())
        except (ValueError, RuntimeError):  # how usearch reports a truncated or foreign file
            return None
        return index

    def _new_index(self, dtype: Any = None, metric: Any = None) -> Any:
        """An empty usearch index with this store's settings (*dtype* and *metric*: a saved
        file's, to load it into)."""
        from usearch.index import Index

        if metric is None:
            metric = "l2sq" if self.distance == "euclid" else "ip"
        if dtype is None:
            # Unit vectors (cosine) fit float16's range and keep its precision; dot and
            # Euclid vectors may be as large as float32 allows: bfloat16 keeps that range.
            dtype = "f16" if self.distance == "cosine" else "bf16"
        return Index(
            ndim=self.dimensions,
            metric=metric,
            dtype=dtype,
            connectivity=_CONNECTIVITY,
            expansion_add=_EXPANSION_ADD,  # not saved in the file: set on every opening
            expansion_search=_EXPANSION_SEARCH,
        )

    def _maybe_start_index(self) -> None:
        if self._index is None and self._alive_count > self.exact_limit:
            self._index = self._new_index()
            self._backlog_count = self._alive_count
            self._index_from = 0

    def _unindex(self, slots: IntArray) -> None:
        import numpy as np

        if self._index is None or not len(slots):
            return
        indexed = slots[self._indexed[slots]]
        if len(indexed):
            self._index.remove(indexed)
        self._indexed[slots] = False
        # Overwritten or deleted: those that were waiting leave the backlog (re-added below).
        waiting = int(np.count_nonzero(self._alive[slots])) - len(indexed)
        self._backlog_count -= waiting

    # -- writing -------------------------------------------------------------------------------

    def upsert(self, batch: _Batch) -> None:
        """Write *batch*: a stored id keeps its slot (and is overwritten), a new id takes a
        free slot. One SQLite transaction; the memory changes only once it is committed."""
        import numpy as np

        last = {chunk_id: i for i, chunk_id in enumerate(batch.ids)}  # the last copy wins
        order = list(last.values())
        ids = [batch.ids[i] for i in order]
        existing = self._slots_of("id", ids)
        free = list(self._free)
        high = self._high
        slots = []
        for chunk_id in ids:
            slot = existing.get(chunk_id)
            if slot is None:
                if free:
                    slot = free.pop()
                else:
                    slot, high = high, high + 1
            slots.append(slot)
        vectors = batch.vectors[order]
        rows = [
            (slot, *batch.rows[i], vectors[n].tobytes())
            for n, (slot, i) in enumerate(zip(slots, order, strict=True))
        ]
        with self._transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO chunks (slot, id, doc_id, chunk_id, total_chunks, "
                "content, vector) VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            self._generation += 1
            self._set_meta("generation", str(self._generation))
        slot_array = np.asarray(slots, np.int64)
        self._grow(high)
        cache = self._row_cache
        if cache is not None:
            cache.extend([None] * (high - len(cache)))
            for slot, i in zip(slots, order, strict=True):
                cache[slot] = batch.rows[i]
        self._unindex(slot_array)
        self._alive_count += len(ids) - len(existing)
        self._free, self._high = free, high
        self._place(slot_array, vectors)
        if self._index is not None:
            self._backlog_count += len(slots)
            self._index_from = min(self._index_from, int(slot_array.min()))
        self._maybe_start_index()

    def delete(self, field: str, values: list[str]) -> None:
        """Remove the rows whose *field* (``id`` or ``doc_id``) is one of *values*."""
        import numpy as np

        slots = sorted(set(self._slots_of(field, values).values()))
        if not slots:
            return
        with self._transaction():
            for start in range(0, len(slots), _SQL_PARAMS):
                part = slots[start : start + _SQL_PARAMS]
                marks = ",".join("?" * len(part))
                self._db.execute(f"DELETE FROM chunks WHERE slot IN ({marks})", part)
            self._generation += 1
            self._set_meta("generation", str(self._generation))
        slot_array = np.asarray(slots, np.int64)
        if self._row_cache is not None:
            for slot in slots:
                self._row_cache[slot] = None
        self._unindex(slot_array)
        self._alive[slot_array] = False
        self._alive_count -= len(slots)
        self._free.extend(reversed(slots))

    def _slots_of(self, field: str, values: Sequence[Any]) -> dict[Any, int]:
        """``{value: slot}`` of the rows whose *field* is one of *values* (for ``doc_id``,
        ``{(doc_id, slot): slot}``: a document has many rows)."""
        found: dict[Any, int] = {}
        for start in range(0, len(values), _SQL_PARAMS):
            part = list(values[start : start + _SQL_PARAMS])
            marks = ",".join("?" * len(part))
            query = f"SELECT {field}, slot FROM chunks WHERE {field} IN ({marks})"
            for value, slot in self._db.execute(query, part):
                found[value if field == "id" else (value, slot)] = int(slot)
        return found

    def index_some(self, count: int) -> int:
        """Add up to *count* vectors of the backlog to the index; the backlog left."""
        if self._index is None or self._backlog_count == 0:
            return 0
        waiting = self._waiting(count)
        if len(waiting):
            self._index.add(waiting, self._vectors[waiting], threads=index_threads())
            self._indexed[waiting] = True
        self._backlog_count = max(0, self._backlog_count - len(waiting))
        if len(waiting) < count:  # none left above the cursor
            self._backlog_count = 0
            self._index_from = self._high
        else:
            self._index_from = int(waiting[-1]) + 1
        return self._backlog_count

    def _waiting(self, count: int | None = None) -> IntArray:
        """Up to *count* (all when ``None``) slots waiting for the index, lowest first: read
        from the cursor up, so catching up costs the backlog, not the collection."""
        import numpy as np

        start, high = min(self._index_from, self._high), self._high
        found = np.flatnonzero(self._alive[start:high] & ~self._indexed[start:high])
        return (found[:count] if count is not None else found) + start

    # -- reading -------------------------------------------------------------------------------

    def count(self) -> int:
        """How many chunks the collection holds."""
        return self._alive_count

    def backlog(self) -> int:
        """How many chunks wait to be added to the approximate index (0 without one)."""
        return self._backlog_count if self._index is not None else 0

    def search(
        self,
        query: Sequence[float] | FloatArray,
        limit: int,
        where: Mapping[str, list[Any]] | None,
        with_vectors: bool,
    ) -> list[Document]:
        """The up to *limit* chunks nearest *query* (matching *where*), most relevant first."""
        import numpy as np

        q = np.asarray(query, np.float32)
        if self.distance == "cosine":
            norm = float(np.linalg.norm(q))
            q = q / norm if norm > 0 else q
        if self._alive_count == 0:
            return []
        allowed = None if where is None else self._matching(where)
        if allowed is not None and not len(allowed):
            return []
        slots, keys = self._nearest(q, limit, allowed)
        return self._documents(slots, keys, q, with_vectors)

    def searches_inline(self) -> bool:
        """Whether an unfiltered search is quick enough for the event loop's thread: exact,
        over at most :data:`INLINE_BYTES` of vectors, with the rows in memory (no folder, so
        no disk read)."""
        return (
            self._folder is None
            and self._index is None
            and self._high * self.dimensions * 4 <= INLINE_BYTES
        )

    def _rank_keys(self, slots: IntArray | None, q: FloatArray) -> FloatArray:
        """Higher-is-nearer keys for *slots* (all slots below the high mark when ``None``)."""
        vectors = self._vectors[: self._high] if slots is None else self._vectors[slots]
        products = vectors @ q
        if self.distance != "euclid":
            return products
        sq = self._sq_norms[: self._high] if slots is None else self._sq_norms[slots]
        return products * 2 - sq  # -|x - q|^2 + |q|^2

    def _top(
        self, keys: FloatArray, slots: IntArray | None, limit: int
    ) -> tuple[IntArray, FloatArray]:
        """The slots of the *limit* highest *keys*, highest first (-inf keys left out), and
        their keys."""
        import numpy as np

        if len(keys) > limit:
            part = np.argpartition(keys, len(keys) - limit)[len(keys) - limit :]
        else:
            part = np.arange(len(keys))
        part = part[np.argsort(-keys[part], kind="stable")]
        part = part[keys[part] > -np.inf]
        return (part if slots is None else slots[part]), keys[part]

    def _exact(
        self, q: FloatArray, limit: int, slots: IntArray | None
    ) -> tuple[IntArray, FloatArray]:
        import numpy as np

        keys = self._rank_keys(slots, q)
        if slots is None and self._alive_count < self._high:
            keys = np.where(self._alive[: self._high], keys, -np.inf)
        return self._top(keys, slots, limit)

    def _nearest(
        self, q: FloatArray, limit: int, allowed: IntArray | None
    ) -> tuple[IntArray, FloatArray]:
        """The slots nearest *q* (among *allowed*), nearest first, and their ranking keys
        (:meth:`_rank_keys`)."""
        import numpy as np

        index = self._index
        indexed = self._alive_count - self._backlog_count if index is not None else 0
        if allowed is not None and (len(allowed) <= self.exact_limit or indexed == 0):
            return self._exact(q, limit, allowed)
        if indexed == 0:
            return self._exact(q, limit, None)
        mask = None
        if allowed is not None:
            mask = np.zeros(self._high, bool)
            mask[allowed] = True
        found = self._approximate(q, limit, mask, indexed)
        if self._backlog_count:
            waiting = self._waiting()
            if mask is not None:
                waiting = waiting[mask[waiting]]
            found = np.concatenate([found, waiting])
        return self._top(self._rank_keys(found, q), found, limit)

    def _approximate(self, q: FloatArray, limit: int, mask: Any | None, indexed: int) -> IntArray:
        """Indexed slots near *q*: *limit* of them matching *mask*, or all that the index
        finds; without enough matches in a wide search, an exact scan of the matches."""
        import numpy as np

        want = max(limit, _CANDIDATES) if mask is None else max(limit * 4, _CANDIDATES)
        while True:
            matches = self._index.search(q, min(want, indexed), threads=1)
            keys = np.asarray(matches.keys, np.int64)
            if mask is None:
                return keys
            keys = keys[mask[keys]]
            if len(keys) >= limit or want >= indexed:
                return keys
            want *= 4
            if want > self.exact_limit:
                allowed = np.flatnonzero(mask & self._indexed[: self._high])
                return self._exact(q, limit, allowed)[0]

    def _matching(self, where: Mapping[str, list[Any]]) -> IntArray:
        import numpy as np

        clauses, params = [], []
        for field, values in where.items():
            clauses.append(f"{field} IN ({','.join('?' * len(values))})")
            params.extend(values)
        query = f"SELECT slot FROM chunks WHERE {' AND '.join(clauses)}"
        return np.fromiter((r[0] for r in self._db.execute(query, params)), np.int64)

    def _documents(
        self, slots: IntArray, keys: FloatArray, q: FloatArray, with_vectors: bool
    ) -> list[Document]:
        """The documents at *slots*, in that order, with their exact scores (from their
        ranking *keys*)."""
        import numpy as np

        if not len(slots):
            return []
        wanted = slots.tolist()
        # Each row: id, doc_id, chunk_id, total_chunks, content (JSON)[, vector].
        cache = self._row_cache
        rows: Mapping[int, Any] | Sequence[Any]
        if cache is not None and not with_vectors:
            rows = cache  # indexed by slot
        else:
            columns = "slot, id, doc_id, chunk_id, total_chunks, content" + (
                ", vector" if with_vectors else ""
            )
            marks = ",".join("?" * len(wanted))
            query = f"SELECT {columns} FROM chunks WHERE slot IN ({marks})"
            rows = {row[0]: row[1:] for row in self._db.execute(query, wanted)}
        docs = []
        for slot, score in zip(wanted, self._scores(slots, keys, q), strict=True):
            row = rows[slot]
            # The columns are typed by the table (TEXT and INTEGER NOT NULL): only the content,
            # JSON, needs building (DocMetadata's converter checks it is a block).
            metadata = DocMetadata(json.loads(row[4]), row[1], row[2], row[3])
            embedding = np.frombuffer(row[5], np.float32).tolist() if with_vectors else None
            docs.append(Document(metadata=metadata, id=row[0], embedding=embedding, score=score))
        return docs

    def _scores(self, slots: IntArray, keys: FloatArray, q: FloatArray) -> list[float]:
        if self.distance != "euclid":
            return keys.tolist()  # the products themselves
        return [
            distance_to_score(math.dist(self._vectors[slot].tolist(), q.tolist()))
            for slot in slots.tolist()
        ]

    # -- closing -------------------------------------------------------------------------------

    def save_index(self) -> None:
        """Save the index beside the database (a folder store whose index is complete)."""
        file = self._index_file()
        if file is None or self._index is None or self._backlog_count:
            return
        if self._meta("index_generation") == str(self._generation):
            return
        partial = f"{file}.partial"
        self._index.save(partial, progress=_yielding_progress())
        os.chmod(partial, 0o600)  # as private as the database beside it
        os.replace(partial, file)
        with self._transaction():
            self._set_meta("index_generation", str(self._generation))

    def close(self) -> None:
        """Save the index if it is complete, close the database and release the folder."""
        try:
            if getattr(self, "_db", None) is not None:
                self.save_index()
                self._db.close()
        finally:
            if self._lock_file is not None:
                os.close(self._lock_file)
                self._lock_file = None
