"""AgentScope's half of the tracing benchmark; run by ``bench_tracing.py`` in AgentScope's venv.

Usage: ``python _tracing_agentscope.py WARMUP on|off``. The workload is ``_react_agentscope.py``'s
(a zero-latency model, one tool call, two model calls per reply). With ``on``, AgentScope's
tracing is enabled as ``agentscope.init(tracing_url=...)`` enables it (its ``trace_enabled``
flag), with an SDK tracer provider whose one processor hands each span to an exporter that
drops it: the cost measured is making the spans, not sending them. The benchmark's model gets
``@trace_llm``, as AgentScope's own provider classes have it, so that the six spans of a reply
are the ones agentscope-rt makes (reply, two formats, two chats, one tool). Then it serves
batches as ``_react_agentscope.py`` does.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Sequence

import _react_agentscope as workload
import agentscope
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class DropExporter(SpanExporter):
    """Receives every span and keeps none."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def main() -> None:
    warmup, mode = int(sys.argv[1]), sys.argv[2]
    if mode == "on":
        from agentscope.tracing import trace_llm

        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(DropExporter()))
        trace.set_tracer_provider(provider)
        agentscope._config.trace_enabled = True
        model = workload.ZeroLatencyModel
        model.__call__ = trace_llm(model.__call__)  # type: ignore[method-assign]
    loop = asyncio.new_event_loop()
    one = loop.run_until_complete(workload.make_workload())

    async def batch(replies: int) -> float:
        start = time.perf_counter()
        for _ in range(replies):
            await one()
        return (time.perf_counter() - start) / replies * 1e6

    loop.run_until_complete(batch(warmup))
    print(json.dumps({"version": agentscope.__version__}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            break
        us = loop.run_until_complete(batch(int(line)))
        print(json.dumps({"us_per_reply": us}), flush=True)
    loop.close()


if __name__ == "__main__":
    main()
