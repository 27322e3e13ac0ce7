"""The spans of the runtime's own routes, and putting them in place while tracing is on.

Each operation has one public route, and that route is what gets a span:

============================  ==========================  ======================
route                         span                        kind
============================  ==========================  ======================
``AgentBase.__call__``        ``invoke_agent {name}``     INTERNAL
``ChatModelBase.__call__``    ``chat {model}``            CLIENT
``FormatterBase.format``      ``format {target}``         INTERNAL
(and ``format_within``)
``Toolkit.call_tool_function``  ``execute_tool {tool}``   INTERNAL
``EmbeddingModelBase.__call__``  ``embeddings {model}``   CLIENT
============================  ==========================  ======================

The wrappers are set on every class that defines one of these methods (subclasses
included, and classes defined later, through :mod:`agentscope_rt._tracing_switch`) when
tracing is enabled, and the original functions are put back when it is disabled: while
tracing is off a call runs exactly the code it runs without this package.

An override that calls ``super()`` would pass through two wrappers for one call; a wrapper
that finds its own object already being traced (by the outer wrapper, in the same task)
steps aside, so one call makes one span.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from opentelemetry.trace import SpanKind

from .. import _tracing_switch
from ..agent import AgentBase
from ..embedding import EmbeddingModelBase
from ..formatter import FormatterBase
from ..model import ChatModelBase, ChatResponse
from ..tool import Toolkit
from . import _extract, _state
from ._attributes import SpanAttributes
from ._spans import TracedStream, attach, detach, end_ok, end_raised, in_context

__all__ = ["TRACED", "install", "traced_agent_call", "uninstall"]

TRACED = "__agentscope_rt_traced__"
"""Set on every function that makes its own span (the wrappers here, and the decorators' on
user code), so that it is never wrapped a second time."""

_active: ContextVar[object] = ContextVar("agentscope_rt_traced_object", default=None)
"""The object whose call the innermost wrapper of this task is tracing."""

_agent_provider: ContextVar[str] = ContextVar("agentscope_rt_agent_provider", default="agentscope")
"""The provider of the reply being traced in this task (its tool calls' spans name it too)."""


def _mark(wrapper: Any) -> Any:
    setattr(wrapper, TRACED, True)
    return wrapper


# -- the wrappers -----------------------------------------------------------------------------


def traced_agent_call(func: Callable[..., Any]) -> Callable[..., Any]:
    """*func* (an agent's ``__call__`` or ``reply``) with an ``invoke_agent`` span.

    An interrupted reply ends its span with ``agentscope.interrupted`` (status unset: being
    interrupted is not an error); a cancellation from outside ends it with
    ``agentscope.cancelled``; an exception ends it as an error of that type.
    """

    @functools.wraps(func)
    async def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        tracer = _state.tracer
        if tracer is None or _active.get() is self:
            return await func(self, *args, **kwargs)
        content = _state.capture_content
        attributes = _extract.agent_request(self, args, kwargs, content)
        span = tracer.start_span(
            f"invoke_agent {attributes[SpanAttributes.GEN_AI_AGENT_NAME]}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        token = attach(in_context(span))
        active = _active.set(self)
        provider = _agent_provider.set(attributes[SpanAttributes.GEN_AI_PROVIDER_NAME])
        try:
            reply = await func(self, *args, **kwargs)
        except BaseException as exc:
            end_raised(span, exc)
            raise
        finally:
            _agent_provider.reset(provider)
            _active.reset(active)
            detach(token)
        if getattr(self, "generate_reason", None) == "interrupted":
            span.set_attribute(SpanAttributes.AGENTSCOPE_INTERRUPTED, True)
            extra = _extract.agent_response(reply, content)
            if extra:
                span.set_attributes(extra)
            span.end()
        else:
            end_ok(span, _extract.agent_response(reply, content))
        return reply

    return _mark(__call__)


def _traced_async_call(
    func: Callable[..., Any],
    kind: SpanKind,
    request: Callable[[Any, tuple[Any, ...], dict[str, Any], bool], tuple[str, dict[str, Any]]],
    finish: Callable[[Any, Any, bool], Any],
) -> Callable[..., Any]:
    """*func* (an ``async def`` method) in a span: ``request(self, args, kwargs, content)``
    names the span and gives its attributes, ``finish(self, result, content)`` ends it (and
    returns what the call returns). A call made while the same object's call is already
    traced (a ``super()`` call, a nested route) makes no second span."""

    @functools.wraps(func)
    async def traced(self: Any, *args: Any, **kwargs: Any) -> Any:
        tracer = _state.tracer
        if tracer is None or _active.get() is self:
            return await func(self, *args, **kwargs)
        content = _state.capture_content
        name, attributes = request(self, args, kwargs, content)
        span = tracer.start_span(name, kind=kind, attributes=attributes)
        token = attach(in_context(span))
        active = _active.set(self)
        try:
            result = await func(self, *args, **kwargs)
        except BaseException as exc:
            end_raised(span, exc)
            raise
        finally:
            _active.reset(active)
            detach(token)
        return finish(span, (self, result), content)

    return _mark(traced)


def _chat_request(
    model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], content: bool
) -> tuple[str, dict[str, Any]]:
    return f"chat {model.model_name}", _extract.chat_request(model, args, kwargs, content)


def _chat_end(span: Any, call: tuple[Any, Any], content: bool) -> Any:
    model, result = call
    if result.__class__ is ChatResponse or isinstance(result, ChatResponse):
        end_ok(span, _extract.chat_response(model, result, content))
        return result
    if not hasattr(result, "__anext__"):
        end_ok(span, None)
        return result
    return TracedStream(result, span, lambda last: _chat_finish(model, last, content))


def _chat_finish(model: Any, last: Any, content: bool) -> dict[str, Any] | None:
    return None if last is None else _extract.chat_response(model, last, content)


def traced_chat_call(func: Callable[..., Any]) -> Callable[..., Any]:
    """*func* (a chat model's ``__call__``) with a ``chat`` span; a stream's span ends with
    the stream, with the last chunk's usage."""
    return _traced_async_call(func, SpanKind.CLIENT, _chat_request, _chat_end)


def _embedding_request(
    model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], content: bool
) -> tuple[str, dict[str, Any]]:
    attributes = _extract.embedding_request(model, args, kwargs, content)
    return f"embeddings {model.model_name}", attributes


def _embedding_end(span: Any, call: tuple[Any, Any], content: bool) -> Any:
    end_ok(span, _extract.embedding_response(call[1], content))
    return call[1]


def traced_embedding_call(func: Callable[..., Any]) -> Callable[..., Any]:
    """*func* (an embedding model's ``__call__``) with an ``embeddings`` span."""
    return _traced_async_call(func, SpanKind.CLIENT, _embedding_request, _embedding_end)


def _format_request(
    formatter: Any, args: tuple[Any, ...], kwargs: dict[str, Any], content: bool
) -> tuple[str, dict[str, Any]]:
    attributes = _extract.format_request(formatter, args, kwargs, content)
    return f"format {attributes[SpanAttributes.AGENTSCOPE_FORMAT_TARGET]}", attributes


def _format_end(span: Any, call: tuple[Any, Any], content: bool) -> Any:
    end_ok(span, _extract.format_response(call[1], content))
    return call[1]


def traced_format(func: Callable[..., Any]) -> Callable[..., Any]:
    """*func* (a formatter's ``format`` or ``format_within``) with a ``format`` span."""
    return _traced_async_call(func, SpanKind.INTERNAL, _format_request, _format_end)


def traced_tool_call(func: Callable[..., Any]) -> Callable[..., Any]:
    """*func* (``Toolkit.call_tool_function``) with an ``execute_tool`` span that ends with
    the call's stream of chunks."""

    @functools.wraps(func)
    def call_tool_function(self: Any, tool_call: Any) -> Any:
        tracer = _state.tracer
        if tracer is None or _active.get() is self:
            return func(self, tool_call)
        active = _active.set(self)
        try:
            stream = func(self, tool_call)
        finally:
            _active.reset(active)
        return traced_tool_stream(self, tool_call, stream)

    return _mark(call_tool_function)


def traced_tool_stream(toolkit: Any, tool_call: Any, stream: Any) -> TracedStream:
    """*stream*, the chunks of *tool_call*, in an ``execute_tool`` span (started now, as a
    child of the current span; current while the tool runs). Like the stream it wraps, it is
    iterated with ``async for`` and awaiting it returns itself."""
    content = _state.capture_content
    attributes = _extract.tool_request(toolkit, tool_call, _agent_provider.get(), content)
    span = _state.tracer.start_span(
        f"execute_tool {attributes[SpanAttributes.GEN_AI_TOOL_NAME]}",
        kind=SpanKind.INTERNAL,
        attributes=attributes,
    )
    return TracedStream(stream, span, lambda last: _extract.tool_response(last, content))


# -- putting them in place ----------------------------------------------------------------------

_ROUTES: tuple[tuple[type, str, Callable[[Callable[..., Any]], Callable[..., Any]]], ...] = (
    (AgentBase, "__call__", traced_agent_call),
    (ChatModelBase, "__call__", traced_chat_call),
    (EmbeddingModelBase, "__call__", traced_embedding_call),
    (FormatterBase, "format", traced_format),
    (FormatterBase, "format_within", traced_format),
    (Toolkit, "call_tool_function", traced_tool_call),
)

# (class, method name) -> the function the class defined before it was wrapped.
_originals: dict[tuple[type, str], Any] = {}


def _wrap(cls: type, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    func = cls.__dict__.get(name)
    if (
        func is None
        or not callable(func)
        or getattr(func, TRACED, False)
        or getattr(func, "__isabstractmethod__", False)
    ):
        return
    _originals[(cls, name)] = func
    setattr(cls, name, make(func))


def _class_defined(cls: type) -> None:
    for base, name, make in _ROUTES:
        if issubclass(cls, base):
            _wrap(cls, name, make)


def install() -> None:
    """Wrap every route of every class (and of classes defined from now on)."""
    for base, name, make in _ROUTES:
        for cls in _tracing_switch.family(base):
            _wrap(cls, name, make)
    _tracing_switch.set_class_hook(_class_defined)


def uninstall() -> None:
    """Put every wrapped route back as it was."""
    _tracing_switch.set_class_hook(None)
    for (cls, name), func in _originals.items():
        setattr(cls, name, func)
    _originals.clear()
