"""AgentScope's tracing decorators, for user code.

The runtime's own routes are traced without them (see :mod:`._instrument`); they are for an
application's functions and for classes written against AgentScope, which put ``@trace_llm``
on a model's ``__call__`` and so on. A decorated function tests one module attribute per call
while tracing is off and imports nothing of OpenTelemetry until tracing is on. A method the
runtime also traces (a model's ``__call__`` decorated with ``@trace_llm``) makes one span,
not two: the decorator steps aside while tracing's interceptor of that route runs for the
same object.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import aclosing
from typing import Any, TypeVar, cast

from .. import _intercept
from . import _state

__all__ = [
    "trace",
    "trace_embedding",
    "trace_format",
    "trace_llm",
    "trace_reply",
    "trace_toolkit",
]

F = TypeVar("F", bound=Callable[..., Any])


def trace(name: str | None = None) -> Callable[[F], F]:
    """Trace a function in an ``invoke_generic_function {name}`` span.

    Works on sync and async functions and on sync and async generator functions (a
    generator's span lasts from its first item to its end, and is current only while the
    generator computes an item, never while the caller holds one).

    :param name: the span's function name; the function's ``__name__`` by default.
    """

    def decorator(func: F) -> F:
        label: str = name or str(getattr(func, "__name__", repr(func)))
        if inspect.isasyncgenfunction(func):
            return cast(F, _async_generator(func, label))
        if inspect.iscoroutinefunction(func):
            return cast(F, _coroutine(func, label))
        if inspect.isgeneratorfunction(func):
            return cast(F, _generator(func, label))
        return cast(F, _function(func, label))

    return decorator


def _coroutine(func: Callable[..., Any], label: str) -> Callable[..., Any]:
    @functools.wraps(func)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not _state.enabled:
            return await func(*args, **kwargs)
        from ._generic import call_async

        return await call_async(label, func, args, kwargs)

    return wrapper


def _function(func: Callable[..., Any], label: str) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not _state.enabled:
            return func(*args, **kwargs)
        from ._generic import call_sync

        return call_sync(label, func, args, kwargs)

    return wrapper


def _async_generator(func: Callable[..., Any], label: str) -> Callable[..., Any]:
    @functools.wraps(func)
    async def wrapper(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        stream: Any = func(*args, **kwargs)
        if _state.enabled:
            from ._generic import traced_async_items

            stream = traced_async_items(label, stream, args, kwargs)
        async with aclosing(stream):
            async for item in stream:
                yield item

    return wrapper


def _generator(func: Callable[..., Any], label: str) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Generator[Any, None, Any]:
        if not _state.enabled:
            return (yield from func(*args, **kwargs))
        from ._generic import traced_items

        return (yield from traced_items(label, func(*args, **kwargs), args, kwargs))

    return wrapper


def _method(kind: str, check: Callable[[Any], bool]) -> Callable[[F], F]:
    """A decorator tracing a method the way the runtime traces its routes of *kind*."""

    def decorator(func: F) -> F:
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
                if not _state.enabled or not check(self) or _intercept.intercepting(kind, self):
                    return await func(self, *args, **kwargs)
                from ._instrument import SPANS

                return await SPANS[kind](self, args, kwargs, lambda: func(self, *args, **kwargs))

            return wrapper  # type: ignore[return-value]

        @functools.wraps(func)
        def sync_wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            # A plain method returning a tool-call stream (the toolkit's route).
            if not _state.enabled or not check(self) or _intercept.intercepting(kind, self):
                return func(self, *args, **kwargs)
            from ._instrument import traced_tool_stream

            tool_call = args[0] if args else kwargs.get("tool_call")
            return traced_tool_stream(self, tool_call, func(self, *args, **kwargs))

        return sync_wrapper  # type: ignore[return-value]

    return decorator


def _is(kind: str) -> Callable[[Any], bool]:
    """A test of whether an object is an instance of the base class of *kind* (the class is
    looked up on first use: the core packages are imported only when tracing is on)."""
    base: type | None = None

    def check(obj: Any) -> bool:
        nonlocal base
        if base is None:
            from .. import agent, embedding, formatter, model, tool

            base = {
                "agent": agent.AgentBase,
                "model": model.ChatModelBase,
                "embedding": embedding.EmbeddingModelBase,
                "formatter": formatter.FormatterBase,
                "toolkit": tool.Toolkit,
            }[kind]
        return isinstance(obj, base)

    return check


trace_llm = _method("chat", _is("model"))
trace_llm.__doc__ = """Trace a chat model's ``__call__`` in a ``chat {model}`` span (CLIENT); a
streamed answer's span ends with the stream. On something other than a ChatModelBase method
it does nothing."""

trace_reply = _method("call", _is("agent"))
trace_reply.__doc__ = """Trace an agent's ``reply`` in an ``invoke_agent {name}`` span (every
agent's call is traced already: a decorated ``reply`` makes no second span)."""

trace_format = _method("format", _is("formatter"))
trace_format.__doc__ = """Trace a formatter's ``format`` in a ``format {target}`` span."""

trace_embedding = _method("embed", _is("embedding"))
trace_embedding.__doc__ = """Trace an embedding model's ``__call__`` in an ``embeddings
{model}`` span."""


def trace_toolkit(func: F) -> F:
    """Trace a toolkit's ``call_tool_function`` in an ``execute_tool {tool}`` span that ends
    with the call's stream (a coroutine returning the stream, as in AgentScope, works too)."""
    if not inspect.iscoroutinefunction(func):
        return _method("tool", _is("toolkit"))(func)

    @functools.wraps(func)
    async def wrapper(self: Any, tool_call: Any) -> Any:
        stream = await func(self, tool_call)
        if not _state.enabled:
            return stream
        from ._instrument import traced_tool_stream

        return traced_tool_stream(self, tool_call, stream)

    return wrapper  # type: ignore[return-value]
