"""The span trees on the studio page: an OpenTelemetry span processor that publishes spans.

Each span is published when it starts (so a running reply shows its open spans) and again when
it ends, with its latency and status. Only the GenAI attributes the page shows are kept
(message contents are left out even when tracing records them).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

if TYPE_CHECKING:
    from ._state import EventBus

__all__ = ["StudioSpanProcessor"]

_SHOWN_PREFIXES = ("gen_ai.", "agentscope.", "error.")
_HIDDEN = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
_MAX_VALUE = 500


def _is_json_scalar(value: Any) -> bool:
    # NaN and infinities have no JSON form: shown as their repr ("nan"), not sent as a token
    # that the page's JSON.parse refuses.
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str | int | bool)


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    for key, value in (span.attributes or {}).items():
        if key.startswith(_SHOWN_PREFIXES) and key not in _HIDDEN:
            if isinstance(value, str) and len(value) > _MAX_VALUE:
                value = value[:_MAX_VALUE] + "..."
            shown[key] = value if _is_json_scalar(value) else repr(value)
    return shown


def span_entity(span: ReadableSpan) -> dict[str, Any]:
    """The page's data for *span* (running when it has no end time)."""
    context = span.get_span_context()
    span_id = format(context.span_id, "016x") if context else ""
    parent = span.parent
    start_ns = span.start_time or time.time_ns()
    end_ns = span.end_time
    attributes = _attributes(span)
    return {
        "key": span_id,
        "span_id": span_id,
        "trace_id": format(context.trace_id, "032x") if context else "",
        "parent_id": format(parent.span_id, "016x") if parent else None,
        "name": span.name,
        "start": start_ns / 1e9,
        "duration_ms": None if end_ns is None else round((end_ns - start_ns) / 1e6, 3),
        "status": span.status.status_code.name,
        "status_description": span.status.description,
        "agent_id": attributes.get("gen_ai.agent.id"),
        "attributes": attributes,
    }


class StudioSpanProcessor(SpanProcessor):
    """Publishes every span that starts and ends to the studio page.

    Hand it to a tracer provider (``provider.add_span_processor(studio.span_processor)``);
    :func:`serve` gives it to the runtime's tracing when the package has tracing. Spans ended
    in another thread (a sync tool's) are handed to the event loop without waiting for a page.

    :param on_reply_end: called as ``on_reply_end(agent_id, interrupted)`` when an agent
        reply span (``invoke_agent ...``) ends, in the thread that ended it.
    :param admit: called as a span starts; when it returns false the span is not shown (nor
        its end). The studio passes its budget of detail events per tick.
    """

    def __init__(
        self,
        bus: EventBus,
        on_reply_end: Callable[[str, bool], None] | None = None,
        admit: Callable[[], bool] | None = None,
    ) -> None:
        self._bus = bus
        self._on_reply_end = on_reply_end
        self._admit = admit
        # The spans shown as started (by span id), whose end is shown too.
        self._shown: set[int] = set()
        self._stopped = False

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self._stopped or (self._admit is not None and not self._admit()):
            return
        if self._admit is not None:
            self._shown.add(_span_id(span))
        data = span_entity(span)
        self._bus.publish("span", data["key"], data)

    def on_end(self, span: ReadableSpan) -> None:
        if self._stopped:
            return
        if self._admit is None or _take(self._shown, _span_id(span)):
            data = span_entity(span)
            self._bus.publish("span", data["key"], data)
        agent_id = (span.attributes or {}).get("gen_ai.agent.id")
        if self._on_reply_end is not None and agent_id and span.name.startswith("invoke_agent"):
            # The runtime's tracing marks an interrupted reply with this attribute (an error or
            # an outer cancellation is not an interrupt).
            interrupted = (span.attributes or {}).get("agentscope.interrupted") is True
            self._on_reply_end(str(agent_id), interrupted)

    def shutdown(self) -> None:
        self._stopped = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _span_id(span: ReadableSpan) -> int:
    # The span object given to on_end is a copy of the one given to on_start: its id differs.
    context = span.get_span_context()
    return context.span_id if context else 0


def _take(items: set[int], item: int) -> bool:
    """Whether *item* was in *items* (it is not any more)."""
    if item in items:
        items.discard(item)
        return True
    return False
