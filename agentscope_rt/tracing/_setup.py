"""Turning tracing on and off, and where spans go.

:func:`enable_tracing` is the switch; :func:`setup_tracing` (AgentScope's name) points spans
at an OTLP/HTTP endpoint and turns tracing on. Spans are handed to span processors added to
an OpenTelemetry SDK tracer provider: the one the application set, or one installed here.
Exporting is the processors' business; the OTLP exporter here sits behind the SDK's
:class:`BatchSpanProcessor`, which sends from its own background thread, never from the event
loop.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from .._urls import redact_url
from .._version import __version__
from . import _state

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

__all__ = [
    "disable_tracing",
    "enable_tracing",
    "flush_tracing",
    "is_tracing_enabled",
    "setup_tracing",
]

logger = logging.getLogger(__name__)

_CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

_lock = threading.RLock()
# Per tracer provider we add processors to: the one processor registered on it, which hands
# spans to the processors given here (so that they can be replaced, which the SDK cannot do).
_fanouts: dict[int, Any] = {}
# The processor setup_tracing installed, with its endpoint.
_endpoint_processor: tuple[str, Any, Any] | None = None


def _import_sdk() -> Any:
    try:
        import opentelemetry.sdk.trace as sdk_trace
    except ImportError as exc:
        from .._extras import missing_extra

        raise missing_extra("tracing (OpenTelemetry's SDK)", "tracing", exc.name) from exc
    return sdk_trace


def _fanout(provider: TracerProvider) -> Any:
    """The processor of ours registered on *provider* (registered now if not yet)."""
    entry = _fanouts.get(id(provider))
    if entry is None:
        from ._fanout import FanoutSpanProcessor

        # The provider is kept with it, so that its id is never reused for another.
        entry = _fanouts[id(provider)] = (provider, FanoutSpanProcessor())
        provider.add_span_processor(entry[1])
    return entry[1]


def _global_sdk_provider() -> TracerProvider:
    """The application's SDK tracer provider, or one installed now when none is set.

    :raises TypeError: when the application set a provider that is not the SDK's (span
        processors cannot be added to it).
    """
    from opentelemetry import trace

    sdk_trace = _import_sdk()
    provider = trace.get_tracer_provider()
    if isinstance(provider, sdk_trace.TracerProvider):
        return provider
    if not isinstance(provider, trace.ProxyTracerProvider):
        raise TypeError(
            f"the application's tracer provider is a {type(provider).__name__}, not "
            "OpenTelemetry's SDK TracerProvider: span processors cannot be added to it; "
            "call enable_tracing() without a processor to trace into it as it is"
        )
    provider = sdk_trace.TracerProvider()
    trace.set_tracer_provider(provider)
    return provider


def _capture_from_env() -> bool:
    return os.environ.get(_CAPTURE_ENV, "").strip().lower() in ("1", "true", "yes")


def enable_tracing(
    span_processor: SpanProcessor | None = None,
    *,
    tracer_provider: TracerProvider | None = None,
    capture_content: bool | None = None,
) -> None:
    """Make spans for every agent reply, model, formatter, tool and embedding call from now
    on (calls already running are not traced).

    The studio calls this with its own processor to receive spans; an application may too.
    Calling it again adds the new processor (a processor already added is not added twice)
    and applies the new *capture_content*.

    :param span_processor: also hand every span to this processor (e.g. a
        ``BatchSpanProcessor`` around an exporter), added to *tracer_provider*, or else to the
        application's SDK tracer provider (one is installed as the global provider when none
        is set).
    :param tracer_provider: make spans with this provider instead of the global one.
    :param capture_content: record message and argument content on spans (the GenAI
        conventions' opt-in). ``None``: as ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_
        CONTENT`` says (``true`` to capture), else off.
    :raises ImportError: when OpenTelemetry's SDK is not installed (the ``tracing`` extra).
    :raises TypeError: when *span_processor* is given, no *tracer_provider*, and the
        application's global provider is not the SDK's.
    """
    _import_sdk()
    from opentelemetry import trace

    from ._instrument import install

    with _lock:
        if span_processor is not None:
            provider = tracer_provider if tracer_provider is not None else _global_sdk_provider()
            _fanout(provider).add(span_processor)
        if tracer_provider is not None:
            tracer = tracer_provider.get_tracer("agentscope_rt", __version__)
        else:
            tracer = trace.get_tracer("agentscope_rt", __version__)
        _state.capture_content = (
            _capture_from_env() if capture_content is None else bool(capture_content)
        )
        _state.tracer = tracer
        _state.enabled = True
        install()


def disable_tracing() -> None:
    """Stop making spans (spans already started still end). Tracing's interceptors are
    unregistered from the routes, so a call costs its route's one test again. Processors stay
    registered for a later :func:`enable_tracing`."""
    from ._instrument import uninstall

    with _lock:
        _state.enabled = False
        _state.tracer = None
        uninstall()


def remove_span_processor(span_processor: SpanProcessor) -> None:
    """Stop handing spans to *span_processor* (added by :func:`enable_tracing`); tracing
    itself stays as it is. A processor that was never added is ignored."""
    with _lock:
        for _, fanout in _fanouts.values():
            fanout.remove(span_processor)


def is_tracing_enabled() -> bool:
    """Whether spans are being made."""
    return _state.enabled


def setup_tracing(endpoint: str) -> None:
    """Export spans over OTLP/HTTP (protobuf) to *endpoint* and turn tracing on.

    The exporter sits behind a ``BatchSpanProcessor`` (spans are sent in batches from its
    background thread, every 0.2 s, so that :func:`flush_tracing` keeps its timeout) added to
    the application's SDK tracer provider, or to one installed as the global provider when
    none is set. Headers and other exporter settings come from the usual
    ``OTEL_EXPORTER_OTLP_*`` environment variables. Calling it again with another endpoint
    replaces the previous exporter (after it sent what it held, for at most 5 s plus the
    request under way); with the same endpoint it changes nothing: there is never a second
    exporter. The endpoint is logged without its user info and query.

    :param endpoint: the full URL spans are POSTed to, e.g. ``http://127.0.0.1:4318/v1/traces``.
    :raises ValueError: when *endpoint* is not an http(s) URL.
    :raises ImportError: when the ``tracing`` extra is not installed.
    :raises TypeError: when the application's global provider is not the SDK's.
    """
    global _endpoint_processor
    if not isinstance(endpoint, str) or not endpoint.startswith(("http://", "https://")):
        raise ValueError(
            f"the tracing endpoint must be an http(s) URL, not {redact_url(str(endpoint))!r}"
        )
    sdk_trace = _import_sdk()
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        from .._extras import missing_extra

        raise missing_extra("setup_tracing (the OTLP/HTTP exporter)", "tracing", exc.name) from exc
    from ._export import FlushableBatchSpanProcessor, hide_endpoint_in_logs

    with _lock:
        provider = _global_sdk_provider()
        assert isinstance(provider, sdk_trace.TracerProvider)
        previous = _endpoint_processor
        if previous is not None and previous[0] == endpoint and previous[1] is provider:
            enable_tracing(capture_content=_state.capture_content or None)
            return
        processor = FlushableBatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint))
        hide_endpoint_in_logs(processor, endpoint)
        _fanout(provider).add(processor)
        _endpoint_processor = (endpoint, provider, processor)
        if previous is not None:
            _fanout(previous[1]).remove(previous[2])
        enable_tracing(capture_content=_state.capture_content or None)
    if previous is not None:
        # Outside the lock: it may wait for the old collector (boundedly, see its shutdown).
        previous[2].shutdown()
    logger.info("tracing: exporting spans over OTLP/HTTP to %s", redact_url(endpoint))


def flush_tracing(timeout: float = 30.0) -> bool:
    """Have every processor added here export what it holds, waiting at most *timeout*
    seconds in all.

    It blocks: from async code, run it with ``anyio.to_thread.run_sync``. The exporter of
    :func:`setup_tracing` keeps the deadline whatever the collector does (a request still under
    way is left to finish on the exporter's thread). A processor the application added is
    asked with the time left; the SDK's own ``BatchSpanProcessor`` ignores it and exports from
    this thread, however long that takes.

    :param timeout: seconds to wait in all (0 only checks that nothing is waiting).
    :returns: ``True`` only when every span ended before the call was exported in time and
        no export failed since the previous flush; ``False`` when the time ran out, a batch was
        refused or lost, or the collector could not be reached.
    """
    deadline = time.monotonic() + max(timeout, 0.0)
    with _lock:
        fanouts = [fanout for _, fanout in _fanouts.values()]
    for fanout in fanouts:
        remaining = int((deadline - time.monotonic()) * 1000)
        if remaining < 0 or not fanout.force_flush(remaining):
            return False
    return True
