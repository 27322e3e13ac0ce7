"""One retry policy for every model provider.

Every provider in :mod:`agentscope_rt.model` sends its requests through the two helpers here,
so retries behave the same everywhere:

* :func:`call_with_retry` runs a request coroutine; :func:`stream_with_retry` wraps an async
  generator of stream chunks.
* A failure is *retryable* when it is an HTTP 408, 409, 429 or 5xx answer (or an error event
  inside a stream that stands for one, see :class:`StreamErrorEvent`), a connection error or a
  timeout. Between tries the helper sleeps with exponential backoff
  (``initial_delay * multiplier ** n``, capped at ``max_delay``, spread by ``jitter``); when the
  server sent ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``, that wait is used
  instead (also capped at ``max_delay``).
* After the last try — or at once for a non-retryable HTTP error such as 400 or 401 — the helper
  raises :class:`~agentscope_rt.exception.ModelAPIError` naming the provider, the HTTP status
  (``None`` when no response arrived), the provider's own message and the number of attempts.
  Exceptions that are not provider errors (bugs, validation errors) pass through untouched, and
  cancellation is never caught.
* An answer that is not what the protocol promises — HTTP 200 whose body is not JSON, JSON
  of the wrong shape, a streaming request answered without an event stream, or a stream
  closed before its end marker (:class:`BadResponse`) — counts as a server fault and is
  retried like a 5xx: such answers come from gateways, proxies and servers that dropped the
  connection, and the next try usually succeeds. A stream cut after output was yielded fails
  at once, as any stream failure then.
* A stream is retried only until its first chunk has been yielded: once the caller has seen
  output, starting again would duplicate it, so a later failure raises ``ModelAPIError`` at once.
  The wrapped generator is always closed (``aclose``), which closes the HTTP response, whether
  the stream ends, fails, is closed early by the consumer or is cancelled.

SDK clients must be built with their own retries disabled (``max_retries=0``) so that this is
the only policy. Messages are scrubbed of the secrets a provider passes in ``redact`` before
they reach an exception, and so is the cause attached to it: the provider's exception (whose
text and response may echo the key) is replaced by a :class:`RedactedCause` holding its type
and scrubbed text, and raised outside the ``except`` block, so that no traceback — causes and
contexts included — can show a secret.

Usage by a provider::

    response = await call_with_retry(
        "ollama", lambda: client.post("/api/chat", json=body), config, redact=(api_key,)
    )

    def open_stream() -> AsyncGenerator[ChatResponse, None]:
        return self._stream_once(body)          # a fresh request each time

    return stream_with_retry("ollama", open_stream, config)

Tests make retries fast with e.g. ``RetryConfig(initial_delay=0.01, max_delay=0.05)``.
"""

from __future__ import annotations

import email.utils
import json
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

import anyio
import attrs
import httpx

from ..exception import ModelAPIError

__all__ = [
    "RETRYABLE_STATUS",
    "BadResponse",
    "FailureInfo",
    "RedactedCause",
    "RetryConfig",
    "StreamErrorEvent",
    "call_with_retry",
    "classify_error",
    "close_shielded",
    "excerpt",
    "parse_retry_after",
    "parsed_sdk_answer",
    "redacted_cause",
    "shape_checked",
    "stream_with_retry",
]

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 429})
"""HTTP statuses retried besides every 5xx (timeout, conflict/lock, rate limit)."""

_REDACTED = "***"
_MESSAGE_LIMIT = 1000
"""Characters of a provider's error text kept in a ModelAPIError."""

CLOSE_TIMEOUT = 5.0
"""Seconds a shielded close of a stream or response may take before it is abandoned."""


def _non_negative(_instance: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    if value < 0:
        raise ValueError(f"RetryConfig.{attribute.name} must be >= 0, got {value!r}")


def _jitter_range(_instance: Any, _attribute: attrs.Attribute[Any], value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"RetryConfig.jitter must be between 0 and 1, got {value!r}")


@attrs.frozen
class RetryConfig:
    """How often and how patiently a model request is retried.

    The wait before retry *n* (0-based) is ``min(max_delay, initial_delay * multiplier ** n)``,
    multiplied by a random factor in ``[1 - jitter, 1 + jitter]`` (and capped at ``max_delay``
    again) so that many clients do not retry in lockstep. A server's ``Retry-After`` replaces
    the computed wait when ``respect_retry_after`` is true.

    :param max_retries: retries after the first attempt (``0`` disables retrying).
    :param initial_delay: seconds before the first retry.
    :param max_delay: upper bound of any single wait, ``Retry-After`` included.
    :param multiplier: growth factor of the wait per retry.
    :param jitter: relative spread of each wait, between 0 and 1.
    :param respect_retry_after: use the server's ``Retry-After`` / ``retry-after-ms``.
    :raises ValueError: for negative numbers, a multiplier below 1 or jitter outside ``[0, 1]``.
    """

    max_retries: int = attrs.field(default=3, validator=_non_negative)
    initial_delay: float = attrs.field(default=1.0, validator=_non_negative)
    max_delay: float = attrs.field(default=30.0, validator=_non_negative)
    multiplier: float = attrs.field(default=2.0)
    jitter: float = attrs.field(default=0.1, validator=_jitter_range)
    respect_retry_after: bool = True

    @multiplier.validator
    def _check_multiplier(self, _attribute: attrs.Attribute[Any], value: float) -> None:
        if value < 1.0:
            raise ValueError(f"RetryConfig.multiplier must be >= 1, got {value!r}")

    def backoff(self, retry_index: int) -> float:
        """The wait in seconds before retry *retry_index* (0-based), jitter applied."""
        base = min(self.max_delay, self.initial_delay * self.multiplier**retry_index)
        if self.jitter:
            base *= random.uniform(1.0 - self.jitter, 1.0 + self.jitter)
        return min(self.max_delay, max(0.0, base))

    def delay(self, retry_index: int, retry_after: float | None) -> float:
        """The wait before retry *retry_index*, honouring the server's *retry_after*."""
        if retry_after is not None and self.respect_retry_after:
            return min(self.max_delay, max(0.0, retry_after))
        return self.backoff(retry_index)


DEFAULT_RETRY_CONFIG = RetryConfig()


@attrs.frozen
class FailureInfo:
    """What a provider failure means for the retry policy.

    :ivar status_code: the HTTP status, ``None`` when no response arrived.
    :ivar message: the provider's own error text (not yet redacted).
    :ivar retryable: whether another attempt may succeed.
    :ivar retry_after: the server's requested wait in seconds, if it sent one.
    """

    status_code: int | None
    message: str
    retryable: bool
    retry_after: float | None = None


class StreamErrorEvent(Exception):
    """An error the provider reported inside a stream whose HTTP status was already 200.

    Providers that speak plain HTTP (SSE, NDJSON) raise this from their stream generator so
    that :func:`classify_error` treats the event like the HTTP error it stands for: a
    retryable one is retried by :func:`stream_with_retry` as long as no chunk has been yielded.
    The message is scrubbed of secrets by the retry helper before it reaches a
    :class:`~agentscope_rt.exception.ModelAPIError`.

    :param message: the provider's error text.
    :param status_code: the HTTP-like code the event carries, if any.
    :param retryable: whether another attempt may succeed (e.g. overload, rate limit).
    """

    def __init__(self, message: str, status_code: int | None, retryable: bool) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.retryable = retryable


class BadResponse(StreamErrorEvent):
    """A provider's answer that is not what its protocol promises: an HTTP 200 whose body is
    not JSON or not of the expected shape (``{}`` included), a streaming request answered
    without an event stream, or a stream closed before its end marker.

    Retried as a server fault (see the module docstring); the final
    :class:`~agentscope_rt.exception.ModelAPIError` carries status 200 and *message*.

    :param message: what was wrong, with a short excerpt of what arrived.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, 200, True)


def parse_answer(raw: Any, parse: Callable[[], T]) -> T:
    """``parse()`` of a provider's answer *raw*: an answer of the wrong shape (the parser
    meeting a missing key or a value of the wrong type) raises :class:`BadResponse` quoting
    *raw* instead of a bare ``AttributeError``/``TypeError``/``KeyError``/``IndexError``."""
    try:
        return parse()
    except _SHAPE_ERRORS as exc:
        raise BadResponse(
            f"the response does not have the expected shape ({type(exc).__name__}: "
            f"{exc}): {excerpt(raw)}"
        ) from None


async def parsed_sdk_answer(request: Callable[[], Awaitable[Any]], parse: Callable[[Any], T]) -> T:
    """``parse(raw)`` of the answer *raw* an SDK call ``request()`` returned, as one retried
    attempt needs it: a body that is not JSON (which the SDKs let out as ``JSONDecodeError``),
    not a JSON object, or of the wrong shape raises :class:`BadResponse` quoting what came.
    """
    try:
        raw = await request()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:  # a body that is not JSON text
        raise BadResponse(f"the response body is not JSON ({exc})") from None
    if raw is None or isinstance(raw, str | bytes | list | int | float):
        raise BadResponse(f"the response body is not a JSON object: {excerpt(raw)}")
    return parse_answer(raw, lambda: parse(raw))


def excerpt(value: Any) -> str:
    """What a provider sent, printable, for an error message. Not shortened here: the retry
    layer shortens messages only after scrubbing the secrets, since a cut through an echoed
    key would leave a prefix of it that no longer matches."""
    return repr(value if isinstance(value, str) else repr(value))


class RedactedCause(Exception):
    """Stands in for a provider's exception as the cause of a
    :class:`~agentscope_rt.exception.ModelAPIError`: its type and its text, secrets scrubbed.

    The provider's exception itself is not kept, since its text, its response and its own
    causes may hold the API key (servers echo keys and headers in error bodies).
    """


def redacted_cause(exc: BaseException, secrets: Iterable[str | None]) -> RedactedCause:
    """A :class:`RedactedCause` for *exc*: ``module.Type: text``, *secrets* scrubbed."""
    kind = type(exc)
    text = _redact(f"{kind.__module__}.{kind.__qualname__}: {exc}", secrets)
    if len(text) > _MESSAGE_LIMIT:
        text = text[:_MESSAGE_LIMIT] + "..."
    return RedactedCause(text)


def parse_retry_after(
    headers: Mapping[str, str] | None, *, now: float | None = None
) -> float | None:
    """The wait a server asked for, in seconds, or ``None``.

    Reads ``retry-after-ms`` (milliseconds, as OpenAI and Anthropic send) and ``Retry-After``
    (delay seconds, possibly fractional, or an HTTP date). A date in the past means ``0``.
    Unparseable values are ignored.
    """
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def _body_message(body: Any) -> str | None:
    """The human-readable message inside a provider's JSON error body, if any."""
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping):
            inner = _body_message(error)
            if inner:
                return inner
        elif isinstance(error, str) and error:
            return error
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    return None


def _error_type(body: Any) -> str:
    """The ``type`` of a provider's error body (``overloaded_error``, ...), or ``""``."""
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping) and isinstance(error.get("type"), str):
            return str(error["type"])
        if isinstance(body.get("type"), str) and body.get("type") != "error":
            return str(body["type"])
    return ""


def _headers_of(response: Any) -> Mapping[str, str] | None:
    headers = getattr(response, "headers", None)
    return headers if headers is not None and hasattr(headers, "get") else None


def _is_sdk_error(exc: BaseException, module: str, name: str) -> bool:
    """Whether *exc* is an instance of ``module.name`` (or a subclass), without importing."""
    for cls in type(exc).__mro__:
        if cls.__name__ == name and cls.__module__.split(".")[0] == module:
            return True
    return False


def classify_error(exc: BaseException) -> FailureInfo | None:
    """Map an exception to a :class:`FailureInfo`, or ``None`` when it is not a provider error.

    Understands the ``openai`` and ``anthropic`` SDK errors (status errors, connection errors,
    timeouts, errors reported inside a stream), :class:`StreamErrorEvent`, ``httpx`` status,
    transport and timeout errors, ``httpx2``'s transport and timeout errors (which the SDKs
    let out of a stream already under way), and the builtin ``ConnectionError`` /
    ``TimeoutError``.
    """
    if isinstance(exc, StreamErrorEvent):
        return FailureInfo(exc.status_code, exc.message, exc.retryable)
    for sdk in ("openai", "anthropic"):
        if (
            _is_sdk_error(exc, sdk, "APIStatusError")
            and int(getattr(exc, "status_code", 0) or 0) >= 400
        ):
            status = int(getattr(exc, "status_code", 0) or 0)
            response = getattr(exc, "response", None)
            message = (
                _body_message(getattr(exc, "body", None))
                or _plain_text(response)
                or str(getattr(exc, "message", exc))
            )
            return FailureInfo(
                status,
                message,
                status in RETRYABLE_STATUS or status >= 500,
                parse_retry_after(_headers_of(response)),
            )
        if _is_sdk_error(exc, sdk, "APIConnectionError"):
            timeout = _is_sdk_error(exc, sdk, "APITimeoutError")
            cause = exc.__cause__
            detail = f": {cause}" if cause is not None and str(cause) else ""
            return FailureInfo(
                None,
                ("request timed out" if timeout else "connection error") + detail,
                True,
            )
        if _is_sdk_error(exc, sdk, "APIError"):
            # An error event inside a stream whose HTTP status was already 200; providers
            # report overload and rate limits this way, so those are worth another try.
            body = getattr(exc, "body", None)
            message = _body_message(body) or str(getattr(exc, "message", exc))
            kind = _error_type(body)
            retryable = kind in ("overloaded_error", "api_error", "rate_limit_error", "")
            label = f"{kind}: " if kind else ""
            return FailureInfo(None, f"{label}{message}", retryable)
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        try:
            payload: Any = exc.response.json()
        except Exception:
            payload = None
        message = _body_message(payload) or _response_text(exc.response) or str(exc)
        return FailureInfo(
            status,
            message,
            status in RETRYABLE_STATUS or status >= 500,
            parse_retry_after(exc.response.headers),
        )
    # The SDKs read through httpx2 (a fork with classes of its own); a stream that breaks or
    # goes silent after its first event raises httpx2's error unwrapped (anthropic's does).
    if isinstance(exc, httpx.TimeoutException) or _is_sdk_error(exc, "httpx2", "TimeoutException"):
        return FailureInfo(None, f"request timed out: {type(exc).__name__}", True)
    if isinstance(exc, httpx.TransportError) or _is_sdk_error(exc, "httpx2", "TransportError"):
        return FailureInfo(None, f"connection error: {exc}", True)
    if isinstance(exc, TimeoutError):
        return FailureInfo(None, f"request timed out: {exc}", True)
    if isinstance(exc, ConnectionError):
        return FailureInfo(None, f"connection error: {exc}", True)
    return None


def _plain_text(response: Any) -> str:
    """The body of an SDK error response that is plain text (which the SDKs leave out of
    their message), shortened; ``""`` for JSON and unread bodies."""
    headers = _headers_of(response)
    if headers is None or "json" in str(headers.get("content-type") or ""):
        return ""
    try:
        return str(response.text).strip()  # whole: redacted before it is shortened
    except Exception:  # a streamed body not read: nothing to quote
        return ""


def _response_text(response: httpx.Response) -> str:
    try:
        return response.text  # whole: redacted before it is shortened
    except httpx.ResponseNotRead:
        return ""


def _redact(text: str, secrets: Iterable[str | None]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, _REDACTED)
    return text


def _api_error(
    provider: str, info: FailureInfo, attempts: int, secrets: Iterable[str | None]
) -> ModelAPIError:
    # Shortened only after the secrets are scrubbed: a cut through a key would leave a
    # prefix of it that no longer matches.
    message = _redact(info.message, secrets)
    if len(message) > _MESSAGE_LIMIT:
        message = message[:_MESSAGE_LIMIT] + "..."
    return ModelAPIError(
        provider,
        message,
        status_code=info.status_code,
        attempts=attempts,
    )


async def call_with_retry(
    provider: str,
    request: Callable[[], Awaitable[T]],
    config: RetryConfig | None = None,
    *,
    classify: Callable[[BaseException], FailureInfo | None] = classify_error,
    redact: Iterable[str | None] = (),
) -> T:
    """Await ``request()`` until it succeeds or the retry budget is spent.

    :param provider: the provider's name, used in errors (e.g. ``"openai"``).
    :param request: makes one fresh attempt each time it is called.
    :param config: the retry policy; ``None`` means ``RetryConfig()``.
    :param classify: maps an exception to a :class:`FailureInfo` (``None``: not ours, re-raise).
    :param redact: secrets to scrub from error messages.
    :returns: what the first successful attempt returned.
    :raises ModelAPIError: after the last retryable failure, or at once for a non-retryable
        provider error.
    """
    config = config or DEFAULT_RETRY_CONFIG
    secrets = tuple(redact)
    attempt = 0
    while True:
        attempt += 1
        try:
            return await request()
        except Exception as exc:
            info = classify(exc)
            if info is None:
                raise
            if not info.retryable or attempt > config.max_retries:
                error, cause = (
                    _api_error(provider, info, attempt, secrets),
                    redacted_cause(exc, secrets),
                )
                break
            wait = config.delay(attempt - 1, info.retry_after)
        await anyio.sleep(wait)
    # Raised here, outside the except block, so that the provider's exception does not
    # become the context either.
    raise error from cause


_SHAPE_ERRORS = (AttributeError, TypeError, KeyError, IndexError)


async def shape_checked(
    stream: AsyncGenerator[T, None], each: Callable[[T], T] | None = None
) -> AsyncGenerator[T, None]:
    """The items of *stream*, a provider's stream parser (passed through *each*, if given);
    an event of the wrong shape (the parser meeting a string where an object belongs, a
    missing key) raises :class:`BadResponse` instead of a bare ``AttributeError``/
    ``TypeError``/``KeyError``/``IndexError``, and so does an event that is not JSON or not
    UTF-8 text (``JSONDecodeError``/``UnicodeDecodeError`` from an SDK's decoder). *stream*
    is closed however this generator ends."""
    try:
        async for item in stream:
            yield item if each is None else each(item)
    except json.JSONDecodeError as exc:  # an SDK decoding an event's data
        raise BadResponse(f"a stream event is not JSON ({exc})") from None
    except UnicodeDecodeError as exc:  # the SDKs decode server-sent events strictly
        raise BadResponse(f"a stream event is not UTF-8 text ({exc.reason})") from None
    except _SHAPE_ERRORS as exc:
        raise BadResponse(
            f"a stream event does not have the expected shape ({type(exc).__name__}: {exc})"
        ) from None
    finally:
        await close_shielded(stream)


async def stream_with_retry(
    provider: str,
    open_stream: Callable[[], AsyncGenerator[T, None]],
    config: RetryConfig | None = None,
    *,
    classify: Callable[[BaseException], FailureInfo | None] = classify_error,
    redact: Iterable[str | None] = (),
) -> AsyncGenerator[T, None]:
    """Yield the items of ``open_stream()``, retrying failures that happen before the first item.

    Each attempt calls *open_stream* for a fresh generator (which sends a fresh request). The
    current generator is always closed with ``aclose()`` — on success, failure, early close by
    the consumer and cancellation — so its HTTP response is released promptly.

    :param provider: the provider's name, used in errors.
    :param open_stream: returns a new async generator of chunks for each attempt.
    :param config: the retry policy; ``None`` means ``RetryConfig()``.
    :param classify: maps an exception to a :class:`FailureInfo` (``None``: not ours, re-raise).
    :param redact: secrets to scrub from error messages.
    :raises ModelAPIError: after the last retryable failure before any output, at once for a
        non-retryable failure, and at once for any provider failure after output was yielded.
    """
    config = config or DEFAULT_RETRY_CONFIG
    secrets = tuple(redact)
    attempt = 0
    while True:
        attempt += 1
        yielded = False
        stream = open_stream()
        try:
            async for item in stream:
                yielded = True
                yield item
            return
        except Exception as exc:
            info = classify(exc)
            if info is None:
                raise
            if yielded or not info.retryable or attempt > config.max_retries:
                error, cause = (
                    _api_error(provider, info, attempt, secrets),
                    redacted_cause(exc, secrets),
                )
                break
            wait = config.delay(attempt - 1, info.retry_after)
        finally:
            await close_shielded(stream)
        await anyio.sleep(wait)
    raise error from cause


async def close_shielded(resource: Any) -> None:
    """``await resource.aclose()`` even inside a cancelled scope, for at most a few seconds.

    A cancelled consumer must still release the HTTP connection; without the shield the first
    checkpoint inside ``aclose`` would raise the cancellation again and leave the socket open.
    """
    with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT):
        await resource.aclose()
