"""Tracing a ReAct reply with OpenTelemetry: the span tree of one run, printed.

A scripted model (offline, deterministic) calls two tools in parallel and then answers. With
tracing enabled, every reply, formatter call, model call and tool call gets a span named as
AgentScope names them (``invoke_agent Friday``, ``format openai``, ``chat scripted``,
``execute_tool lookup``), with the GenAI attributes (operation, provider, model, token usage,
finish reasons, tool name and call id, the run id as ``gen_ai.conversation.id``). A function
the tool calls, decorated with ``@trace``, shows up as the tool span's child.

Spans go to OpenTelemetry's ``ConsoleSpanExporter`` (set ``VERBOSE=1`` to see each span's
JSON) and to an in-memory exporter, from which the tree is printed. To send them to a
collector instead, call ``agentscope_rt.init(tracing_url="http://127.0.0.1:4318/v1/traces")``.

The agent prints its reply to the console as usual; the span tree is printed after it.

Run: ``python examples/80_tracing.py`` (asyncio) or ``python examples/80_tracing.py trio``;
needs the ``tracing`` extra.

What to look for: the agent's console output (two ``lookup`` calls, their results, the
answer), then one tree: ``invoke_agent Friday`` at the top, under it the formatter and model
spans of each reasoning step and two ``execute_tool lookup`` spans that overlap in time (the
calls ran in parallel), each with a ``population_lookup`` child. The run id printed above the
tree is the ``gen_ai.conversation.id`` every span carries (``agentscope_rt.init(run_id=...)``
sets it).
"""

from __future__ import annotations

import io
import os
import sys

import anyio
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import ChatUsage, ScriptedChatModel, reply, tool_call
from agentscope_rt.tool import Toolkit, ToolResponse
from agentscope_rt.tracing import disable_tracing, enable_tracing, trace

POPULATION = {"paris": 2.1, "lima": 10.1}


@trace("population_lookup")
def population(city: str) -> float:
    """A lookup the tool makes; its span is a child of the tool's span."""
    return POPULATION.get(city.lower(), 0.0)


async def lookup(city: str) -> ToolResponse:
    """Look up a city's population.

    Args:
        city: the city.
    """
    await anyio.sleep(0.05)
    return ToolResponse(content=[TextBlock(text=f"{city}: {population(city)} million people")])


def show(spans: list[ReadableSpan]) -> None:
    """Print the span tree, children under their parent, with durations."""
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        parent = span.parent.span_id if span.parent else None
        by_parent.setdefault(parent, []).append(span)

    def walk(parent: int | None, depth: int) -> None:
        for span in by_parent.get(parent, []):
            ms = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
            attributes = span.attributes or {}
            detail = ", ".join(
                f"{key.split('.', 1)[1]}={attributes[key]}"
                for key in (
                    "gen_ai.provider.name",
                    "gen_ai.usage.input_tokens",
                    "gen_ai.response.finish_reasons",
                    "gen_ai.tool.call.id",
                )
                if key in attributes
            )
            print(f"  {'  ' * depth}{span.name:<40} {ms:7.2f} ms  {detail}")
            walk(span.context.span_id, depth + 1)

    walk(None, 0)


async def main() -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    console_out = sys.stdout if os.environ.get("VERBOSE") else io.StringIO()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=console_out)))
    enable_tracing(tracer_provider=provider)

    toolkit = Toolkit()
    toolkit.register_tool_function(lookup)
    usage = ChatUsage(input_tokens=120, output_tokens=30)
    model = ScriptedChatModel(
        [
            reply(
                tool_call("lookup", {"city": "Paris"}),
                tool_call("lookup", {"city": "Lima"}),
                usage=usage,
            ),
            reply("Lima (10.1 million) is larger than Paris (2.1 million).", usage=usage),
        ]
    )
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are a helpful assistant.",
        model=model,
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
        parallel_tool_calls=True,
    )
    await agent(Msg("user", "Which is larger, Paris or Lima?", "user"))
    spans = list(memory.get_finished_spans())
    run_ids = {(s.attributes or {}).get("gen_ai.conversation.id") for s in spans} - {None}
    print(f"\nspans of run {', '.join(map(str, run_ids))}:")
    show(spans)
    disable_tracing()
    provider.shutdown()


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
