"""The tracing benchmark's workloads still mean what they say (no timing is asserted here:
figures come from ``bench/bench_tracing.py`` alone)."""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Iterator
from types import ModuleType

import anyio
import pytest

from agentscope_rt.tracing import is_tracing_enabled

BENCH = pathlib.Path(__file__).parent.parent.parent / "bench"


@pytest.fixture(scope="module")
def bench_tracing() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH))
    try:
        import bench_tracing

        yield bench_tracing
    finally:
        sys.path.remove(str(BENCH))


def test_a_traced_reply_makes_the_six_spans_the_sdk_variant_replays(
    bench_tracing: ModuleType,
) -> None:
    spans = bench_tracing.record_reply_spans()
    assert [s.name for s in spans] == [
        "invoke_agent Friday",
        "format openai",
        "chat zero-latency",
        "execute_tool get_weather",
        "format openai",
        "chat zero-latency",
    ]
    assert not is_tracing_enabled()
    # The replay sets the response attributes at the end, as the runtime does (the benchmark's
    # model reports no token usage).
    ended = {key for span in spans for key in (span.attributes or {})} & bench_tracing.END_KEYS
    assert ended == bench_tracing.END_KEYS - {
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
    }


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_sdk_variant_makes_the_same_spans(bench_tracing: ModuleType, backend: str) -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans = bench_tracing.record_reply_spans()
    exporter = InMemorySpanExporter()
    bench_tracing.PROVIDER.add_span_processor(SimpleSpanProcessor(exporter))
    anyio.run(bench_tracing.sdk_workload(spans)(), backend=backend)
    replayed = exporter.get_finished_spans()
    assert sorted(s.name for s in replayed) == sorted(s.name for s in spans)
    assert {k for s in replayed for k in s.attributes or {}} == {
        k for s in spans for k in s.attributes or {}
    }
