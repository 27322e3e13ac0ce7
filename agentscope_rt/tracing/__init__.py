"""OpenTelemetry tracing of agents, models, formatters, tools and embeddings.

Needs the ``tracing`` extra (``pip install -e ".[tracing]"`` in a clone) to make spans;
importing this package and decorating functions does not. Off by default, and free while
off: the runtime's routes are wrapped only while tracing is enabled.

* :func:`setup_tracing` (AgentScope's name): export to an OTLP/HTTP endpoint and turn on.
* :func:`enable_tracing` / :func:`disable_tracing` / :func:`is_tracing_enabled`: the switch,
  optionally with a span processor of your own (the studio passes its own).
* :func:`trace`, :func:`trace_llm`, :func:`trace_reply`, :func:`trace_format`,
  :func:`trace_toolkit`, :func:`trace_embedding`: AgentScope's decorators, for user code.

Span names and attributes follow AgentScope 1.0.21 and OpenTelemetry's GenAI conventions;
see ``docs/tracing.md``.
"""

from ._attributes import OperationName, SpanAttributes
from ._decorators import (
    trace,
    trace_embedding,
    trace_format,
    trace_llm,
    trace_reply,
    trace_toolkit,
)
from ._setup import (
    disable_tracing,
    enable_tracing,
    flush_tracing,
    is_tracing_enabled,
    remove_span_processor,
    setup_tracing,
)

__all__ = [
    "OperationName",
    "SpanAttributes",
    "disable_tracing",
    "enable_tracing",
    "flush_tracing",
    "is_tracing_enabled",
    "remove_span_processor",
    "setup_tracing",
    "trace",
    "trace_embedding",
    "trace_format",
    "trace_llm",
    "trace_reply",
    "trace_toolkit",
]
