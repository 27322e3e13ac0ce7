"""Gemini's embedding API, ``models/{model}:batchEmbedContents``, over httpx."""

from __future__ import annotations

import functools
import os
import re
from typing import Any, ClassVar

from .._provider import RetryConfig
from ..message import TextBlock
from ._cache_base import EmbeddingCacheBase
from ._cached import cached_embed, one_response, timed
from ._embedding_base import check_count, empty_response, gather_texts
from ._embedding_response import EmbeddingResponse, EmbeddingUsage
from ._http_embedding import HttpEmbeddingModel

__all__ = ["GeminiTextEmbedding"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
DEFAULT_API_VERSION = "v1beta"


def _camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


class GeminiTextEmbedding(HttpEmbeddingModel):
    """A Gemini text embedding model (``gemini-embedding-001``, ``text-embedding-004``).

    One request per call (of at most :attr:`batch_size_limit`, 100, texts: Gemini's limit;
    longer lists go out in consecutive requests, each cached on its own), as the
    ``google-genai`` SDK sends ``embed_content``:
    ``POST {base}/v1beta/models/{model}:batchEmbedContents`` with one request per text,
    ``{"model": "models/{model}", "content": {"parts": [{"text": ...}]}, **config}``. The
    call's keyword arguments are the embed config (``task_type``, ``title``,
    ``output_dimensionality``; snake or camel case). As in AgentScope, ``dimensions`` is not
    sent: pass ``output_dimensionality=...`` to ask for shorter vectors. Gemini reports no
    token usage.

    :param api_key: the API key; defaults to ``$GEMINI_API_KEY`` (then ``$GOOGLE_API_KEY``).
        It is sent only in the ``x-goog-api-key`` header and never appears in reprs or errors.
    :param model_name: the embedding model.
    :param dimensions: the length of the model's vectors.
    :param embedding_cache: where to keep embeddings already computed.
    :param retry_config: the retry policy (default: 3 retries with exponential backoff).
    :param kwargs: ``base_url`` and ``api_version`` of the endpoint, and arguments for
        ``httpx.AsyncClient`` (``timeout``, ...).
    :raises ValueError: without an API key.
    """

    provider: ClassVar[str] = "gemini"
    batch_size_limit: int = 100
    """Texts per request: Gemini refuses more requests in one ``batchEmbedContents``."""

    def __init__(
        self,
        api_key: str | None,
        model_name: str,
        dimensions: int = 3072,
        embedding_cache: EmbeddingCacheBase | None = None,
        retry_config: RetryConfig | None = None,
        **kwargs: Any,
    ) -> None:
        key = api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
        if not key:
            raise ValueError(
                "GeminiTextEmbedding needs an API key: pass api_key=... or set GEMINI_API_KEY"
            )
        base_url = str(kwargs.pop("base_url", None) or DEFAULT_BASE_URL).rstrip("/")
        api_version = kwargs.pop("api_version", None) or DEFAULT_API_VERSION
        super().__init__(
            model_name,
            dimensions,
            base_url=f"{base_url}/{api_version}",
            headers={"x-goog-api-key": key},
            secrets=(key,),
            client_kwargs=kwargs,
            retry_config=retry_config,
        )
        self.embedding_cache = embedding_cache

    async def __call__(self, text: list[str | TextBlock], **kwargs: Any) -> EmbeddingResponse:
        """Embed *text* (strings or text blocks), one vector each, in order.

        :param kwargs: the embed config (``task_type``, ``title``, ``output_dimensionality``).
        :raises ValueError: for an item that is neither a string nor a text block.
        :raises ModelAPIError: when Gemini fails (after retries).
        """
        texts = gather_texts(text)
        if not texts:
            return empty_response()
        size = self.batch_size_limit
        responses = []
        for begin in range(0, len(texts), size):
            batch = texts[begin : begin + size]
            # The identifier AgentScope caches under: the arguments of the SDK's embed_content.
            identifier = {"model": self.model_name, "contents": batch, "config": kwargs}
            responses.append(
                await cached_embed(
                    self.embedding_cache,
                    identifier,
                    functools.partial(self._embed, batch, kwargs),
                    count=len(batch),
                    dimensions=kwargs.get("output_dimensionality"),
                )
            )
        return one_response(responses)

    async def _embed(self, texts: list[str], config_kwargs: dict[str, Any]) -> EmbeddingResponse:
        name = (
            self.model_name
            if self.model_name.startswith("models/")
            else (f"models/{self.model_name}")
        )
        config = {_camel(k): v for k, v in config_kwargs.items() if v is not None}
        body = {
            "requests": [
                {"model": name, "content": {"parts": [{"text": t}]}, **config} for t in texts
            ]
        }
        data, seconds = await timed(lambda: self._post(f"/{name}:batchEmbedContents", body))
        embeddings = self._parsed(
            data,
            lambda d: [list(map(float, e.get("values", []))) for e in d.get("embeddings") or []],
        )
        check_count(self.provider, embeddings, len(texts))
        return EmbeddingResponse(embeddings=embeddings, usage=EmbeddingUsage(time=seconds))
