"""OpenAI's embedding API through the ``openai`` SDK (imported when a model is built)."""

from __future__ import annotations

import functools
from typing import Any, ClassVar, Self

import anyio

from .._provider import (
    LoopClients,
    RetryConfig,
    Secrets,
    call_with_retry,
    close_orphans,
    close_sdk_client,
    loop_copy,
    parsed_sdk_answer,
    resolve_api_key,
    sdk_owns_http_client,
)
from ..message import TextBlock
from ._cache_base import EmbeddingCacheBase
from ._cached import embed_all, timed
from ._embedding_base import (
    EmbeddingModelBase,
    check_count,
    gather_texts,
)
from ._embedding_response import EmbeddingResponse, EmbeddingUsage

__all__ = ["OpenAITextEmbedding"]


def _vectors_and_tokens(response: Any) -> tuple[list[list[float]], int | None]:
    """The vectors of an embeddings answer in input order, and its total tokens if given."""
    embeddings = [
        list(item.embedding) for item in sorted(response.data, key=lambda item: item.index)
    ]
    return embeddings, getattr(getattr(response, "usage", None), "total_tokens", None)


class OpenAITextEmbedding(EmbeddingModelBase):
    """An OpenAI text embedding model (``text-embedding-3-small``, ...) or any server that
    speaks OpenAI's ``/embeddings`` protocol (``base_url=...``).

    One request per call, ``{"input": [texts], "model", "dimensions", "encoding_format":
    "float", **kwargs}``, as in AgentScope; more than :attr:`batch_size_limit` (2048, OpenAI's
    limit) texts go out in consecutive requests of that many, each cached on its own.

    The SDK client is a template: each event loop gets its own copy with its own connection
    pool, closed when that loop ends (as the chat models do), and the SDK's own retries are
    off: :paramref:`retry_config` governs them.

    :param api_key: the API key; defaults to ``$OPENAI_API_KEY`` (not needed with a
        ``base_url``). It never appears in reprs or errors.
    :param model_name: the embedding model.
    :param dimensions: the length of the returned vectors (sent as ``dimensions``).
    :param embedding_cache: where to keep embeddings already computed.
    :param retry_config: the retry policy (default: 3 retries with exponential backoff).
    :param kwargs: arguments for ``openai.AsyncClient`` (``base_url``, ``timeout``,
        ``organization``, ...); ``max_retries`` is ignored.
    :raises ValueError: without an API key and without a ``base_url``.
    """

    provider: ClassVar[str] = "openai"
    batch_size_limit: int = 2048
    """Texts per request: OpenAI refuses more in one ``input``."""

    def __init__(
        self,
        api_key: str | None,
        model_name: str,
        dimensions: int = 1024,
        embedding_cache: EmbeddingCacheBase | None = None,
        retry_config: RetryConfig | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(model_name, dimensions)
        kwargs.pop("max_retries", None)
        key = resolve_api_key(
            api_key, "OPENAI_API_KEY", "OpenAITextEmbedding", required=not kwargs.get("base_url")
        )
        import openai

        template = openai.AsyncClient(api_key=key or "unused", max_retries=0, **kwargs)
        self._client_template = template
        self._loop_clients: LoopClients[Any] | None = (
            LoopClients(functools.partial(loop_copy, template), close_sdk_client)
            if sdk_owns_http_client(template)
            else None
        )
        self._redact = Secrets((key,) if key else ())
        self.embedding_cache = embedding_cache
        self.retry_config = retry_config

    @property
    def client(self) -> Any:
        """The SDK client of the running event loop (outside one: the template, which has
        opened no connection)."""
        if self._loop_clients is not None:
            try:
                return self._loop_clients.get()
            except anyio.NoEventLoopError:
                pass
        return self._client_template

    async def __call__(self, text: list[str | TextBlock], **kwargs: Any) -> EmbeddingResponse:
        """Embed *text* (strings or text blocks), one vector each, in order.

        :param kwargs: more request fields (``user``, ``extra_body``, ...).
        :raises ValueError: for an item that is neither a string nor a text block.
        :raises ModelAPIError: when the API fails (after retries); requests of a long list
            already answered stay in the cache.
        """
        fields = {
            "model": self.model_name,
            "dimensions": self.dimensions,
            "encoding_format": "float",
            **kwargs,
        }
        return await embed_all(
            self.embedding_cache,
            gather_texts(text),
            self.batch_size_limit,
            fields,
            self._embed,
            dimension_key="dimensions",
        )

    async def _embed(self, request: dict[str, Any]) -> EmbeddingResponse:
        await close_orphans()
        client = self.client

        async def attempt() -> tuple[list[list[float]], int | None]:
            # Parsed inside the retried attempt: an answer that is not JSON or not of the
            # embeddings' shape raises BadResponse, retried as a server fault.
            return await parsed_sdk_answer(
                lambda: client.embeddings.create(**request), _vectors_and_tokens
            )

        (embeddings, tokens), seconds = await timed(
            lambda: call_with_retry(self.provider, attempt, self.retry_config, redact=self._redact)
        )
        check_count(self.provider, embeddings, len(request["input"]))
        return EmbeddingResponse(
            embeddings=embeddings, usage=EmbeddingUsage(time=seconds, tokens=tokens)
        )

    async def aclose(self) -> None:
        """Close the running event loop's SDK client now (safe to call twice). Clients used
        in other event loops are closed when those loops end; a client built with the
        user's ``http_client`` is closed."""
        if self._loop_clients is not None:
            await self._loop_clients.aclose()
        else:
            await close_sdk_client(self._client_template)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
