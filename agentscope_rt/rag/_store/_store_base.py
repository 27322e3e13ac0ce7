"""The vector store interface, and what every store shares: checked input, client calls in
worker threads under a lock, and scores where higher is always better.

**Scores.** ``search`` gives every document a ``score`` that grows with relevance, whatever
the distance: a similarity (cosine, dot/inner product) is reported as the database computes
it; a distance (Euclidean, Manhattan) ``d`` is reported as ``1 / (1 + d)``, in (0, 1]. So
``score_threshold`` always means "at least this relevant" and results from several stores can
be sorted together. (AgentScope reports raw distances, where lower is better, and filters them
as if higher were better.)

**Identity.** A chunk is stored under :func:`~agentscope_rt.rag.chunk_id_of` its document id,
position and content, so adding it again overwrites it: re-ingesting a file never duplicates
chunks. ``add`` sets each document's ``id`` to the id it is stored under, so
``delete(ids=doc.id)`` finds it even when its content was edited after it was read (or its id
set by hand): an edited chunk is a new chunk.

**Threads.** The database clients block; every call runs in a worker thread
(``anyio.to_thread``), one at a time per store (the embedded engines are not thread-safe), so
the event loop never waits on a disk or a socket and the store works on asyncio and trio alike.
A cancelled call finishes its database operation before the cancellation is delivered, so a
write is never left half-done.
"""

from __future__ import annotations

import math
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import anyio.to_thread

from .._document import Document

__all__ = ["VDBStoreBase"]

T = TypeVar("T")


DEFAULT_ADD_BATCH = 32
"""Chunks per :meth:`VDBStoreBase.add` call that a knowledge base uses unless a store says
otherwise (:attr:`VDBStoreBase.add_batch`)."""


class VDBStoreBase(ABC):
    """Base class of vector stores: where a knowledge base keeps embedded chunks.

    Stores are async context managers; leaving the ``async with`` block (or awaiting
    :meth:`close`) releases the database client.
    """

    _lock: threading.Lock

    def __init__(self) -> None:
        self._lock = threading.Lock()

    async def _call(self, function: Callable[..., T], *args: Any) -> T:
        """Run *function(*args)* in a worker thread, holding the store's lock there."""
        return await anyio.to_thread.run_sync(self._locked, function, *args)

    def _locked(self, function: Callable[..., T], *args: Any) -> T:
        """*function(*args)* under the store's lock (in the calling thread)."""
        # A subclass written for AgentScope's base (which has no __init__) may not call ours.
        lock = self.__dict__.get("_lock")
        if lock is None:
            lock = self.__dict__.setdefault("_lock", threading.Lock())
        with lock:
            return function(*args)

    @property
    def add_batch(self) -> int:
        """How many chunks a caller with many should hand to one :meth:`add`: a knowledge
        base adds in slices of this size and lets other tasks run between them. A store whose
        trips cost differently says its own."""
        return DEFAULT_ADD_BATCH

    @abstractmethod
    async def add(self, documents: list[Document], **kwargs: Any) -> None:
        """Store *documents* (with their embeddings); a chunk already stored is overwritten.

        :raises ValueError: for a document without an embedding, one of the wrong size, one
            holding a value that is not a finite float32 number, or one whose norm exceeds
            :data:`NORM_MAX` (9e18).
        """

    async def delete(
        self,
        ids: str | Sequence[str] | None = None,
        *,
        doc_ids: str | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remove chunks by chunk id (``Document.id``) and/or every chunk of documents.

        Ids that are not stored are ignored.

        Optional, as in AgentScope (whose own ``QdrantStore`` lacked it): a store that does
        not implement it can still be added to and searched.

        :param ids: chunk ids to remove.
        :param doc_ids: document ids (``DocMetadata.doc_id``) whose chunks all go.
        :raises ValueError: if neither is given.
        :raises NotImplementedError: unless a subclass implements it.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement delete")

    @abstractmethod
    async def search(
        self,
        query_embedding: list[float],
        limit: int,
        score_threshold: float | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """The up to *limit* stored chunks nearest *query_embedding*, most relevant first, each
        with its ``score`` (higher is more relevant, see the module docstring).

        :param score_threshold: when given, only chunks scoring at least this much.
        :param kwargs: passed to the database's search call.
        :raises ValueError: for a query of the wrong size, with a non-finite value or a norm
            beyond :data:`NORM_MAX`, a non-positive *limit* or a *score_threshold* that is
            not a number.
        """

    def get_client(self) -> Any:
        """The underlying database client, for what this interface does not cover.

        :raises NotImplementedError: if the store has no client to give.
        """
        raise NotImplementedError(f"get_client is not implemented for {type(self).__name__}.")

    async def close(self) -> None:  # noqa: B027 - a store without a client has nothing to free
        """Release the database client; the store cannot be used afterwards."""

    async def __aenter__(self: T) -> T:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


class _Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


class SyncClientStoreBase(VDBStoreBase, Generic[C]):
    """A store driven through one synchronous database client, opened on first use (in a
    worker thread, under the lock) and closed by :meth:`close`, after which the store refuses
    to be used.

    Subclasses say how the client is opened (:meth:`_open`), how documents become the
    database's rows (:meth:`_rows`) and how rows are written (:meth:`_upsert`). :meth:`add`
    does both in the worker thread, so a large batch does not hold up the event loop.
    """

    _client: C | None

    def __init__(self) -> None:
        super().__init__()
        self._client = None
        self._closed = False

    @abstractmethod
    def _open(self) -> C:
        """A new client (called in a worker thread, under the lock)."""

    @abstractmethod
    def _rows(self, documents: list[Document]) -> list[Any]:
        """The rows (points) for *documents*, every one checked (in a worker thread).

        :raises ValueError: for a document without an embedding, one of the wrong size, one
            holding a value that is not a finite float32 number, or one whose norm exceeds
            :data:`NORM_MAX`.
        """

    @abstractmethod
    def _upsert(self, rows: list[Any]) -> None:
        """Write *rows*, creating the collection first if needed (in a worker thread, under
        the lock)."""

    def _add(self, documents: list[Document]) -> None:
        rows = self._rows(documents)  # all checked before anything is written
        self._upsert(rows)

    async def add(self, documents: list[Document], **kwargs: Any) -> None:
        """Upsert *documents*: each is stored under its chunk id (see the module docstring),
        its metadata beside it. The rows are built in the worker thread too.

        :raises ValueError: for a document without an embedding, one of the wrong size, one
            holding a value that is not a finite float32 number, or one whose norm exceeds
            :data:`NORM_MAX` (nothing of the batch is stored then).
        :raises TypeError: for an item that is not a :class:`Document`.
        """
        documents = check_documents(documents)
        if documents:
            await self._call(self._add, documents)

    def _get(self) -> C:
        """The client, opened on first use (in a worker thread, under the lock).

        :raises RuntimeError: once the store is closed.
        """
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")
        if self._client is None:
            self._client = self._open()
        return self._client

    def _close(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client = None
        self._closed = True

    def get_client(self) -> C:
        """The database client (synchronous). Opening it the first time blocks; calls on it
        block too, so run them in a worker thread.

        :raises RuntimeError: once the store is closed.
        """
        client = self._client
        if client is not None:
            return client
        with self._lock:
            return self._get()

    async def close(self) -> None:
        """Close the client, even when the caller is cancelled (a timeout firing inside
        ``async with store:``): what the client frees on closing (a folder's lock, an index
        saved beside it) must not be left behind by a cancellation. The trip to the worker
        thread is shielded; it waits for an operation under way (a trip is never abandoned)
        and for the client's own ``close``, both local work that ends by itself."""
        with anyio.CancelScope(shield=True):
            await self._call(self._close)


def check_name(value: object, what: str) -> str:
    """*value* as a non-empty string; a path (:class:`os.PathLike`) gives its string.

    :raises TypeError: for anything else.
    :raises ValueError: for an empty string.
    """
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, not {type(value).__name__}")
    if not value:
        raise ValueError(f"{what} must not be empty")
    return value


def check_dimensions(dimensions: int) -> None:
    """:raises ValueError: for a non-positive or non-integer *dimensions*."""
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions <= 0:
        raise ValueError(f"dimensions must be a positive integer, got {dimensions!r}")


# -- shared checks ------------------------------------------------------------------------------


def check_documents(documents: Sequence[Document]) -> list[Document]:
    """*documents* as a list, every item a :class:`Document`.

    :raises TypeError: for an item that is not one (naming its position).
    """
    documents = list(documents)
    for index, doc in enumerate(documents):
        if not isinstance(doc, Document):
            raise TypeError(
                f"documents[{index}] must be a Document, not {type(doc).__name__} "
                "(Document.from_dict builds one from its dict form)"
            )
    return documents


def as_id_list(ids: str | Sequence[str] | None, what: str) -> list[str]:
    """*ids* as a list of strings (a single string is one id).

    :raises TypeError: for anything but a string or a sequence of strings.
    """
    if ids is None:
        return []
    if isinstance(ids, str):
        return [ids]
    result = list(ids)
    for item in result:
        if not isinstance(item, str):
            raise TypeError(f"{what} must be strings, got {type(item).__name__}: {item!r}")
    return result


def check_delete_args(ids: object, doc_ids: object, *others: object) -> None:
    """:raises ValueError: if the caller named nothing to delete."""
    if ids is None and doc_ids is None and all(o is None for o in others):
        raise ValueError(
            "delete needs ids (chunk ids, Document.id) or doc_ids (DocMetadata.doc_id)"
        )


def check_vector(vector: Any, dimensions: int, what: str) -> list[float]:
    """*vector* as a list of floats of length *dimensions*.

    :raises ValueError: for a missing vector, a non-number, the wrong length, a value that is
        not a finite float32 number (naming *what* and the position), or a norm beyond
        :data:`NORM_MAX` (see :func:`check_norm`).
    """
    if vector is None:
        raise ValueError(f"{what} has no embedding; embed the documents before adding them")
    try:
        values = [float(x) for x in vector]
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a list of numbers") from None
    if len(values) != dimensions:
        raise ValueError(
            f"{what} has {len(values)} dimensions, but the store holds {dimensions}-dimensional "
            "vectors; use the embedding model the store was created for"
        )
    check_finite(values, what)
    check_norm(values, what)
    return values


# The largest float32: the stores keep vectors as float32, where anything larger is infinite.
FLOAT32_MAX = 3.4028234663852886e38


def check_finite(values: list[float], what: str) -> None:
    """:raises ValueError: when a value of *values* is infinite, NaN, or too large for float32
    (the stores would keep it as infinity): no distance can be computed to such a vector, and
    it would rank first, with score NaN, in every search without a threshold."""
    # Two passes in C for the usual case: the sum of magnitudes is NaN or infinite when any
    # value is (values of float32 size cannot add up to overflow), and the largest magnitude
    # says whether every value fits float32. The slow loop only runs to name the culprit.
    if math.isfinite(sum(map(abs, values))) and max(map(abs, values), default=0.0) <= FLOAT32_MAX:
        return
    for position, value in enumerate(values):
        if not abs(value) <= FLOAT32_MAX:
            raise ValueError(
                f"{what} holds {value!r} at position {position}: vectors must be finite "
                f"float32 numbers (at most {FLOAT32_MAX:.7g} in magnitude)"
            )


# The largest norm a stored vector may have: twice it, squared, still fits float32, so every
# sum the databases compute in float32 stays finite for any two vectors within it (a squared
# norm for cosine normalisation, a dot product, a squared Euclidean distance). sqrt(FLOAT32_MAX)
# / 2 is about 9.22e18; the bound leaves 5 % for float32's rounding of thousands of terms.
NORM_MAX = 9e18


def check_norm(values: list[float], what: str) -> None:
    """:raises ValueError: when the Euclidean norm of *values* exceeds :data:`NORM_MAX`: its
    square, or a distance to another vector, overflows the databases' float32 arithmetic, and
    the vector is scored as a zero vector (cosine: 0.0 against everything) or at an infinite
    distance (Euclidean)."""
    norm = math.hypot(*values)
    if norm > NORM_MAX:
        raise ValueError(
            f"{what} has a norm of {norm:.7g}: vectors must have a norm whose square stays "
            f"finite in float32, with room for distances (at most {NORM_MAX:.7g}); the values "
            "are finite, but their squares overflow the store's float32 arithmetic"
        )


def check_limit(limit: int) -> None:
    """:raises ValueError: for a non-positive or non-integer *limit*."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")


def check_threshold(score_threshold: float | None) -> None:
    """:raises ValueError: for a *score_threshold* that is neither ``None`` nor a number (a
    string from a model's tool call, a bool, NaN)."""
    if score_threshold is None:
        return
    if (
        isinstance(score_threshold, bool)
        or not isinstance(score_threshold, int | float)
        or math.isnan(score_threshold)
    ):
        raise ValueError(
            f"score_threshold must be a number (or None for no threshold), got {score_threshold!r}"
        )


def distance_to_score(distance: float) -> float:
    """A distance (0 = identical) as a score in (0, 1], higher for nearer."""
    return 1.0 / (1.0 + max(distance, 0.0))


def keep(documents: list[Document], score_threshold: float | None) -> list[Document]:
    """*documents* scoring at least *score_threshold* (all when it is ``None``)."""
    if score_threshold is None:
        return documents
    return [d for d in documents if d.score is not None and d.score >= score_threshold]
