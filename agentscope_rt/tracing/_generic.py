"""Spans of functions decorated with :func:`~._decorators.trace`."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from typing import Any

from opentelemetry.trace import SpanKind

from . import _extract, _state
from ._spans import TracedStream, attach, detach, end_ok, end_raised, in_context

__all__ = ["call_async", "call_sync", "traced_async_items", "traced_items"]


def _start(label: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return _state.tracer.start_span(
        f"invoke_generic_function {label}",
        kind=SpanKind.INTERNAL,
        attributes=_extract.function_request(label, args, kwargs, _state.capture_content),
    )


def _finish(result: Any) -> dict[str, Any] | None:
    return _extract.function_response(result, _state.capture_content)


async def call_async(
    label: str, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Await ``func(*args, **kwargs)`` in a span (current while it runs)."""
    span = _start(label, args, kwargs)
    token = attach(in_context(span))
    try:
        result = await func(*args, **kwargs)
    except BaseException as exc:
        end_raised(span, exc)
        raise
    finally:
        detach(token)
    return _returned(span, result)


def call_sync(
    label: str, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Call ``func(*args, **kwargs)`` in a span (current while it runs)."""
    span = _start(label, args, kwargs)
    token = attach(in_context(span))
    try:
        result = func(*args, **kwargs)
    except BaseException as exc:
        end_raised(span, exc)
        raise
    finally:
        detach(token)
    return _returned(span, result)


def _returned(span: Any, result: Any) -> Any:
    # A function that returns a stream: its span ends with the stream, as AgentScope's does.
    if hasattr(result, "__anext__"):
        return TracedStream(result, span, _finish)
    if isinstance(result, Generator):
        return _items(span, result)
    end_ok(span, _finish(result))
    return result


def traced_async_items(
    label: str, stream: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> TracedStream:
    """*stream* (an async generator) in a span that ends with it."""
    return TracedStream(stream, _start(label, args, kwargs), _finish)


def traced_items(
    label: str, items: Generator[Any, None, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Generator[Any, None, Any]:
    """*items* (a generator) in a span that ends with it."""
    return _items(_start(label, args, kwargs), items)


def _items(span: Any, items: Iterator[Any]) -> Generator[Any, None, Any]:
    context = in_context(span)
    last: Any = None
    ended = False
    try:
        while True:
            token = attach(context)
            try:
                item = next(items)
            except StopIteration as stop:
                ended = True
                end_ok(span, _finish(last))
                return stop.value
            except BaseException as exc:
                ended = True
                end_raised(span, exc, _finish(last))
                raise
            finally:
                detach(token)
            last = item
            yield item
    finally:
        if not ended:
            span.set_attribute("agentscope.stream.closed_early", True)
            span.end()
        close = getattr(items, "close", None)
        if close is not None:
            close()
