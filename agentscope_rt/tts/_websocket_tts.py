"""What the WebSocket text-to-speech models share: a connection, a reader task owned by the
model's own task group, the cumulative audio, and errors that name the provider.

A streaming-input model (:class:`WebSocketTTSModel`) is entered with ``async with`` (which
calls :meth:`~WebSocketTTSModel.connect` and :meth:`~WebSocketTTSModel.close` in one task): the
connection and its reader live in an exit stack between the two, so closing — also on
cancellation, e.g. an agent's ``interrupt()`` — cancels the reader and closes the socket before
``close`` returns. The reader never raises into that task group: a provider error is kept and
raised by the next :meth:`~WebSocketTTSModel.push` or by :meth:`~WebSocketTTSModel.synthesize`.

Needs ``wsproto`` (the ``dashscope`` extra).
"""

from __future__ import annotations

import contextlib
import json
from abc import abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, ClassVar

import anyio

from .._provider import FailureInfo, RetryConfig, Secrets, call_with_retry, redact_text
from ..exception import ModelAPIError
from ..message import Msg
from ._tts_base import TTSModelBase
from ._tts_response import PCM_24K, AudioBuffer, TTSResponse

__all__ = ["ProviderError", "Session", "WebSocketTTSModel", "open_websocket"]


class ProviderError(Exception):
    """An error the provider reported on the WebSocket (its code and message)."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class Session:
    """One synthesis on one connection: the audio so far and how it ended.

    :ivar buffer: the audio received.
    :ivar started: set when the provider is ready for text.
    :ivar done: whether the provider said the synthesis is complete (or it failed).
    :ivar error: the failure, raised to the caller.
    """

    def __init__(self, connection: Any, media_type: str = PCM_24K) -> None:
        self.connection = connection
        self.buffer = AudioBuffer(media_type)
        self.started = anyio.Event()
        self.done = False
        self.error: ModelAPIError | None = None
        self.input_finished = False
        self._changed = anyio.Event()
        self.values: dict[str, Any] = {}
        """What a provider keeps about its session (a task id, ...)."""

    def notify(self) -> None:
        """Wake whoever waits for new audio or the end."""
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_change(self) -> None:
        await self._changed.wait()

    async def send_json(self, event: dict[str, Any]) -> None:
        await self.connection.send_text(json.dumps(event, ensure_ascii=False))


def _websocket_module() -> Any:
    try:
        from .._provider import websocket
    except ImportError as exc:
        from .._extras import missing_extra

        raise missing_extra("the WebSocket text-to-speech models", "dashscope", exc.name) from exc
    return websocket


def api_error(provider: str, exc: BaseException, secrets: tuple[str, ...]) -> ModelAPIError:
    """*exc* (a WebSocket or provider failure) as a :class:`ModelAPIError`, secrets scrubbed."""
    websocket = _websocket_module()
    known = [(s, "***") for s in secrets]
    status: int | None = None
    if isinstance(exc, websocket.WebSocketHandshakeError):
        status, text = exc.status_code, exc.body or f"HTTP {exc.status_code}"
    else:
        text = str(exc) or type(exc).__name__
    return ModelAPIError(provider, redact_text(text, known), status_code=status)


def _retryable(exc: BaseException) -> bool:
    status = getattr(exc, "status_code", None)
    if isinstance(exc, ProviderError):
        return exc.retryable
    if status is not None:
        return status in (408, 409, 429) or status >= 500
    return isinstance(exc, OSError | TimeoutError)


@contextlib.asynccontextmanager
async def open_websocket(
    provider: str,
    url: str,
    headers: dict[str, str],
    secrets: tuple[str, ...],
    retry_config: RetryConfig | None,
) -> AsyncIterator[Any]:
    """A connection to *url*, the handshake retried under *retry_config* (refusals with a
    retryable status, connection failures); closed on exit.

    :raises ModelAPIError: when it cannot be opened.
    """
    websocket = _websocket_module()
    stack = contextlib.AsyncExitStack()

    async def attempt() -> Any:
        try:
            return await stack.enter_async_context(websocket.connect(url, headers))
        except Exception as exc:
            if _retryable(exc):
                raise _Retry(exc) from None
            raise api_error(provider, exc, secrets) from None

    async with stack:
        connection = await call_with_retry(
            provider, attempt, retry_config, classify=_classify, redact=secrets
        )
        yield connection


class _Retry(Exception):
    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _classify(exc: BaseException) -> FailureInfo | None:
    if isinstance(exc, _Retry):
        return FailureInfo(getattr(exc.cause, "status_code", None), str(exc.cause), True)
    return None


class WebSocketTTSModel(TTSModelBase):
    """A streaming-input text-to-speech model over one WebSocket per synthesis (see the
    module docstring).

    Subclasses give the URL and headers, :meth:`_start` (what is sent once connected; it may
    wait for ``session.started``), :meth:`_send_text`, :meth:`_finish_input` and
    :meth:`_on_message` (called by the reader for each message; it adds audio, sets
    ``session.started``, sets ``session.done`` or raises :class:`ProviderError`).

    :param cold_start_length: the first text is sent only once it has this many characters.
    :param cold_start_words: ... and this many words (split on spaces).
    """

    supports_streaming_input: bool = True
    provider: ClassVar[str]
    media_type: ClassVar[str] = PCM_24K

    def __init__(
        self,
        model_name: str,
        stream: bool,
        *,
        secrets: tuple[str, ...],
        cold_start_length: int | None,
        cold_start_words: int | None,
        retry_config: RetryConfig | None,
    ) -> None:
        super().__init__(model_name, stream)
        self.cold_start_length = cold_start_length
        self.cold_start_words = cold_start_words
        self.retry_config = retry_config
        self._secrets = Secrets(s for s in secrets if s)
        self._stack: contextlib.AsyncExitStack | None = None
        self._session: Session | None = None
        self._reset_input()

    def _reset_input(self) -> None:
        self._first_send = True
        self._current_msg_id: str | None = None
        self._current_prefix = ""

    # -- provider specifics ------------------------------------------------------------

    @abstractmethod
    def _url(self) -> str: ...

    @abstractmethod
    def _headers(self) -> dict[str, str]: ...

    @abstractmethod
    async def _start(self, session: Session) -> None:
        """Begin the synthesis on a new connection (the reader is already running)."""

    @abstractmethod
    async def _send_text(self, session: Session, text: str) -> None: ...

    @abstractmethod
    async def _finish_input(self, session: Session) -> None:
        """Say that no more text follows."""

    @abstractmethod
    def _on_message(self, session: Session, message: str | bytes) -> None:
        """Handle one message of the provider.

        :raises ProviderError: for an error the provider reports.
        """

    # -- connection ----------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """Whether :meth:`connect` opened a connection that :meth:`close` has not closed."""
        return self._stack is not None

    async def connect(self) -> None:
        """Open the connection and start the synthesis (nothing when already connected).

        :raises ModelAPIError: when the provider refuses or cannot be reached.
        """
        if self._stack is not None:
            return
        stack = contextlib.AsyncExitStack()
        try:
            connection = await stack.enter_async_context(
                open_websocket(
                    self.provider, self._url(), self._headers(), self._secrets, self.retry_config
                )
            )
            session = Session(connection, self.media_type)
            group = await stack.enter_async_context(anyio.create_task_group())
            # Runs first on exit: the reader stops before the socket closes.
            stack.callback(group.cancel_scope.cancel)
            group.start_soon(self._read, session)
            await self._start(session)
            await self._check(session)
        except BaseException:
            # Not under a shield of its own: the task group's scope is outside it. The
            # socket's close handshake shields itself.
            await stack.aclose()
            raise
        self._stack, self._session = stack, session
        self._reset_input()

    async def close(self) -> None:
        """Stop the reader and close the connection (the close handshake is shielded and
        bounded, so a cancelled caller still closes the socket; safe to call twice)."""
        stack, self._stack, self._session = self._stack, None, None
        self._reset_input()
        if stack is not None:
            await stack.aclose()

    async def _read(self, session: Session) -> None:
        try:
            while not session.done:
                self._on_message(session, await session.connection.receive())
                session.notify()
        except Exception as exc:
            if not session.done:
                session.error = api_error(self.provider, exc, self._secrets)
        finally:
            session.done = True
            session.started.set()
            session.notify()

    async def _check(self, session: Session) -> None:
        if session.error is not None:
            raise session.error

    async def _ready(self) -> Session:
        """The open session; a new one when the last synthesis on this connection ended.

        :raises RuntimeError: when not connected.
        """
        if self._stack is None or self._session is None:
            raise RuntimeError(
                f"{type(self).__name__} is not connected: use 'async with model:' "
                "(or call connect() first)"
            )
        if self._session.input_finished:
            await self.close()
            await self.connect()
            assert self._session is not None
        return self._session

    def _check_msg(self, msg: Msg | None) -> None:
        if msg is not None and self._current_msg_id not in (None, msg.id):
            raise RuntimeError(
                f"{type(self).__name__} can only handle one streaming input request at a "
                "time: all chunks must belong to the same message id"
            )

    # -- the interface -------------------------------------------------------------------

    async def push(self, msg: Msg, **kwargs: Any) -> TTSResponse:
        """Send what is new in *msg*'s text (after the cold start thresholds); the audio so
        far, without waiting for more.

        :raises RuntimeError: when not connected, or *msg* is another message than the one
            being spoken.
        :raises ModelAPIError: when the provider failed.
        """
        session = await self._ready()
        self._check_msg(msg)
        self._current_msg_id = msg.id
        text = msg.get_text_content()
        if not text:
            return TTSResponse(content=None, is_last=False)
        if self._first_send:
            delta = text
            if self.cold_start_length and len(text) < self.cold_start_length:
                delta = ""
            if delta and self.cold_start_words and len(delta.split()) < self.cold_start_words:
                delta = ""
        else:
            delta = text.removeprefix(self._current_prefix)
        await self._check(session)
        if delta:
            await self._send_text(session, delta)
            self._current_prefix += delta
            self._first_send = False
        return TTSResponse(content=session.buffer.block(), is_last=False)

    async def synthesize(
        self, msg: Msg | None = None, **kwargs: Any
    ) -> TTSResponse | AsyncGenerator[TTSResponse, None]:
        """Send the rest of *msg*'s text, end the input, and return the speech of all of it
        (a stream of growing responses with ``stream=True``).

        :raises RuntimeError: when not connected, or *msg* is another message.
        :raises ModelAPIError: when the provider failed (in stream mode from the generator).
        """
        session = await self._ready()
        self._check_msg(msg)
        delta = ""
        if msg is not None:
            delta = (msg.get_text_content() or "").removeprefix(self._current_prefix)
        await self._check(session)
        if delta:
            await self._send_text(session, delta)
        spoke = bool(delta) or not self._first_send
        self._reset_input()
        session.input_finished = True
        if not spoke:
            return TTSResponse(content=None)
        await self._finish_input(session)
        if self.stream:
            return self._stream(session)
        while not session.done:
            await session.wait_change()
        await self._check(session)
        return session.buffer.response(final=True)

    async def _stream(self, session: Session) -> AsyncGenerator[TTSResponse, None]:
        sent = 0
        while not session.done:
            # Audio that arrived before this stream started is yielded first: the provider
            # may send no more until the input ends (or, held, not at all).
            if session.buffer.size > sent:
                sent = session.buffer.size
                yield session.buffer.response(final=False)
            else:
                await session.wait_change()
        await self._check(session)
        yield session.buffer.response(final=True)
