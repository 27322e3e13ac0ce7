"""Per-solution statistics from the runtime's OpenTelemetry spans.

The evaluator opens one root span around each solution run; the runtime's spans (agent replies,
model calls, tool calls, embeddings) started inside it share its trace id, because OpenTelemetry
keeps the current span in a context variable that every task started from the solution inherits.
:class:`SolutionStatsProcessor` counts each finished span into the bucket of its trace, so
solutions running side by side (tasks of one task group, threads) never mix their figures.
AgentScope's exporter read the *current* baggage when a span ended, which names the right
solution only while one runs at a time.

The OpenTelemetry SDK (the ``evaluate`` extra) is needed only for statistics: without it
every solution's statistics are empty and everything else works.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

try:
    from opentelemetry.sdk.trace import SpanProcessor as _SpanProcessorBase

    HAVE_SDK = True
except ImportError:  # pragma: no cover - exercised only without the SDK installed
    _SpanProcessorBase = object  # type: ignore[assignment,misc]
    HAVE_SDK = False

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, Span

# AgentScope's attribute names (OpenTelemetry's GenAI semantic conventions).
OPERATION = "gen_ai.operation.name"
REQUEST_MODEL = "gen_ai.request.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
# The root span's own marks (AgentScope's baggage keys), for whoever exports the traces.
TASK_ID = "agentscope.evaluate.task_id"
REPEAT_ID = "agentscope.evaluate.repeat_id"


def empty_stats() -> dict[str, Any]:
    """Statistics of a solution that made no call, in AgentScope's ``stats.json`` shape."""
    return {"llm": {}, "agent": 0, "tool": {}, "embedding": {}, "chat_usage": {}}


def add_span(stats: dict[str, Any], attributes: Any) -> None:
    """Count one finished span, by its ``gen_ai.operation.name``, into *stats*."""
    operation = attributes.get(OPERATION)
    if operation == "chat":
        model = str(attributes.get(REQUEST_MODEL, "unknown"))
        stats["llm"][model] = stats["llm"].get(model, 0) + 1
        usage = stats["chat_usage"].setdefault(model, {"input_tokens": 0, "output_tokens": 0})
        usage["input_tokens"] += int(attributes.get(INPUT_TOKENS, 0) or 0)
        usage["output_tokens"] += int(attributes.get(OUTPUT_TOKENS, 0) or 0)
    elif operation == "invoke_agent":
        stats["agent"] += 1
    elif operation == "execute_tool":
        tool = str(attributes.get(TOOL_NAME, "unknown"))
        stats["tool"][tool] = stats["tool"].get(tool, 0) + 1
    elif operation == "embeddings":
        model = str(attributes.get(REQUEST_MODEL, "unknown"))
        stats["embedding"][model] = stats["embedding"].get(model, 0) + 1


class SolutionStatsProcessor(_SpanProcessorBase):
    """An OpenTelemetry span processor counting spans per solution.

    :meth:`track` opens a bucket for a root span's trace; every span of that trace that ends
    while the bucket is open is counted into it (:func:`add_span`); :meth:`release` closes it
    and returns the figures. Spans of other traces are ignored, at the cost of one dict lookup.
    Safe to call from several threads.
    """

    def __init__(self) -> None:
        self._buckets: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def track(self, trace_id: int) -> None:
        """Count the spans of *trace_id* from now on."""
        with self._lock:
            self._buckets[trace_id] = empty_stats()

    def release(self, trace_id: int) -> dict[str, Any]:
        """Stop counting *trace_id*; its figures (empty when it was not tracked)."""
        with self._lock:
            return self._buckets.pop(trace_id, None) or empty_stats()

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        """Nothing to do: a span is counted when it ends (its usage is known then)."""

    def on_end(self, span: ReadableSpan) -> None:
        """Count *span* into its trace's bucket, if that trace is tracked."""
        context = span.context
        if context is None or not self._buckets:
            return
        with self._lock:
            stats = self._buckets.get(context.trace_id)
            if stats is not None:
                add_span(stats, span.attributes or {})

    def shutdown(self) -> None:
        """Drop every open bucket."""
        with self._lock:
            self._buckets.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered: always ``True``."""
        return True


_shared: list[SolutionStatsProcessor] = []
_root_tracer: list[Any] = []
_setup_lock = threading.Lock()


def solution_stats_processor() -> SolutionStatsProcessor:
    """The process's one statistics processor (made on first use).

    While an evaluator runs, it receives the runtime's spans (:func:`connect_runtime_tracing`).
    Register it with a tracer provider of your own
    (``provider.add_span_processor(solution_stats_processor())``) to count spans you create
    yourself.
    """
    with _setup_lock:
        if not _shared:
            _shared.append(SolutionStatsProcessor())
        return _shared[0]


def connect_runtime_tracing(processor: SolutionStatsProcessor) -> Callable[[], None]:
    """Hand the runtime's spans (replies, model, tool and embedding calls) to *processor*,
    turning tracing on if it was off; the returned function undoes exactly that, so an
    evaluation leaves the process's tracing as it found it. Without OpenTelemetry's SDK it
    does nothing (the statistics stay empty)."""
    from .. import tracing

    was_enabled = tracing.is_tracing_enabled()
    try:
        tracing.enable_tracing(processor)
    except (ImportError, TypeError):
        # No SDK, or an application provider that takes no processors.
        return lambda: None

    def undo() -> None:
        tracing.remove_span_processor(processor)
        if not was_enabled:
            tracing.disable_tracing()

    return undo


def _tracer() -> Any:
    """The tracer that opens solution root spans: the global provider's when it is the SDK's
    (so the root spans are exported with the rest), else a private SDK provider's (a no-op
    tracer would give children no trace to share)."""
    if not _root_tracer:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider

        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            provider = TracerProvider()
        _root_tracer.append(provider.get_tracer("agentscope_rt.evaluate"))
    return _root_tracer[0]


@contextmanager
def solution_span(task_id: str, repeat_id: str) -> Iterator[dict[str, Any]]:
    """Run the body inside the solution's root span ``Solution_{task}_{repeat}`` and fill the
    yielded dict with the statistics of the spans that ended inside it (on exit, also when the
    body raises). Without the OpenTelemetry SDK the dict gets empty statistics."""
    stats: dict[str, Any] = {}
    if not HAVE_SDK:
        try:
            yield stats
        finally:
            stats.update(empty_stats())
        return
    from opentelemetry import baggage, context

    processor = solution_stats_processor()
    ctx = baggage.set_baggage("task_id", task_id)
    ctx = baggage.set_baggage("repeat_id", repeat_id, context=ctx)
    token = context.attach(ctx)
    try:
        with _tracer().start_as_current_span(
            f"Solution_{task_id}_{repeat_id}", attributes={TASK_ID: task_id, REPEAT_ID: repeat_id}
        ) as root:
            trace_id = root.get_span_context().trace_id
            processor.track(trace_id)
            try:
                yield stats
            finally:
                stats.update(processor.release(trace_id))
    finally:
        context.detach(token)
