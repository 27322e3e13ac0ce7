"""The span processor :func:`~._setup.setup_tracing` installs: the SDK's batch processor with a
flush that keeps its deadline and says whether every span reached the collector.

OpenTelemetry SDK 1.45's ``BatchSpanProcessor.force_flush`` ignores its timeout and answers
``True`` whatever the export did: with a collector that hangs it blocks for as long as each
OTLP/HTTP attempt (10 s) and its retries take, then claims success. This processor never
exports from the flushing thread. Its exporter counts the spans it settled (sent, or given up
on) and the ones that failed; a flush waits, at most until its deadline, for the batch
worker (which wakes every :data:`SCHEDULE_DELAY_MILLIS`) to settle every span ended before
it, and answers ``True`` only when all of them were exported.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from .._provider import library_log_filter
from .._urls import url_redactions

__all__ = [
    "SCHEDULE_DELAY_MILLIS",
    "SHUTDOWN_FLUSH_SECONDS",
    "FlushableBatchSpanProcessor",
    "hide_endpoint_in_logs",
]

_EXPORT_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.common.http",
    "opentelemetry.sdk._shared_internal",
    "urllib3.connectionpool",
)
"""The loggers that print an export's failure or request with the collector's URL in it (its
query included: ``Max retries exceeded with url: /v1/traces?key=...``)."""

SCHEDULE_DELAY_MILLIS = 200
"""How often the batch worker wakes to send what it holds (the SDK's default is 5 s): a flush
cannot wake it, so this is how long a flush may wait before its spans are even sent."""

SHUTDOWN_FLUSH_SECONDS = 5.0
"""How long a shutdown lets the processor send what it holds before it gives up on it."""


class _SettlingExporter(SpanExporter):
    """Hands batches to *exporter* and counts, under a condition, the spans settled and the
    ones that were not exported. Once closed it refuses batches at once (a shutdown then waits
    for at most the one request already under way)."""

    def __init__(self, exporter: SpanExporter) -> None:
        self.exporter = exporter
        self.settled = 0
        self.failed = 0
        self.changed = threading.Condition()
        self._closed = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = SpanExportResult.FAILURE
        try:
            if not self._closed:
                result = self.exporter.export(spans)
        finally:
            with self.changed:
                self.settled += len(spans)
                if result is not SpanExportResult.SUCCESS:
                    self.failed += len(spans)
                self.changed.notify_all()
        return result

    def shutdown(self) -> None:
        if not self._closed:
            self._closed = True
            # Stops the exporter's retry waits too, not only later batches.
            self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class FlushableBatchSpanProcessor(BatchSpanProcessor):
    """A ``BatchSpanProcessor`` around *exporter* whose :meth:`force_flush` keeps its timeout
    and returns ``False`` unless every span ended before it was exported.

    :param exporter: where the batches go (its own per-request timeout still applies to the
        request under way when a flush gives up: the flush does not wait for it).
    """

    def __init__(self, exporter: SpanExporter) -> None:
        self._settling = _SettlingExporter(exporter)
        super().__init__(self._settling, schedule_delay_millis=SCHEDULE_DELAY_MILLIS)
        self._received = 0
        # Failures already answered by a flush are not reported again by the next one.
        self._failed_reported = 0
        self._closed = False

    def on_end(self, span: ReadableSpan) -> None:
        if self._closed or not (span.context and span.context.trace_flags.sampled):
            return
        with self._settling.changed:
            self._received += 1
        super().on_end(span)

    def force_flush(self, timeout_millis: int | None = None) -> bool:
        """Wait until every span ended so far is settled, at most *timeout_millis* (30 s when
        ``None``); ``True`` when all were settled in time and none failed since the previous
        flush. Never raises; after :meth:`shutdown` it answers ``False``."""
        if self._closed:
            return False
        timeout = 30.0 if timeout_millis is None else max(timeout_millis, 0) / 1000
        deadline = time.monotonic() + timeout
        settling = self._settling
        with settling.changed:
            target = self._received
            while settling.settled < target:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                settling.changed.wait(remaining)
            newly_failed = settling.failed - self._failed_reported
            self._failed_reported = settling.failed
            return newly_failed == 0

    def shutdown(self) -> None:
        """Send what is held for up to :data:`SHUTDOWN_FLUSH_SECONDS`, then stop; the worker
        is waited for only as long as the request under way (the exporter's own timeout)."""
        if self._closed:
            return
        self.force_flush(int(SHUTDOWN_FLUSH_SECONDS * 1000))
        self._closed = True
        self._settling.shutdown()
        super().shutdown()


def hide_endpoint_in_logs(owner: object, endpoint: str) -> None:
    """While *owner* lives, take the user info and query of *endpoint* out of what the
    exporting libraries log (the package's own records show it through
    :func:`~agentscope_rt._urls.redact_url`)."""
    redaction = library_log_filter()
    for name in _EXPORT_LOGGERS:
        library_logger = logging.getLogger(name)
        if redaction not in library_logger.filters:
            library_logger.addFilter(redaction)
    redaction.remember(owner, url_redactions(endpoint))
