"""One span processor that hands spans on to a set of processors that can change."""

from __future__ import annotations

import threading
import time
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

__all__ = ["FanoutSpanProcessor"]


class FanoutSpanProcessor(SpanProcessor):
    """Hands every span to each of its processors, in the order they were added.

    The SDK's tracer provider cannot drop a processor once added; this one, added once,
    can (so :func:`~._setup.setup_tracing` replaces its exporter instead of adding another).
    """

    def __init__(self) -> None:
        self._processors: tuple[SpanProcessor, ...] = ()
        self._lock = threading.Lock()

    def add(self, processor: SpanProcessor) -> None:
        """Add *processor* (no-op when already there)."""
        with self._lock:
            if not any(p is processor for p in self._processors):
                self._processors = (*self._processors, processor)

    def remove(self, processor: SpanProcessor) -> None:
        """Stop handing spans to *processor* (it is not shut down)."""
        with self._lock:
            self._processors = tuple(p for p in self._processors if p is not processor)

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        for processor in self._processors:
            processor.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        for processor in self._processors:
            processor.on_end(span)

    def shutdown(self) -> None:
        for processor in self._processors:
            processor.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush each processor in turn with what is left of *timeout_millis*; ``False`` as
        soon as one says not everything was exported, or the time is up."""
        deadline = time.monotonic() + timeout_millis / 1000
        for processor in self._processors:
            remaining = int((deadline - time.monotonic()) * 1000)
            if remaining < 0 or not processor.force_flush(remaining):
                return False
        return True
