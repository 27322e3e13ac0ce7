"""init(tracing_url=...) exports OTLP/HTTP protobuf to a real receiver on 127.0.0.1."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
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
