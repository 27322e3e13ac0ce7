"""The call template shared by the providers that speak HTTP through httpx (Ollama, Gemini).

A model keeps one ``httpx.AsyncClient`` per event loop (:class:`~._loop_client.LoopClients`:
made on the first call in a loop, reused by the later ones, closed when that loop ends), so a
model object works from any event loop, reuses its connections, and never leaves one behind
even when the program never closes it. A non-streaming call
POSTs the body and parses the JSON answer; a streaming call opens the response with
:meth:`HttpChatModel._open_stream`, which turns an HTTP error status into
``httpx.HTTPStatusError`` (with the body read, so the retry layer can quote the provider's
message) and closes the response, shielded, however the stream ends. Both run under
:mod:`agentscope_rt.model._retry`.
"""

from __future__ import annotations

import contextlib
import json
import time
from abc import abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, ClassVar, Self

import httpx

from .._provider import (
    BadResponse,
    LoopClients,
    RetryConfig,
    call_with_retry,
    close_client,
    close_orphans,
    excerpt,
    parse_answer,
    post_streamed,
    response_lines,
    shape_checked,
    stream_with_retry,
)
from .._schema import StructuredModel
from ._common import scrub_surrogates
from ._model_base import ChatModelBase
from ._model_response import ChatResponse

__all__ = ["HttpChatModel", "response_lines"]


class HttpChatModel(ChatModelBase):
    """A chat model whose requests are JSON bodies POSTed with httpx.

    Subclasses give the client (:meth:`_new_client`), the non-streaming request
    (:meth:`_post`), its parser (:meth:`_parse`) and one streaming attempt
    (:meth:`_stream_once`); :meth:`_send` runs them under :attr:`retry_config`, scrubbing
    :attr:`_redact` from errors. The model is an async context manager that closes its client
    on exit; without it the client is closed when the event loop ends.
    """

    provider: ClassVar[str]
    retry_config: RetryConfig | None
    _redact: tuple[str, ...] = ()
    _loop_clients: LoopClients[httpx.AsyncClient] | None = None

    @abstractmethod
    def _new_client(self) -> httpx.AsyncClient:
        """A new client (one per event loop; see :meth:`_client`)."""

    def _client(self) -> httpx.AsyncClient:
        """The running event loop's client, made by :meth:`_new_client` on first use."""
        clients = self._loop_clients
        if clients is None:
            clients = self._loop_clients = LoopClients(self._new_client, close_client)
        return clients.get()

    async def aclose(self) -> None:
        """Close the running event loop's client now (safe to call twice; a later call opens
        a new one). Clients used in other event loops are closed when those loops end."""
        if self._loop_clients is not None:
            await self._loop_clients.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

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
        await close_orphans()
        started = time.monotonic()
        if self.stream:
            return stream_with_retry(
                self.provider,
                lambda: shape_checked(
                    self._stream_once(body, structured_model, started), scrub_surrogates
                ),
                self.retry_config,
                redact=self._redact,
            )

        async def attempt() -> ChatResponse:
            # Parsed inside the retried attempt: an answer that is not what the protocol
            # promises raises BadResponse, which the policy retries as a server fault.
            try:
                data: Any = await self._post(body)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:  # not JSON text
                raise BadResponse(f"the response body is not JSON ({exc})") from None
            if not isinstance(data, dict):
                raise BadResponse(f"the response body is not a JSON object: {excerpt(data)}")
            return parse_answer(
                data, lambda: scrub_surrogates(self._parse(data, structured_model, started))
            )

        return await call_with_retry(self.provider, attempt, self.retry_config, redact=self._redact)

    async def _post_json(self, path: str, body: dict[str, Any]) -> httpx.Response:
        """POST *body* to *path*; the response, its body read.

        :raises httpx.HTTPStatusError: for an error status.
        """
        headers = await self._request_headers()
        response = await self._client().post(path, json=body, headers=headers)
        response.raise_for_status()
        return response

    async def _request_headers(self) -> dict[str, str] | None:
        """Headers added to each request (beyond the client's own, e.g. a short-lived access
        token); none by default."""
        return None

    @contextlib.asynccontextmanager
    async def _open_stream(
        self, path: str, body: dict[str, Any], params: dict[str, str] | None = None
    ) -> AsyncIterator[httpx.Response]:
        """The streamed response to a POST of *body* to *path*, closed (shielded) on exit.

        :raises httpx.HTTPStatusError: for an error status, with the body already read.
        """
        headers = await self._request_headers()
        async with post_streamed(
            self._client(), path, body, params=params, headers=headers
        ) as response:
            yield response
