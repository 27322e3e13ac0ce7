"""DashScope's text embedding API (``text-embedding-v1`` .. ``v4``), over httpx.

The request is the one the ``dashscope`` SDK's ``TextEmbedding.call`` sends:
``POST {base}/services/embeddings/text-embedding/text-embedding`` with
``{"model", "input": {"texts": [...]}, "parameters": {"dimension": ..., **kwargs}}`` and the
key as a bearer token; the answer holds ``output.embeddings`` (each with its ``text_index``)
and ``usage.total_tokens``.
"""

from __future__ import annotations

import logging
import os
from typing import Any, ClassVar

from .._provider import RetryConfig, resolve_api_key
from ..exception import ModelAPIError
from ..message import TextBlock
from ._cache_base import EmbeddingCacheBase
from ._cached import embed_all, timed
from ._embedding_base import gather_texts
from ._embedding_response import EmbeddingResponse, EmbeddingUsage
from ._http_embedding import HttpEmbeddingModel

__all__ = ["DashScopeTextEmbedding"]

logger = logging.getLogger(__name__)

DASHSCOPE_NATIVE_BASE_URL = "https://dashscope.aliyuncs.com/api/v1"
_PATH = "/services/embeddings/text-embedding/text-embedding"


def dashscope_connection(
    api_key: str | None, base_http_api_url: str | None, owner: str
) -> dict[str, Any]:
    """``HttpEmbeddingModel``'s connection arguments for DashScope's native API: the base URL
    (``$DASHSCOPE_HTTP_BASE_URL`` by default), the key as a bearer token (``$DASHSCOPE_API_KEY``
    by default) and the key to redact.

    :raises ValueError: without an API key (naming *owner*).
    """
    key = resolve_api_key(api_key, "DASHSCOPE_API_KEY", owner)
    return {
        "base_url": base_http_api_url
        or os.environ.get("DASHSCOPE_HTTP_BASE_URL", DASHSCOPE_NATIVE_BASE_URL),
        "headers": {"Authorization": f"Bearer {key}", "Accept": "application/json"},
        "secrets": (key,),
    }


class DashScopeTextEmbedding(HttpEmbeddingModel):
    """A DashScope text embedding model.

    DashScope takes at most 10 texts per request for ``text-embedding-v3`` and ``v4`` (25 for
    ``v1``/``v2``); as in AgentScope, a call sends its texts in consecutive batches of 10, one
    request after another, and each batch is cached on its own. The vector length is sent as
    ``dimension`` (singular), DashScope's name for it.

    :param api_key: the API key; defaults to ``$DASHSCOPE_API_KEY``. It travels only in the
        ``Authorization`` header and never appears in reprs or errors.
    :param model_name: e.g. ``"text-embedding-v4"``.
    :param dimensions: the length of the returned vectors (``dimension``).
    :param embedding_cache: where to keep embeddings already computed.
    :param base_http_api_url: DashScope's native API base; defaults to
        ``$DASHSCOPE_HTTP_BASE_URL`` or ``https://dashscope.aliyuncs.com/api/v1``.
    :param retry_config: the retry policy (default: 3 retries with exponential backoff).
    :param client_kwargs: arguments for ``httpx.AsyncClient`` (``timeout``, ...).
    :raises ValueError: without an API key.
    """

    provider: ClassVar[str] = "dashscope"
    batch_size_limit: int = 10
    """Texts per request."""

    def __init__(
        self,
        api_key: str | None,
        model_name: str,
        dimensions: int = 1024,
        embedding_cache: EmbeddingCacheBase | None = None,
        base_http_api_url: str | None = None,
        retry_config: RetryConfig | None = None,
        client_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            model_name,
            dimensions,
            **dashscope_connection(api_key, base_http_api_url, "DashScopeTextEmbedding"),
            client_kwargs=client_kwargs,
            retry_config=retry_config,
        )
        self.embedding_cache = embedding_cache

    async def __call__(self, text: list[str | TextBlock], **kwargs: Any) -> EmbeddingResponse:
        """Embed *text* (strings or text blocks), one vector each, in order, in batches of
        :attr:`batch_size_limit`.

        :param kwargs: more request parameters (``text_type``, ``output_type``, ``instruct``).
        :raises ValueError: for an item that is neither a string nor a text block.
        :raises ModelAPIError: when DashScope fails (after retries); batches already embedded
            stay in the cache.
        """
        texts = gather_texts(text)
        size = self.batch_size_limit
        if len(texts) > size:
            logger.info(
                "The input texts (%d) will be embedded with %d API calls due to the batch "
                "size limit of %d for DashScope embedding API.",
                len(texts),
                (len(texts) + size - 1) // size,
                size,
            )
        fields = {"model": self.model_name, "dimension": self.dimensions, **kwargs}
        return await embed_all(
            self.embedding_cache, texts, size, fields, self._embed_batch, dimension_key="dimension"
        )

    async def _embed_batch(self, batch: dict[str, Any]) -> EmbeddingResponse:
        parameters = {k: v for k, v in batch.items() if k not in ("input", "model")}
        body = {
            "model": batch["model"],
            "input": {"texts": batch["input"]},
            "parameters": parameters,
        }
        data, seconds = await timed(lambda: self._post(_PATH, body))
        output = data.get("output")
        items = output.get("embeddings") if isinstance(output, dict) else None
        if not isinstance(items, list) or len(items) != len(batch["input"]):
            raise ModelAPIError(
                self.provider,
                f"expected {len(batch['input'])} embeddings in output.embeddings, got "
                f"{len(items) if isinstance(items, list) else 'none'}",
            )
        embeddings, usage = self._parsed(data, lambda d: _vectors_and_usage(d, items, seconds))
        return EmbeddingResponse(embeddings=embeddings, usage=usage)


def _vectors_and_usage(
    data: dict[str, Any], items: list[Any], seconds: float
) -> tuple[list[list[float]], EmbeddingUsage]:
    """The vectors of an answer's *items* in text order, and its usage."""
    # DashScope numbers each vector with its text's position; order by it.
    ordered = sorted(items, key=lambda item: int(item.get("text_index", 0)))
    usage = data.get("usage") or {}
    return (
        [list(map(float, item["embedding"])) for item in ordered],
        EmbeddingUsage(time=seconds, tokens=int(usage.get("total_tokens") or 0)),
    )
