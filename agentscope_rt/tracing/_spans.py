"""Starting and ending spans, and streams whose span ends with them.

Two promises hold for every span made here:

* A span is current (in OpenTelemetry's context) only while the traced code runs in the task
  that started it: around an ``await`` of the traced call, or around one step of a stream.
  It is never current across a ``yield`` to the reader of a stream, so a stream read from one
  task and closed from another never detaches a context it did not attach ("Failed to detach
  context" is never logged).
* Every span ends, however its call ends: a return (status OK), an exception (status ERROR,
  ``error.type``, an ``exception`` event), a cancellation from outside (status unset,
  ``agentscope.cancelled``), a stream its reader closed early or dropped
  (``agentscope.stream.closed_early``).

Without content capture, errors are recorded by type only: an exception's message (which may
quote arguments or messages) stays out of the span.
"""

from __future__ import annotations

import collections.abc
from collections.abc import Callable, Generator
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Span, Status, StatusCode

from . import _state
from ._attributes import SpanAttributes

__all__ = ["TracedStream", "attach", "detach", "end_ok", "end_raised", "in_context"]

attach = otel_context.attach
detach = otel_context.detach
in_context = otel_trace.set_span_in_context

_OK = Status(StatusCode.OK)


def end_ok(span: Span, attributes: dict[str, Any] | None) -> None:
    """End *span* as a success, adding *attributes* first."""
    if attributes:
        span.set_attributes(attributes)
    span.set_status(_OK)
    span.end()


def _type_name(kind: type) -> str:
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


def _is_error(exc: BaseException) -> bool:
    if isinstance(exc, Exception):
        return True
    # A group holding a real error besides cancellations is an error.
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(Exception)[0] is not None
    return False


def end_raised(span: Span, exc: BaseException, attributes: dict[str, Any] | None = None) -> None:
    """End *span* for a call that raised *exc*: an error (``Exception``) or a cancellation
    (anything else: an outer cancel scope, ``KeyboardInterrupt``, ``GeneratorExit``)."""
    if attributes:
        span.set_attributes(attributes)
    if _is_error(exc):
        name = _type_name(type(exc))
        span.set_attribute(SpanAttributes.ERROR_TYPE, name)
        if _state.capture_content:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        else:
            span.add_event("exception", {"exception.type": name})
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
    else:
        span.set_attribute(SpanAttributes.AGENTSCOPE_CANCELLED, True)
    span.end()


class TracedStream:
    """An async stream whose chunks come from *inner* and whose span ends with it.

    The span is made current only while *inner* produces a chunk (so spans opened by the
    producer, e.g. inside a tool, are its children), and ended when *inner* is exhausted
    (``finish(last_chunk)`` gives the final attributes), raises, is closed early with
    :meth:`aclose`, or is dropped without being closed.
    """

    __slots__ = ("__weakref__", "_context", "_finish", "_inner", "_last", "_span")

    def __init__(
        self,
        inner: Any,
        span: Span,
        finish: Callable[[Any], dict[str, Any] | None],
    ) -> None:
        self._inner = inner
        self._span: Span | None = span
        self._context = in_context(span)
        self._finish = finish
        self._last: Any = None

    def __aiter__(self) -> TracedStream:
        return self

    def __await__(self) -> Generator[Any, None, TracedStream]:
        # Awaiting returns the stream itself, as awaiting a tool call's stream does
        # (AgentScope code writes ``async for chunk in await toolkit.call_tool_function(...)``).
        return self
        yield  # makes this a generator; awaiting never suspends

    async def __anext__(self) -> Any:
        span = self._span
        if span is None:
            return await self._inner.__anext__()
        token = attach(self._context)
        try:
            chunk = await self._inner.__anext__()
        except StopAsyncIteration:
            self._span = None
            end_ok(span, self._finish(self._last))
            raise
        except BaseException as exc:
            self._span = None
            end_raised(span, exc, self._finish(self._last))
            raise
        finally:
            detach(token)
        self._last = chunk
        return chunk

    async def asend(self, value: Any) -> Any:
        """As an async generator's ``asend`` (``None`` is the same as a step)."""
        if value is not None:
            raise TypeError("a traced stream only accepts None through asend()")
        return await self.__anext__()

    async def athrow(self, *args: Any) -> Any:
        """Throw into the inner stream (the span ends as that raises)."""
        span = self._span
        try:
            return await self._inner.athrow(*args)
        except BaseException as exc:
            if span is not None and not isinstance(exc, StopAsyncIteration):
                self._span = None
                end_raised(span, exc, self._finish(self._last))
            raise

    async def aclose(self) -> None:
        """Stop early: the span ends (``agentscope.stream.closed_early`` unless the stream
        had ended) and the inner stream is closed."""
        self._end_early()
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()

    def _end_early(self) -> None:
        span = self._span
        if span is not None:
            self._span = None
            span.set_attribute(SpanAttributes.AGENTSCOPE_CLOSED_EARLY, True)
            attributes = self._finish(self._last)
            if attributes:
                span.set_attributes(attributes)
            span.end()

    def __del__(self) -> None:
        # Dropped without being read to the end or closed: the span still ends (its
        # processors only queue it; nothing is exported from here).
        self._end_early()


collections.abc.AsyncGenerator.register(TracedStream)
