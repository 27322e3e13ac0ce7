"""Choosing an embedding model from the environment."""

from __future__ import annotations

import os

from ._cache_base import EmbeddingCacheBase
from ._embedding_base import EmbeddingModelBase

__all__ = ["default_embedding_model"]


def default_embedding_model(
    embedding_cache: EmbeddingCacheBase | None = None,
) -> EmbeddingModelBase:
    """An embedding model that works here: a provider's when its API key is set, else the
    local one.

    * ``OPENAI_API_KEY`` set: ``OpenAITextEmbedding("text-embedding-3-small", 1536)``;
    * else ``DASHSCOPE_API_KEY`` set: ``DashScopeTextEmbedding("text-embedding-v4", 1024)``;
    * else :class:`LocalTextEmbedding` (all-MiniLM-L6-v2, 384 dimensions, offline).

    Vectors of different models are not comparable: build a knowledge base and query it with
    the same model.

    :param embedding_cache: the cache the model uses.
    """
    if os.environ.get("OPENAI_API_KEY"):
        from ._openai_embedding import OpenAITextEmbedding

        return OpenAITextEmbedding(
            None, "text-embedding-3-small", 1536, embedding_cache=embedding_cache
        )
    if os.environ.get("DASHSCOPE_API_KEY"):
        from ._dashscope_embedding import DashScopeTextEmbedding

        return DashScopeTextEmbedding(
            None, "text-embedding-v4", 1024, embedding_cache=embedding_cache
        )
    from ._local_embedding import LocalTextEmbedding

    return LocalTextEmbedding(embedding_cache=embedding_cache)
