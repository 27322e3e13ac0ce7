"""The call template shared by the providers that speak HTTP through httpx (Ollama, Gemini).

Each call opens its own ``httpx.AsyncClient`` (:meth:`HttpChatModel._client`), so a model
object works from any event loop and never leaves a connection behind. A non-streaming call
POSTs the body and parses the JSON answer; a streaming call opens the response with
:meth:`HttpChatModel._open_stream`, which turns an HTTP error status into
``httpx.HTTPStatusError`` (with the body read, so the retry layer can quote the provider's
message) and closes the response, shielded, however the stream ends. Both run under
:mod:`agentscope_rt.model._retry`.
"""

from __future__ import annotations

import contextlib
import time
from abc import abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, ClassVar

import httpx

from .._schema import StructuredModel
from ._model_base import ChatModelBase
from ._model_response import ChatResponse
from ._retry import RetryConfig, call_with_retry, close_shielded, stream_with_retry

__all__ = ["HttpChatModel"]


class HttpChatModel(ChatModelBase):
    """A chat model whose requests are JSON bodies POSTed with httpx.

    Subclasses give the client (:meth:`_client`), the non-streaming request (:meth:`_post`),
    its parser (:meth:`_parse`) and one streaming attempt (:meth:`_stream_once`);
    :meth:`_send` runs them under :attr:`retry_config`, scrubbing :attr:`_redact` from errors.
    """

    provider: ClassVar[str]
    retry_config: RetryConfig | None
    _redact: tuple[str, ...] = ()

    @abstractmethod
    def _client(self) -> httpx.AsyncClient:
        """A new client for one call (closed by the caller)."""

    @abstractmethod
    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """Send *body* as one non-streaming request and return the JSON answer."""

    @abstractmethod
    def _parse(
        self, data: dict[str, Any], structured_model: StructuredModel | None, started: float
    ) -> ChatResponse:
        """The :class:`ChatResponse` of a complete answer to a request sent at *started*."""

    @abstractmethod
    def _stream_once(
        self, body: dict[str, Any], structured_model: StructuredModel | None, started: float
    ) -> AsyncGenerator[ChatResponse, None]:
        """One streaming attempt: send *body* and yield cumulative chunks."""

    async def _send(
        self, body: dict[str, Any], structured_model: StructuredModel | None
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        """Send *body* under the retry policy: the parsed answer, or the retried stream of
        cumulative chunks when streaming."""
        started = time.monotonic()
        if self.stream:
            return stream_with_retry(
                self.provider,
                lambda: self._stream_once(body, structured_model, started),
                self.retry_config,
                redact=self._redact,
            )
        data = await call_with_retry(
            self.provider, lambda: self._post(body), self.retry_config, redact=self._redact
        )
        return self._parse(data, structured_model, started)

    async def _post_json(self, path: str, body: dict[str, Any]) -> httpx.Response:
        """POST *body* to *path* on a fresh client; the response, its body read.

        :raises httpx.HTTPStatusError: for an error status.
        """
        async with self._client() as client:
            response = await client.post(path, json=body)
            response.raise_for_status()
        return response

    @contextlib.asynccontextmanager
    async def _open_stream(
        self, path: str, body: dict[str, Any], params: dict[str, str] | None = None
    ) -> AsyncIterator[httpx.Response]:
        """The streamed response to a POST of *body* to *path*, closed (shielded) on exit.

        :raises httpx.HTTPStatusError: for an error status, with the body already read.
        """
        async with self._client() as client:
            request = client.build_request("POST", path, params=params, json=body)
            response = await client.send(request, stream=True)
            try:
                if response.is_error:
                    await response.aread()
                    response.raise_for_status()
                yield response
            finally:
                await close_shielded(response)
