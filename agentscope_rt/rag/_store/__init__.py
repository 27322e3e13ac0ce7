"""Vector stores: the interface and the Qdrant and Milvus Lite implementations."""

from ._milvuslite_store import MilvusLiteStore
from ._qdrant_store import QdrantStore
from ._store_base import VDBStoreBase

__all__ = ["MilvusLiteStore", "QdrantStore", "VDBStoreBase"]
