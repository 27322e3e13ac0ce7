"""The spans of the runtime's own routes: tracing's interceptors.

Each operation has one public route, and that route is what gets a span:

============================  ==========================  ======================
route (kind)                  span                        kind
============================  ==========================  ======================
``AgentBase.__call__``        ``invoke_agent {name}``     INTERNAL
(``call``)
``ChatModelBase.__call__``    ``chat {model}``            CLIENT
(``chat``)
``FormatterBase.format``      ``format {target}``         INTERNAL
(and ``format_within``;
``format``)
``Toolkit.call_tool_function``  ``execute_tool {tool}``   INTERNAL
(``tool``)
``EmbeddingModelBase.__call__``  ``embeddings {model}``   CLIENT
(``embed``)
============================  ==========================  ======================

:func:`install` registers one interceptor per kind with :mod:`agentscope_rt._intercept` when
tracing is enabled and :func:`uninstall` unregisters them when it is disabled: while tracing
is off a call costs its route's one test, and nothing here runs. A call that passes through
two routes of a kind on one object (an override calling ``super()``, ``format_within``
calling ``format``) makes one span: the routes run interceptors once per call.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from opentelemetry.trace import SpanKind

from .. import _intercept
from ..model import ChatResponse
from . import _extract, _state
from ._attributes import SpanAttributes
from ._spans import TracedStream, attach, detach, end_ok, end_raised, in_context

__all__ = ["SPANS", "install", "traced_tool_stream", "uninstall"]

_agent_provider: ContextVar[str] = ContextVar("agentscope_rt_agent_provider", default="agentscope")
"""The provider of the reply being traced in this task (its tool calls' spans name it too)."""

Run = Callable[[], Awaitable[Any]]
"""The traced call itself, started when called."""


# -- the spans -------------------------------------------------------------------------------


async def agent_span(agent: Any, args: tuple[Any, ...], kwargs: dict[str, Any], run: Run) -> Any:
    """*run* (an agent's call or reply) in an ``invoke_agent`` span.

    An interrupted reply ends its span with ``agentscope.interrupted`` (status unset: being
    interrupted is not an error); a cancellation from outside ends it with
    ``agentscope.cancelled``; an exception ends it as an error of that type.
    """
    tracer = _state.tracer
    if tracer is None:
        return await run()
    content = _state.capture_content
    attributes = _extract.agent_request(agent, args, kwargs, content)
    span = tracer.start_span(
        f"invoke_agent {attributes[SpanAttributes.GEN_AI_AGENT_NAME]}",
        kind=SpanKind.INTERNAL,
        attributes=attributes,
    )
    token = attach(in_context(span))
    provider = _agent_provider.set(attributes[SpanAttributes.GEN_AI_PROVIDER_NAME])
    try:
        reply = await run()
    except BaseException as exc:
        end_raised(span, exc)
        raise
    finally:
        _agent_provider.reset(provider)
        detach(token)
    if getattr(agent, "generate_reason", None) == "interrupted":
        span.set_attribute(SpanAttributes.AGENTSCOPE_INTERRUPTED, True)
        extra = _extract.agent_response(reply, content)
        if extra:
            span.set_attributes(extra)
        span.end()
    else:
        end_ok(span, _extract.agent_response(reply, content))
    return reply


def _call_span(
    kind: SpanKind,
    request: Callable[[Any, tuple[Any, ...], dict[str, Any], bool], tuple[str, dict[str, Any]]],
    finish: Callable[[Any, tuple[Any, Any], bool], Any],
) -> Callable[[Any, tuple[Any, ...], dict[str, Any], Run], Awaitable[Any]]:
    """A span maker for an ``async def`` route: ``request(obj, args, kwargs, content)`` names
    the span and gives its attributes, ``finish(span, (obj, result), content)`` ends it (and
    returns what the call returns)."""

    async def span_of(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any], run: Run) -> Any:
        tracer = _state.tracer
        if tracer is None:
            return await run()
        content = _state.capture_content
        name, attributes = request(obj, args, kwargs, content)
        span = tracer.start_span(name, kind=kind, attributes=attributes)
        token = attach(in_context(span))
        try:
            result = await run()
        except BaseException as exc:
            end_raised(span, exc)
            raise
        finally:
            detach(token)
        return finish(span, (obj, result), content)

    return span_of


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


def _embedding_request(
    model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], content: bool
) -> tuple[str, dict[str, Any]]:
    attributes = _extract.embedding_request(model, args, kwargs, content)
    return f"embeddings {model.model_name}", attributes


def _embedding_end(span: Any, call: tuple[Any, Any], content: bool) -> Any:
    end_ok(span, _extract.embedding_response(call[1], content))
    return call[1]


def _format_request(
    formatter: Any, args: tuple[Any, ...], kwargs: dict[str, Any], content: bool
) -> tuple[str, dict[str, Any]]:
    attributes = _extract.format_request(formatter, args, kwargs, content)
    return f"format {attributes[SpanAttributes.AGENTSCOPE_FORMAT_TARGET]}", attributes


def _format_end(span: Any, call: tuple[Any, Any], content: bool) -> Any:
    end_ok(span, _extract.format_response(call[1], content))
    return call[1]


SPANS: dict[str, Callable[[Any, tuple[Any, ...], dict[str, Any], Run], Awaitable[Any]]] = {
    "call": agent_span,
    "chat": _call_span(SpanKind.CLIENT, _chat_request, _chat_end),
    "embed": _call_span(SpanKind.CLIENT, _embedding_request, _embedding_end),
    "format": _call_span(SpanKind.INTERNAL, _format_request, _format_end),
}
"""Per async route kind: ``span(obj, args, kwargs, run)``, the call *run* starts in its span
(a chat stream's span ends with the stream, with the last chunk's usage)."""


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


# -- the interceptors ---------------------------------------------------------------------------


class _AsyncSpans:
    """Tracing's interceptor of an async route kind."""

    __slots__ = ("kind", "span")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.span = SPANS[kind]

    def __repr__(self) -> str:
        return f"<tracing of {self.kind!r} routes>"

    async def intercept(
        self, call: _intercept.Call, proceed: Callable[[tuple[Any, ...], dict[str, Any]], Any]
    ) -> Any:
        args, kwargs = call.args, call.kwargs
        return await self.span(call.obj, args, kwargs, lambda: proceed(args, kwargs))


class _ToolSpans:
    """Tracing's interceptor of ``Toolkit.call_tool_function``: the span ends with the call's
    stream of chunks."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<tracing of 'tool' routes>"

    def intercept(
        self, call: _intercept.Call, proceed: Callable[[tuple[Any, ...], dict[str, Any]], Any]
    ) -> Any:
        stream = proceed(call.args, call.kwargs)
        if _state.tracer is None:
            return stream
        tool_call = call.args[0] if call.args else call.kwargs.get("tool_call")
        if inspect.iscoroutine(stream):
            # An override written as AgentScope's: a coroutine returning the stream.
            return _traced_when_awaited(call.obj, tool_call, stream)
        return traced_tool_stream(call.obj, tool_call, stream)


async def _traced_when_awaited(toolkit: Any, tool_call: Any, pending: Awaitable[Any]) -> Any:
    stream = await pending
    if isinstance(stream, TracedStream) or _state.tracer is None:  # traced by @trace_toolkit
        return stream
    return traced_tool_stream(toolkit, tool_call, stream)


_INTERCEPTORS: tuple[tuple[str, Any], ...] = (
    *((kind, _AsyncSpans(kind)) for kind in SPANS),
    ("tool", _ToolSpans()),
)
_installed = False


# The packages whose routes are traced (each declares its routes when imported).
_TRACED_PACKAGES = ("agent", "embedding", "formatter", "model", "tool")


def install() -> None:
    """Register tracing's interceptors (once)."""
    global _installed
    if not _installed:
        for name in _TRACED_PACKAGES:
            importlib.import_module(f"agentscope_rt.{name}")
        for kind, interceptor in _INTERCEPTORS:
            _intercept.register(kind, interceptor)
        _installed = True


def uninstall() -> None:
    """Unregister tracing's interceptors (when registered)."""
    global _installed
    if _installed:
        for kind, interceptor in _INTERCEPTORS:
            _intercept.unregister(kind, interceptor)
        _installed = False
