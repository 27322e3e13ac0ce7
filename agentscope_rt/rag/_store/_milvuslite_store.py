"""The Milvus Lite store: Milvus embedded in a local file (or a Milvus server by URL).

Each chunk is a row keyed by its chunk id (a string primary key), with its vector and its
metadata (``doc_id``, ``chunk_id``, ``content``, ``total_chunks``) as fields; rows are upserted.
AgentScope keys rows by ``abs(hash(...)) % 10**10``, which Python salts per process, so each
run inserted every chunk again. The synchronous ``MilvusClient`` is driven from worker threads;
see :mod:`._store_base` for the score, identity and threading rules.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
from collections.abc import Iterator, Sequence
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
    from pymilvus import MilvusClient

__all__ = ["MilvusLiteStore"]

_METRICS = ("COSINE", "L2", "IP")
_OUTPUT_FIELDS = ["doc_id", "chunk_id", "content", "total_chunks"]
# A chunk id is a UUID string (36 characters); room to spare for ids of other schemes.
_ID_LENGTH = 64


def _require_milvus() -> None:
    check_extra(("pymilvus",), extra="milvus", user="MilvusLiteStore (pymilvus with Milvus Lite)")


def _drop_unimplemented_rpc(record: logging.LogRecord) -> bool:
    """Whether to keep *record*: not when it is Milvus Lite's in-process gRPC server logging,
    with a traceback, that it lacks an RPC pymilvus tries (``AllocTimestamp``, while waiting
    for a new collection's index; pymilvus carries on without it)."""
    exc = record.exc_info[1] if record.exc_info else None
    return not (
        isinstance(exc, NotImplementedError) and "Method not implemented" in record.getMessage()
    )


@contextlib.contextmanager
def _without_unimplemented_rpc_errors() -> Iterator[None]:
    """Keep that one harmless traceback out of the application's logs while the block runs."""
    grpc_server_log = logging.getLogger("grpc._server")
    grpc_server_log.addFilter(_drop_unimplemented_rpc)
    try:
        yield
    finally:
        grpc_server_log.removeFilter(_drop_unimplemented_rpc)


def _in_filter(field: str, values: list[str]) -> str:
    # JSON string literals are valid Milvus string literals (double quotes, backslash escapes).
    return f"{field} in [{', '.join(json.dumps(v) for v in values)}]"


class MilvusLiteStore(SyncClientStoreBase["MilvusClient"]):
    """Chunks in a Milvus collection, embedded with Milvus Lite by default.

    Needs the ``milvus`` extra (``pymilvus[milvus_lite]``; Milvus Lite runs on Linux and
    macOS). The collection is created on the first :meth:`add`, with a string primary key;
    searching or deleting before that finds nothing.

    :param uri: a local file (``"./milvus.db"``, a string or a path) for Milvus Lite, or a
        server URL.
    :param collection_name: the collection to use.
    :param dimensions: the size of the embeddings.
    :param distance: ``"COSINE"``, ``"L2"`` or ``"IP"`` (any case).
    :param token: ``"user:password"`` or an API key for a server (kept out of reprs).
    :param client_kwargs: more arguments for ``MilvusClient``.
    :param collection_kwargs: more arguments for ``create_collection`` (its ``id_type`` must
        stay ``"string"``).
    :raises ValueError: for an unknown distance, non-positive dimensions, a non-string
        ``id_type``, or an empty uri or collection name.
    :raises TypeError: for a uri or collection name that is not a string.
    :raises ImportError: if pymilvus is not installed.
    """

    def __init__(
        self,
        uri: str | os.PathLike[str],
        collection_name: str,
        dimensions: int,
        distance: Literal["COSINE", "L2", "IP"] = "COSINE",
        token: str = "",
        client_kwargs: dict[str, Any] | None = None,
        collection_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        _require_milvus()
        if distance.upper() not in _METRICS:
            raise ValueError(f"distance must be one of 'COSINE', 'L2', 'IP', got {distance!r}")
        check_dimensions(dimensions)
        collection_kwargs = dict(collection_kwargs or {})
        if collection_kwargs.get("id_type", "string") != "string":
            raise ValueError(
                "MilvusLiteStore keys chunks by their string chunk id; collection_kwargs "
                f"id_type must be 'string', got {collection_kwargs['id_type']!r}"
            )
        collection_kwargs.setdefault("max_length", _ID_LENGTH)
        collection_kwargs["id_type"] = "string"
        self.uri = check_name(uri, "uri")
        self.collection_name = check_name(collection_name, "collection_name")
        self.dimensions = dimensions
        self.distance = distance.upper()
        self.collection_kwargs = collection_kwargs
        self._client_kwargs = dict(client_kwargs or {})
        if token:
            self._client_kwargs["token"] = token

    def __repr__(self) -> str:
        return (
            f"MilvusLiteStore(uri={redact_url(self.uri)!r}, "
            f"collection_name={self.collection_name!r}, "
            f"dimensions={self.dimensions}, distance={self.distance!r})"
        )

    # -- runs in worker threads, under the lock -------------------------------------------------

    def _open(self) -> MilvusClient:
        from pymilvus import MilvusClient

        with _without_unimplemented_rpc_errors():
            return MilvusClient(uri=self.uri, **self._client_kwargs)

    def _rows(self, documents: list[Document]) -> list[dict[str, Any]]:
        rows = []
        for index, doc in enumerate(documents):
            vector = check_vector(doc.embedding, self.dimensions, f"documents[{index}]")
            meta = doc.metadata
            content = meta.content.to_dict()
            doc.id = chunk_id_of(meta.doc_id, meta.chunk_id, content)  # see QdrantStore._rows
            rows.append(
                {
                    "id": doc.id,
                    "vector": vector,
                    "doc_id": meta.doc_id,
                    "chunk_id": meta.chunk_id,
                    "content": content,
                    "total_chunks": meta.total_chunks,
                }
            )
        return rows

    def _upsert(self, rows: list[dict[str, Any]]) -> None:
        client = self._get()
        if not client.has_collection(self.collection_name):
            with _without_unimplemented_rpc_errors():
                client.create_collection(
                    collection_name=self.collection_name,
                    dimension=self.dimensions,
                    metric_type=self.distance,
                    **self.collection_kwargs,
                )
        client.upsert(collection_name=self.collection_name, data=rows)

    def _search(self, vector: list[float], limit: int, kwargs: dict[str, Any]) -> list[Any]:
        client = self._get()
        if not client.has_collection(self.collection_name):
            return []
        # The metadata fields always: a Document cannot be built without them.
        asked = [f for f in kwargs.get("output_fields") or () if f not in _OUTPUT_FIELDS]
        kwargs["output_fields"] = [*_OUTPUT_FIELDS, *asked]
        results = client.search(
            collection_name=self.collection_name, data=[vector], limit=limit, **kwargs
        )
        return list(results[0]) if results else []

    def _delete(self, ids: list[str] | None, expression: str | None) -> None:
        client = self._get()
        if client.has_collection(self.collection_name):
            client.delete(collection_name=self.collection_name, ids=ids, filter=expression or "")

    # -- the store ------------------------------------------------------------------------------

    async def search(
        self,
        query_embedding: list[float],
        limit: int,
        score_threshold: float | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """The up to *limit* chunks nearest *query_embedding*, most relevant first.

        Scores are the cosine similarity or inner product as Milvus computes them, and
        ``1 / (1 + d)`` for the Euclidean distance ``d`` (Milvus reports its square; the
        root is taken first).

        :param score_threshold: only chunks scoring at least this much (in those units).
        :param kwargs: passed to ``MilvusClient.search`` (``filter``, ``output_fields``, ...;
            the metadata fields are always fetched, and a ``"vector"`` asked for becomes each
            document's ``embedding``).
        :raises ValueError: for a query of the wrong size, with a non-finite value or a norm
            beyond 9e18, a non-positive *limit* or a *score_threshold* that is not a number.
        """
        check_limit(limit)
        check_threshold(score_threshold)
        vector = check_vector(query_embedding, self.dimensions, "query_embedding")
        hits = await self._call(self._search, vector, limit, dict(kwargs))
        docs = []
        for hit in hits:
            raw = float(hit["distance"])
            score = distance_to_score(math.sqrt(max(raw, 0.0))) if self.distance == "L2" else raw
            entity = hit.get("entity", {})
            metadata = DocMetadata.from_dict(
                {
                    "content": entity.get("content"),
                    "doc_id": entity.get("doc_id"),
                    "chunk_id": entity.get("chunk_id"),
                    "total_chunks": entity.get("total_chunks"),
                }
            )
            # The vector, when output_fields asked for it.
            vector = entity.get("vector")
            embedding = [float(x) for x in vector] if vector is not None else None
            docs.append(
                Document(metadata=metadata, id=str(hit["id"]), embedding=embedding, score=score)
            )
        return keep(docs, score_threshold)

    async def delete(
        self,
        ids: str | Sequence[str] | None = None,
        filter: str | None = None,  # AgentScope's name and place (second)
        *,
        doc_ids: str | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remove the chunks with these *ids*, every chunk of the documents *doc_ids*, and the
        rows matching the Milvus *filter* expression. *filter* comes second, as in AgentScope
        (``store.delete(None, 'doc_id == "a"')``); *doc_ids* is keyword-only.

        :raises ValueError: if none is given.
        """
        check_delete_args(ids, doc_ids, filter)
        chunk_ids = as_id_list(ids, "ids")
        documents = as_id_list(doc_ids, "doc_ids")
        if chunk_ids:
            await self._call(self._delete, chunk_ids, None)
        if documents:
            await self._call(self._delete, None, _in_filter("doc_id", documents))
        if filter:
            await self._call(self._delete, None, filter)

    def get_client(self) -> MilvusClient:
        """The ``MilvusClient``. Creating it the first time starts Milvus Lite here, blocking;
        calls on it block too, so run them in a worker thread.

        :raises RuntimeError: once the store is closed.
        """
        return super().get_client()
