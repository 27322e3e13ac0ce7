"""Ollama's embedding API, ``POST /api/embed``, over httpx."""

from __future__ import annotations

import os
from typing import Any, ClassVar

from .._provider import RetryConfig
from ..message import TextBlock
from ._cache_base import EmbeddingCacheBase
from ._cached import cached_embed, timed
from ._embedding_base import check_count, empty_response, gather_texts
from ._embedding_response import EmbeddingResponse, EmbeddingUsage
from ._http_embedding import HttpEmbeddingModel

__all__ = ["OllamaTextEmbedding"]

DEFAULT_HOST = "http://localhost:11434"


class OllamaTextEmbedding(HttpEmbeddingModel):
    """A text embedding model served by Ollama.

    One request per call: ``{"model", "input": [texts], "dimensions", **kwargs}`` to
    ``/api/embed``; the answer's ``embeddings`` are returned in order, and its
    ``prompt_eval_count`` as the tokens used.

    :param model_name: the Ollama model, e.g. ``"nomic-embed-text"``.
    :param dimensions: the length of the model's vectors (sent as ``dimensions``).
    :param host: the server; defaults to ``$OLLAMA_HOST`` or ``http://localhost:11434``.
    :param embedding_cache: where to keep embeddings already computed.
    :param retry_config: the retry policy (default: 3 retries with exponential backoff).
    :param kwargs: arguments for ``httpx.AsyncClient`` (``timeout``, ``headers``, ...), as
        AgentScope passes them to Ollama's client.
    """

    provider: ClassVar[str] = "ollama"

    def __init__(
        self,
        model_name: str,
        dimensions: int,
        host: str | None = None,
        embedding_cache: EmbeddingCacheBase | None = None,
        retry_config: RetryConfig | None = None,
        **kwargs: Any,
    ) -> None:
        host = host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST
        if "://" not in host:
            host = f"http://{host}"
        super().__init__(
            model_name,
            dimensions,
            base_url=host,
            headers={},
            secrets=(),
            client_kwargs=kwargs,
            retry_config=retry_config,
        )
        self.host = self.base_url
        self.embedding_cache = embedding_cache

    async def __call__(self, text: list[str | TextBlock], **kwargs: Any) -> EmbeddingResponse:
        """Embed *text* (strings or text blocks), one vector each, in order.

        :param kwargs: more request fields (``truncate``, ``options``, ``keep_alive``).
        :raises ValueError: for an item that is neither a string nor a text block.
        :raises ModelAPIError: when Ollama fails (after retries).
        """
        texts = gather_texts(text)
        if not texts:
            return empty_response()
        body = {
            "input": texts,
            "model": self.model_name,
            "dimensions": self.dimensions,
            **kwargs,
        }

        async def compute() -> EmbeddingResponse:
            data, seconds = await timed(lambda: self._post("/api/embed", body))
            tokens = data.get("prompt_eval_count")
            embeddings = self._parsed(
                data, lambda d: [list(map(float, e)) for e in d.get("embeddings") or []]
            )
            check_count(self.provider, embeddings, len(texts))
            return EmbeddingResponse(
                embeddings=embeddings,
                usage=EmbeddingUsage(
                    time=seconds, tokens=tokens if isinstance(tokens, int) else None
                ),
            )

        return await cached_embed(
            self.embedding_cache,
            body,
            compute,
            count=len(texts),
            dimensions=body.get("dimensions"),
        )
