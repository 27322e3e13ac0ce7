"""init(tracing_url=...) exports OTLP/HTTP protobuf to a real receiver on 127.0.0.1."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import pathlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import agentscope_rt
from agentscope_rt.message import Msg
from agentscope_rt.tracing import _setup, disable_tracing, flush_tracing

from .._local_http import LocalHTTPServer, QuietHandler, send_body
from ._agents import agent, two_tools_model


class Receiver:
    """What the OTLP receiver got: decoded spans, by request path."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, Any]] = []
        self.lock = threading.Lock()

    def names(self, path: str = "/v1/traces") -> list[str]:
        with self.lock:
            return [span.name for p, span in self.spans if p == path]


@pytest.fixture
def receiver() -> Iterator[tuple[str, Receiver]]:
    got = Receiver()

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            request = ExportTraceServiceRequest.FromString(body)
            with got.lock:
                for resource_spans in request.resource_spans:
                    for scope_spans in resource_spans.scope_spans:
                        got.spans += [(self.path, span) for span in scope_spans.spans]
            send_body(self, 200, b"", "application/x-protobuf")

    with LocalHTTPServer(Handler) as server:
        yield server.url, got
    disable_tracing()


async def test_spans_reach_an_otlp_http_receiver(receiver: tuple[str, Receiver]) -> None:
    url, got = receiver
    contextvars.copy_context().run(
        agentscope_rt.init, logging_level="ERROR", tracing_url=f"{url}/v1/traces"
    )
    await agent(two_tools_model())(Msg("user", "go", "user"))
    assert await anyio.to_thread.run_sync(flush_tracing)
    names = got.names()
    assert "invoke_agent Friday" in names
    assert names.count("chat scripted") == 2
    assert {"execute_tool lookup", "execute_tool weather"} <= set(names)
    root = next(span for _, span in got.spans if span.name == "invoke_agent Friday")
    attributes = {kv.key: kv.value.string_value for kv in root.attributes}
    assert attributes["gen_ai.conversation.id"] == agentscope_rt._config.run_id
    # Sent by the SDK's batch processor, from its own thread.
    assert isinstance(_setup._endpoint_processor[2], BatchSpanProcessor)  # type: ignore[index]


def test_setting_the_endpoint_again_never_adds_a_second_exporter(
    receiver: tuple[str, Receiver],
) -> None:
    url, got = receiver
    agentscope_rt.tracing.setup_tracing(f"{url}/v1/traces")
    first = _setup._endpoint_processor
    agentscope_rt.tracing.setup_tracing(f"{url}/v1/traces")
    assert _setup._endpoint_processor is first
    agentscope_rt.tracing.setup_tracing(f"{url}/other")
    assert first is not None and _setup._endpoint_processor is not None
    provider = first[1]
    fanout = _setup._fanouts[id(provider)][1]
    processors = [p for p in fanout._processors if isinstance(p, BatchSpanProcessor)]
    assert processors == [_setup._endpoint_processor[2]]

    @agentscope_rt.tracing.trace("once")
    def once() -> None:
        return None

    once()
    assert flush_tracing()
    assert got.names("/other") == ["invoke_generic_function once"]
    assert "invoke_generic_function once" not in got.names()


def test_an_endpoint_that_is_not_an_http_url_is_refused() -> None:
    for endpoint in ("127.0.0.1:4318/v1/traces", "", "grpc://127.0.0.1:4317"):
        with pytest.raises(ValueError, match="http"):
            agentscope_rt.tracing.setup_tracing(endpoint)
    assert not agentscope_rt.tracing.is_tracing_enabled()


@contextlib.contextmanager
def _collector(answer: Callable[[QuietHandler], None]) -> Iterator[str]:
    """A local OTLP/HTTP collector that reads each request and then calls *answer*; its
    traces URL is yielded, and tracing is off again afterwards."""

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            answer(self)

    try:
        with LocalHTTPServer(Handler) as server:
            yield f"{server.url}/v1/traces"
    finally:
        disable_tracing()


def _one_span() -> None:
    @agentscope_rt.tracing.trace("one")
    def one() -> None:
        return None

    one()


async def test_a_flush_keeps_its_timeout_when_the_collector_hangs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each OTLP request may take 120 s: a flush that waited for the exporter would hang here.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "120")
    release = threading.Event()
    received = threading.Event()

    def hang(handler: QuietHandler) -> None:
        received.set()
        release.wait(120)
        send_body(handler, 200, b"", "application/x-protobuf")

    with _collector(hang) as url:
        try:
            agentscope_rt.tracing.setup_tracing(url)
            _one_span()
            with anyio.fail_after(60):
                flushed = await anyio.to_thread.run_sync(flush_tracing, 0.5, abandon_on_cancel=True)
            assert flushed is False
            # The span did reach the collector: the exporter is waiting for its answer.
            assert received.wait(60)
        finally:
            release.set()


async def test_a_flush_is_false_when_the_collector_refuses_the_spans() -> None:
    def refuse(handler: QuietHandler) -> None:
        send_body(handler, 400, b"", "application/x-protobuf")

    with _collector(refuse) as url:
        agentscope_rt.tracing.setup_tracing(url)
        _one_span()
        assert await anyio.to_thread.run_sync(flush_tracing, 60) is False
        # That failure is reported once; with nothing new to send the next flush is True.
        assert await anyio.to_thread.run_sync(flush_tracing, 60) is True


async def test_a_flush_is_true_only_for_spans_the_collector_took(
    receiver: tuple[str, Receiver],
) -> None:
    url, got = receiver
    agentscope_rt.tracing.setup_tracing(f"{url}/v1/traces")
    _one_span()
    assert await anyio.to_thread.run_sync(flush_tracing, 60) is True
    assert got.names() == ["invoke_generic_function one"]
    processor = _setup._endpoint_processor[2]  # type: ignore[index]
    processor.shutdown()
    assert processor.force_flush(1000) is False  # shut down: it can export nothing more


async def test_the_endpoint_is_logged_without_user_info_or_query(
    receiver: tuple[str, Receiver], tmp_path: pathlib.Path
) -> None:
    url, _ = receiver
    secret_url = url.replace("http://", "http://alice:pa55word@") + "/v1/traces?key=t0ken"
    contextvars.copy_context().run(
        agentscope_rt.init,
        logging_level="INFO",
        logging_path=tmp_path / "run.log",
        tracing_url=secret_url,
    )
    for handler in agentscope_rt.logger.handlers:
        handler.flush()
    logged = (tmp_path / "run.log").read_text()
    assert f"to {url}/v1/traces" in logged
    assert "alice" not in logged and "pa55word" not in logged and "t0ken" not in logged
    for bad in ("ftp://alice:pa55word@127.0.0.1/v1/traces?key=t0ken", "alice:pa55word@host"):
        for call in (agentscope_rt.tracing.setup_tracing, agentscope_rt.init):
            with pytest.raises(ValueError, match="http") as info:
                call(tracing_url=bad) if call is agentscope_rt.init else call(bad)
            assert "pa55word" not in str(info.value) and "t0ken" not in str(info.value)


async def test_the_exporters_own_logs_show_no_user_info_or_query(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def unavailable(handler: QuietHandler) -> None:
        send_body(handler, 503, b"", "application/x-protobuf")  # retried, and logged

    with caplog.at_level(logging.DEBUG), _collector(unavailable) as url:
        secret_url = url.replace("http://", "http://alice:pa55word@") + "?key=t0ken-value"
        agentscope_rt.tracing.setup_tracing(secret_url)
        _one_span()
        with anyio.fail_after(60):
            while not any("retrying" in r.getMessage() for r in caplog.records):  # noqa: ASYNC110 (logged by the exporter thread)
                await anyio.sleep(0.05)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "/v1/traces" in logged  # the request was logged, its secrets were not
    assert "pa55word" not in logged and "t0ken-value" not in logged
