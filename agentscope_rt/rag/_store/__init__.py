"""Vector stores: the interface, the embedded default (LocalVectorStore) and the Qdrant and
Milvus Lite implementations."""

from ._local_store import LocalVectorStore
from ._milvuslite_store import MilvusLiteStore
from ._qdrant_store import QdrantStore
from ._store_base import VDBStoreBase

__all__ = ["LocalVectorStore", "MilvusLiteStore", "QdrantStore", "VDBStoreBase"]
