"""The Qdrant store: embedded (in memory or in a folder) or a Qdrant server, one class.

``location`` picks the mode: ``":memory:"`` keeps everything in the process; a URL
(``http://host:6333``) talks to a server; anything else is a folder where the embedded engine
persists the collection (reopened by the next store on that folder; one open store per folder
at a time, as the engine locks it). The synchronous ``QdrantClient`` is driven from worker
threads; see :mod:`._store_base` for the score, identity and threading rules.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..._extras import check_extra
from ..._urls import redact_url
from .._document import DocMetadata, Document, chunk_id_of
from ._store_base import (
    SyncClientStoreBase,
    as_id_list,
    check_delete_args,
    check_dimensions,
    check_limit,
    check_name,
    check_threshold,
    check_vector,
    distance_to_score,
    keep,
)

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

__all__ = ["QdrantStore"]

_DISTANCES = {"cosine": "Cosine", "euclid": "Euclid", "dot": "Dot", "manhattan": "Manhattan"}
# Qdrant reports these as distances (lower is nearer); the others as similarities.
_DISTANCE_METRICS = frozenset({"Euclid", "Manhattan"})


# "host:port": a server address given without "http://" (a folder is rarely named so).
_HOST_PORT = re.compile(r"[\w.-]+:\d+")


def _require_qdrant() -> None:
    check_extra(("qdrant_client",), extra="qdrant", user="QdrantStore")


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


class QdrantStore(SyncClientStoreBase["QdrantClient"]):
    """Chunks in a Qdrant collection; each point's payload is the chunk's metadata.

    Needs the ``qdrant`` extra (qdrant-client). The collection is created on the first
    :meth:`add`; searching or deleting before that finds nothing.

    :param location: ``":memory:"``, a server URL, or a folder for the embedded engine (a
        string or a path).
    :param collection_name: the collection to use.
    :param dimensions: the size of the embeddings.
    :param distance: ``"Cosine"``, ``"Euclid"``, ``"Dot"`` or ``"Manhattan"`` (any case).
    :param client_kwargs: more arguments for ``QdrantClient`` (``api_key``, ``timeout``, ...;
        ``check_compatibility`` is off unless given: the client probes the server's version in
        a background thread of its own).
    :param collection_kwargs: more arguments for ``create_collection``.
    :raises ValueError: for an unknown distance, non-positive dimensions, or an empty location
        or collection name.
    :raises TypeError: for a location or collection name that is not a string.
    :raises ImportError: if qdrant-client is not installed.
    """

    def __init__(
        self,
        location: Literal[":memory:"] | str | os.PathLike[str],
        collection_name: str,
        dimensions: int,
        distance: Literal["Cosine", "Euclid", "Dot", "Manhattan"] = "Cosine",
        client_kwargs: dict[str, Any] | None = None,
        collection_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        _require_qdrant()
        if distance.lower() not in _DISTANCES:
            raise ValueError(
                f"distance must be one of 'Cosine', 'Euclid', 'Dot', 'Manhattan', got {distance!r}"
            )
        check_dimensions(dimensions)
        location = check_name(location, "location")
        if _HOST_PORT.fullmatch(location):
            raise ValueError(
                f"location {location!r} looks like a Qdrant server without a scheme: pass "
                f"'http://{location}' (or './{location}' for a folder of that name)"
            )
        self.location = location
        self.collection_name = check_name(collection_name, "collection_name")
        self.dimensions = dimensions
        self.distance = _DISTANCES[distance.lower()]
        self.collection_kwargs = dict(collection_kwargs or {})
        # Kept private: it may hold an API key.
        self._client_kwargs = dict(client_kwargs or {})
        self._embedded = "://" not in location
        self._collection_known = False

    def __repr__(self) -> str:
        return (
            f"QdrantStore(location={redact_url(self.location)!r}, "
            f"collection_name={self.collection_name!r}, "
            f"dimensions={self.dimensions}, distance={self.distance!r})"
        )

    # -- runs in worker threads, under the lock -------------------------------------------------

    def _open(self) -> QdrantClient:
        from qdrant_client import QdrantClient

        if self.location == ":memory:":
            return QdrantClient(location=":memory:", **self._client_kwargs)
        if not self._embedded:
            # The client's server-version probe runs in a thread of its own that outlives
            # every call (and warns if the server went away meanwhile); off unless asked.
            kwargs = {"check_compatibility": False, **self._client_kwargs}
            return QdrantClient(url=self.location, **kwargs)
        return QdrantClient(path=self.location, **self._client_kwargs)

    def _has_collection(self, client: QdrantClient) -> bool:
        # Asked once, then remembered: against a server every question is a round trip.
        # A collection dropped behind the store's back is noticed when a call fails.
        if not self._collection_known:
            self._collection_known = client.collection_exists(self.collection_name)
        return self._collection_known

    def _gone(self, client: QdrantClient) -> bool:
        """After a failed call: whether it failed because the collection is gone."""
        self._collection_known = client.collection_exists(self.collection_name)
        return not self._collection_known

    def _rows(self, documents: list[Document]) -> list[Any]:
        from qdrant_client import models

        points = []
        for index, doc in enumerate(documents):
            vector = check_vector(doc.embedding, self.dimensions, f"documents[{index}]")
            payload = doc.metadata.to_dict()
            point_id = chunk_id_of(payload["doc_id"], payload["chunk_id"], payload["content"])
            doc.id = point_id  # what delete(ids=...) needs, also after the content was edited
            # Every field is checked or built here from JSON data: pydantic's validation of a
            # PointStruct would only repeat that, at a few microseconds per chunk.
            points.append(
                models.PointStruct.model_construct(id=point_id, vector=vector, payload=payload)
            )
        return points

    def _upsert(self, points: list[Any]) -> None:
        client = self._get()
        if not self._has_collection(client):
            self._create_collection(client)
        try:
            client.upsert(collection_name=self.collection_name, points=points, wait=True)
        except Exception:
            if not self._gone(client):
                raise
            self._create_collection(client)  # dropped meanwhile
            client.upsert(collection_name=self.collection_name, points=points, wait=True)

    def _create_collection(self, client: QdrantClient) -> None:
        from qdrant_client import models

        try:
            client.create_collection(
                collection_name=self.collection_name,
                vectors_config=models.VectorParams(
                    size=self.dimensions, distance=models.Distance(self.distance)
                ),
                **self.collection_kwargs,
            )
        except Exception:
            # Another store (another process) on the same server created it after this one
            # found it missing: Qdrant refuses the second create, and the collection is there.
            if not client.collection_exists(self.collection_name):
                raise
        self._collection_known = True

    def _query(self, vector: list[float], limit: int, kwargs: dict[str, Any]) -> list[Document]:
        client = self._get()
        if not self._has_collection(client):
            return []
        query: Any = vector
        if self._embedded:
            import numpy as np
            from qdrant_client import models

            # The embedded engine keeps float32 vectors but turns a list query into a float64
            # array, so every search would convert the whole collection to float64 (and copy
            # the query model first). A float32 array skips both: about 15% less time per
            # search on 10,000 chunks, scores as a Qdrant server computes them (in float32).
            query = models.NearestQuery.model_construct(nearest=np.asarray(vector, np.float32))
        try:
            response = client.query_points(
                collection_name=self.collection_name, query=query, limit=limit, **kwargs
            )
        except Exception:
            if self._gone(client):
                return []
            raise
        docs = []
        point: Any  # a ScoredPoint, payload and vector as this store wrote them
        for point in response.points:
            raw = float(point.score)
            score = distance_to_score(raw) if self.distance in _DISTANCE_METRICS else raw
            embedding = point.vector if isinstance(point.vector, list) else None
            docs.append(
                Document(
                    metadata=DocMetadata.from_dict(point.payload),
                    id=str(point.id),
                    embedding=embedding,
                    score=score,
                )
            )
        return docs

    def _delete(self, selector: Any) -> None:
        client = self._get()
        if not self._has_collection(client):
            return
        try:
            client.delete(collection_name=self.collection_name, points_selector=selector, wait=True)
        except Exception:
            if not self._gone(client):
                raise

    # -- the store ------------------------------------------------------------------------------

    async def search(
        self,
        query_embedding: list[float],
        limit: int,
        score_threshold: float | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """The up to *limit* chunks nearest *query_embedding*, most relevant first.

        Scores are cosine similarity or dot product as Qdrant computes them, and ``1 / (1 + d)``
        for the Euclidean or Manhattan distance ``d``.

        :param score_threshold: only chunks scoring at least this much (in those units).
        :param kwargs: passed to ``QdrantClient.query_points`` (``query_filter``,
            ``with_vectors``, ...).
        :raises ValueError: for a query of the wrong size, with a non-finite value or a norm
            beyond 9e18, a non-positive *limit*, a *score_threshold* that is not a number, or
            ``with_payload`` other than ``True``.
        """
        check_limit(limit)
        check_threshold(score_threshold)
        if kwargs.get("with_payload", True) is not True:
            raise ValueError(
                "QdrantStore.search builds each document from its point's whole payload; "
                f"with_payload={kwargs['with_payload']!r} is not supported (leave it out)"
            )
        vector = check_vector(query_embedding, self.dimensions, "query_embedding")
        return keep(await self._call(self._query, vector, limit, kwargs), score_threshold)

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
        from qdrant_client import models

        # Qdrant keys points by UUID: anything else cannot be stored, so there is nothing to do.
        chunk_ids = [i for i in as_id_list(ids, "ids") if _is_uuid(i)]
        documents = as_id_list(doc_ids, "doc_ids")
        if chunk_ids:
            await self._call(self._delete, models.PointIdsList(points=list(chunk_ids)))
        if documents:
            selector = models.FilterSelector(
                filter=models.Filter(
                    must=[models.FieldCondition(key="doc_id", match=models.MatchAny(any=documents))]
                )
            )
            await self._call(self._delete, selector)

    def get_client(self) -> QdrantClient:
        """The ``QdrantClient`` (synchronous; AgentScope hands out an ``AsyncQdrantClient``).

        Creating it the first time opens the database here, blocking; calls on it block too,
        so run them in a worker thread.

        :raises RuntimeError: once the store is closed.
        """
        return super().get_client()

    async def close(self) -> None:
        """Close the client (releasing an on-disk folder for the next store)."""
        await super().close()
