"""What the HTTP text-to-speech models share: one httpx client per event loop, the retry
policy, redaction, and the cumulative audio of a stream.

A subclass gives :meth:`HttpTTSModel._fill`, one attempt that sends the request and adds the
audio to an :class:`AudioBuffer` as it arrives. With ``stream=True`` the chunks are yielded as
they come (a failure before the first chunk is retried); otherwise the whole attempt is
retried and one response returned. Failures end as
:class:`~agentscope_rt.exception.ModelAPIError` with the API key scrubbed.
"""

from __future__ import annotations

import contextlib
import time
from abc import abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, ClassVar

import httpx

from .._provider import (
    BadResponse,
    RetryConfig,
    Secrets,
    call_with_retry,
    close_orphans,
    http_loop_clients,
    post_streamed,
    stream_with_retry,
)
from ..message import Msg
from ._tts_base import TTSModelBase
from ._tts_response import AudioBuffer, TTSResponse, TTSUsage

__all__ = ["HttpTTSModel"]

DEFAULT_TIMEOUT = httpx.Timeout(300.0, connect=10.0)
"""A long text takes a while to speak; connecting should fail fast."""


class HttpTTSModel(TTSModelBase):
    """A text-to-speech model reached over HTTP with httpx (see the module docstring).

    :param base_url: the provider's base URL.
    :param headers: headers of every request (the API key goes here, never into reprs).
    :param secrets: strings scrubbed from error messages (the API key).
    :param client_kwargs: more arguments for ``httpx.AsyncClient`` (``timeout``, ...).
    :param retry_config: the retry policy; ``None`` means ``RetryConfig()``.
    :raises TypeError: for *client_kwargs* that ``httpx.AsyncClient`` does not take.
    """

    provider: ClassVar[str]
    media_type: ClassVar[str]

    def __init__(
        self,
        model_name: str,
        stream: bool,
        *,
        base_url: str,
        headers: dict[str, str],
        secrets: tuple[str | None, ...],
        client_kwargs: dict[str, Any] | None,
        retry_config: RetryConfig | None,
        generate_kwargs: dict[str, Any] | None,
    ) -> None:
        super().__init__(model_name, stream)
        self.base_url = base_url.rstrip("/")
        self.retry_config = retry_config
        self.generate_kwargs = dict(generate_kwargs or {})
        self._redact = Secrets(s for s in secrets if s)
        self._loop_clients = http_loop_clients(
            type(self).__name__, self.base_url, headers, client_kwargs, DEFAULT_TIMEOUT
        )

    async def aclose(self) -> None:
        """Close the running event loop's HTTP client (a later call opens a new one)."""
        await self._loop_clients.aclose()

    async def synthesize(
        self, msg: Msg | None = None, **kwargs: Any
    ) -> TTSResponse | AsyncGenerator[TTSResponse, None]:
        """The speech of *msg*'s text (see :meth:`TTSModelBase.synthesize`); *kwargs* go into
        the request after the model's ``generate_kwargs``.

        :raises ModelAPIError: when the provider fails after the retries (in stream mode,
            raised from the generator).
        """
        text = msg.get_text_content() if msg is not None else None
        if not text:
            return TTSResponse(content=None)
        await close_orphans()
        options = {**self.generate_kwargs, **kwargs}
        if self.stream:
            return stream_with_retry(
                self.provider,
                lambda: self._stream_once(text, options),
                self.retry_config,
                redact=self._redact,
            )

        async def attempt() -> TTSResponse:
            buffer = AudioBuffer(self.media_type)
            started = time.monotonic()
            async for _ in self._filled(buffer, text, options, stream=False):
                pass
            return buffer.response(final=True, usage=_usage(started))

        return await call_with_retry(self.provider, attempt, self.retry_config, redact=self._redact)

    async def _stream_once(
        self, text: str, options: dict[str, Any]
    ) -> AsyncGenerator[TTSResponse, None]:
        buffer = AudioBuffer(self.media_type)
        started = time.monotonic()
        fill = self._filled(buffer, text, options, stream=True)
        try:
            async for _ in fill:
                if buffer.size:
                    yield buffer.response(final=False)
        finally:
            await fill.aclose()
        yield buffer.response(final=True, usage=_usage(started))

    async def _filled(
        self, buffer: AudioBuffer, text: str, options: dict[str, Any], *, stream: bool
    ) -> AsyncGenerator[None, None]:
        """:meth:`_fill`, where an answer that cannot be read (audio that is not base64, or
        not text; a body that is not JSON) raises :class:`BadResponse`, which the retry layer
        turns into a :class:`ModelAPIError`, instead of a bare ``ValueError``/``TypeError``."""
        fill = self._fill(buffer, text, options, stream=stream)
        try:
            async for _ in fill:
                yield
        except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
            raise BadResponse(
                f"the response could not be read ({type(exc).__name__}: {exc})"
            ) from None
        finally:
            await fill.aclose()

    @abstractmethod
    def _fill(
        self, buffer: AudioBuffer, text: str, options: dict[str, Any], *, stream: bool
    ) -> AsyncGenerator[None, None]:
        """One attempt: send the request for *text* and add its audio to *buffer*, yielding
        after each piece.

        :raises httpx.HTTPStatusError: for an error status (its body read).
        """

    def _client(self) -> httpx.AsyncClient:
        return self._loop_clients.get()

    @contextlib.asynccontextmanager
    async def _open(
        self,
        path: str,
        body: dict[str, Any],
        *,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> AsyncIterator[httpx.Response]:
        """The streamed response to a POST of *body* to *path*, closed (shielded) on exit.

        :raises httpx.HTTPStatusError: for an error status, with the body already read.
        """
        async with post_streamed(
            self._client(), path, body, params=params, headers=headers
        ) as response:
            yield response


def _usage(started: float) -> TTSUsage:
    return TTSUsage(input_tokens=0, output_tokens=0, time=time.monotonic() - started)
