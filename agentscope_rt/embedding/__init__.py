"""Embedding models and embedding caches, as in AgentScope's ``agentscope.embedding``.

An :class:`EmbeddingModelBase` turns a list of texts into an :class:`EmbeddingResponse` with
one vector per text. Importing this package loads no provider SDK and no model runtime: each
class loads what it needs when it is built or first called.
"""

from ._cache_base import EmbeddingCacheBase
from ._embedding_base import EmbeddingModelBase
from ._embedding_response import EmbeddingResponse, EmbeddingUsage

__all__ = [
    "EmbeddingCacheBase",
    "EmbeddingModelBase",
    "EmbeddingResponse",
    "EmbeddingUsage",
]
