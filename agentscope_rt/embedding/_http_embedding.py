"""What the HTTP embedding models share: one httpx client per event loop, retries, redaction.

The pieces are the chat models' own (:mod:`agentscope_rt._provider`): :class:`LoopClients`
keeps one ``httpx.AsyncClient`` per event loop, closed when that loop ends (or at :meth:`aclose` /
the end of ``async with model``), so a model works from asyncio and trio alike and never
leaves a connection behind; every request runs under the shared retry policy (429, 408, 409,
5xx, connection errors and timeouts retried with backoff, ``Retry-After`` honoured) and fails
with :class:`~agentscope_rt.exception.ModelAPIError`, with the API key scrubbed from its
message. The key itself lives in the client's headers only, never in a repr.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Self, TypeVar

import anyio.to_thread
import httpx

from .._provider import (
    RetryConfig,
    Secrets,
    call_with_retry,
    close_orphans,
    excerpt,
    http_loop_clients,
    redact_text,
)
from ..exception import ModelAPIError
from ._embedding_base import EmbeddingModelBase

__all__ = ["HttpEmbeddingModel"]

T = TypeVar("T")

DEFAULT_TIMEOUT = httpx.Timeout(120.0, connect=10.0)
"""Embedding a batch takes seconds at most; connecting should fail fast."""

_SHAPE_ERRORS = (AttributeError, TypeError, KeyError, IndexError, ValueError)
_QUOTED = 300
"""Characters of a malformed answer quoted in the error (an answer may hold megabytes)."""

DECODE_IN_THREAD = 256 * 1024
"""Answers larger than this (bytes) are decoded in a worker thread: JSON decodes at about
60 MB/s, so 2,000 vectors of 768 numbers (31 MB) would hold the event loop for half a second;
below it the thread round trip costs more than the decoding."""


class HttpEmbeddingModel(EmbeddingModelBase):
    """An embedding model whose requests are JSON bodies POSTed with httpx.

    :param model_name: the provider's model name.
    :param dimensions: the length of the returned vectors.
    :param base_url: the provider's base URL.
    :param headers: headers of every request (the API key goes here, never into reprs).
    :param secrets: strings scrubbed from error messages (the API key).
    :param client_kwargs: more arguments for ``httpx.AsyncClient`` (``timeout``, ...).
    :param retry_config: the retry policy; ``None`` means ``RetryConfig()``.
    """

    provider: ClassVar[str]

    def __init__(
        self,
        model_name: str,
        dimensions: int,
        *,
        base_url: str,
        headers: dict[str, str],
        secrets: tuple[str | None, ...],
        client_kwargs: dict[str, Any] | None,
        retry_config: RetryConfig | None,
    ) -> None:
        super().__init__(model_name, dimensions)
        self.base_url = base_url.rstrip("/")
        self.retry_config = retry_config
        self._redact = Secrets(s for s in secrets if s)
        self._loop_clients = http_loop_clients(
            type(self).__name__, self.base_url, headers, client_kwargs, DEFAULT_TIMEOUT
        )

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST *body* to *path* under the retry policy; the JSON answer.

        :raises ModelAPIError: for an error status (after retries for retryable ones), a
            connection failure or a timeout, or an answer that is not a JSON object.
        """
        await close_orphans()

        async def once() -> dict[str, Any]:
            response = await self._loop_clients.get().post(path, json=body)
            response.raise_for_status()
            data: Any
            if len(response.content) > DECODE_IN_THREAD:
                data = await anyio.to_thread.run_sync(response.json)
            else:
                data = response.json()
            return data

        try:
            data = await call_with_retry(
                self.provider, once, self.retry_config, redact=self._redact
            )
        except ValueError as exc:  # the body was not JSON
            raise ModelAPIError(self.provider, f"the answer is not JSON: {exc}") from None

        if not isinstance(data, dict):
            raise ModelAPIError(self.provider, f"expected a JSON object, got {type(data).__name__}")
        return data

    def _parsed(self, data: dict[str, Any], parse: Callable[[dict[str, Any]], T]) -> T:
        """``parse(data)`` of an answer: one of the wrong shape (a string where a list of
        numbers belongs, a missing key) raises :class:`ModelAPIError` quoting its start,
        instead of the parser's ``ValueError``, ``TypeError``, ``AttributeError``, ...

        :raises ModelAPIError: as said, or as *parse* raises it.
        """
        try:
            return parse(data)
        except ModelAPIError:
            raise
        except _SHAPE_ERRORS as exc:
            quoted = redact_text(excerpt(data), [(s, "***") for s in self._redact])
            raise ModelAPIError(
                self.provider,
                f"the answer does not have the expected shape ({type(exc).__name__}: {exc}): "
                f"{quoted[:_QUOTED]}",
            ) from None

    async def aclose(self) -> None:
        """Close the running event loop's client now (safe to call twice; a later call opens
        a new one). Clients used in other event loops are closed when those loops end."""
        await self._loop_clients.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
