"""Embedding models and embedding caches, as in AgentScope's ``agentscope.embedding``.

An :class:`EmbeddingModelBase` turns a list of texts into an :class:`EmbeddingResponse` with
one vector per text:

* provider models — :class:`OpenAITextEmbedding` (through the ``openai`` SDK),
  :class:`DashScopeTextEmbedding`, :class:`DashScopeMultiModalEmbedding` (texts, images and
  videos), :class:`GeminiTextEmbedding` and :class:`OllamaTextEmbedding` (over httpx), all
  retried and closed like the chat models;
* :class:`LocalTextEmbedding` — all-MiniLM-L6-v2 in the process, offline (the ``embedding``
  extra); :func:`default_embedding_model` picks it when no provider key is set.

Any model takes an ``embedding_cache``; :class:`FileEmbeddingCache` keeps AgentScope's file
format. Importing this package loads no provider SDK, no NumPy and no model runtime: each
class loads what it needs when it is built or first called.
"""

from ._cache_base import EmbeddingCacheBase
from ._dashscope_embedding import DashScopeTextEmbedding
from ._dashscope_multimodal_embedding import DashScopeMultiModalEmbedding
from ._default import default_embedding_model
from ._embedding_base import EmbeddingModelBase
from ._embedding_response import EmbeddingResponse, EmbeddingUsage
from ._file_cache import FileEmbeddingCache
from ._gemini_embedding import GeminiTextEmbedding
from ._local_embedding import LocalTextEmbedding
from ._ollama_embedding import OllamaTextEmbedding
from ._openai_embedding import OpenAITextEmbedding

__all__ = [
    "DashScopeMultiModalEmbedding",
    "DashScopeTextEmbedding",
    "EmbeddingCacheBase",
    "EmbeddingModelBase",
    "EmbeddingResponse",
    "EmbeddingUsage",
    "FileEmbeddingCache",
    "GeminiTextEmbedding",
    "LocalTextEmbedding",
    "OllamaTextEmbedding",
    "OpenAITextEmbedding",
    "default_embedding_model",
]
