"""The spans of a ReAct reply: names, kinds, tree and attributes, on both backends."""

from __future__ import annotations

import contextvars
import logging

import anyio
import pytest
from opentelemetry import trace as otel_trace
from opentelemetry.trace import SpanKind, StatusCode

import agentscope_rt
from agentscope_rt.message import Msg
from agentscope_rt.model import FunctionChatModel, ScriptedChatModel, reply, tool_call
from agentscope_rt.tool import ToolResponse

from ._agents import USAGE, agent, two_tools_model
from .conftest import Spans

A = agentscope_rt.tracing.SpanAttributes


async def test_a_reply_makes_agent_format_chat_and_tool_spans(spans: Spans) -> None:
    friday = agent(two_tools_model(), parallel_tool_calls=True)
    await friday(Msg("user", "Paris and Oslo?", "user"))

    root = spans.one("invoke_agent Friday")
    assert spans.parent_of(root) is None
    assert root.kind is SpanKind.INTERNAL
    assert root.status.status_code is StatusCode.OK
    assert root.attributes[A.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert root.attributes[A.GEN_AI_AGENT_NAME] == "Friday"
    assert root.attributes[A.GEN_AI_AGENT_ID] == friday.id
    assert root.attributes[A.GEN_AI_CONVERSATION_ID] == agentscope_rt._config.run_id
    assert root.attributes[A.GEN_AI_REQUEST_MODEL] == "scripted"

    chats = spans.named("chat scripted")
    formats = spans.named("format openai")
    tools = [spans.one("execute_tool lookup"), spans.one("execute_tool weather")]
    assert len(chats) == 2 and len(formats) == 2
    # Every span of the reply hangs from it; the two tool calls are siblings.
    for span in [*chats, *formats, *tools]:
        assert spans.parent_of(span) is root
    assert {s.name for s in spans.children(root)} == {
        "chat scripted",
        "format openai",
        "execute_tool lookup",
        "execute_tool weather",
    }
    for span in spans.all:
        assert span.attributes[A.GEN_AI_OPERATION_NAME]
        assert span.attributes[A.GEN_AI_PROVIDER_NAME]

    first, second = sorted(chats, key=lambda s: s.start_time or 0)
    assert first.kind is SpanKind.CLIENT
    assert first.attributes[A.GEN_AI_REQUEST_MODEL] == "scripted"
    assert first.attributes[A.GEN_AI_RESPONSE_MODEL] == "scripted"
    assert first.attributes[A.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_call",)
    assert second.attributes[A.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
    assert first.attributes[A.GEN_AI_USAGE_INPUT_TOKENS] == USAGE.input_tokens
    assert first.attributes[A.GEN_AI_USAGE_OUTPUT_TOKENS] == USAGE.output_tokens
    assert first.attributes[A.GEN_AI_RESPONSE_ID]

    lookup = tools[0]
    assert lookup.kind is SpanKind.INTERNAL
    assert lookup.attributes[A.GEN_AI_TOOL_NAME] == "lookup"
    assert lookup.attributes[A.GEN_AI_TOOL_CALL_ID] == "call_lookup"
    assert lookup.attributes[A.GEN_AI_TOOL_DESCRIPTION] == "Look a city up."
    # A tool call names its agent's provider.
    assert lookup.attributes[A.GEN_AI_PROVIDER_NAME] == root.attributes[A.GEN_AI_PROVIDER_NAME]
    assert formats[0].attributes[A.AGENTSCOPE_FORMAT_COUNT] >= 2


async def test_a_span_opened_in_a_tool_is_the_tools_child_in_a_task_or_a_thread(
    spans: Spans,
) -> None:
    await agent(two_tools_model(), parallel_tool_calls=True)(Msg("user", "go", "user"))
    inner = spans.named("invoke_generic_function inside_tool")
    assert len(inner) == 2
    parents = sorted(spans.parent_of(span).name for span in inner)  # type: ignore[union-attr]
    # lookup runs in a task-group child, weather (sync) in a worker thread.
    assert parents == ["execute_tool lookup", "execute_tool weather"]


async def test_content_is_recorded_only_when_asked(spans: Spans) -> None:
    await agent(two_tools_model())(Msg("user", "secret question", "user"))
    for span in spans.all:
        for key, value in span.attributes.items():
            assert "secret" not in str(value), key
        assert A.GEN_AI_INPUT_MESSAGES not in span.attributes
        assert A.GEN_AI_TOOL_CALL_ARGUMENTS not in span.attributes


async def test_content_capture_records_messages_arguments_and_results(
    content_spans: Spans,
) -> None:
    await agent(two_tools_model())(Msg("user", "secret question", "user"))
    root = content_spans.one("invoke_agent Friday")
    assert "secret question" in root.attributes[A.GEN_AI_INPUT_MESSAGES]
    assert "Oslo is sunny" in root.attributes[A.GEN_AI_OUTPUT_MESSAGES]
    lookup = content_spans.one("execute_tool lookup")
    assert '"Paris"' in lookup.attributes[A.GEN_AI_TOOL_CALL_ARGUMENTS]
    assert "2 million" in lookup.attributes[A.GEN_AI_TOOL_CALL_RESULT]
    chat = content_spans.named("chat scripted")[0]
    assert "secret question" in chat.attributes[A.GEN_AI_INPUT_MESSAGES]
    assert "lookup" in chat.attributes[A.GEN_AI_TOOL_DEFINITIONS]


def _failing(messages: object, tools: object) -> str:
    raise RuntimeError("the provider said: secret details")


async def test_an_exception_is_an_error_of_its_type_without_its_message(spans: Spans) -> None:
    with pytest.raises(RuntimeError):
        await agent(FunctionChatModel(_failing))(Msg("user", "hi", "user"))
    for span in (spans.one("chat function"), spans.one("invoke_agent Friday")):
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == "RuntimeError"
        assert span.attributes[A.ERROR_TYPE] == "RuntimeError"
        (event,) = span.events
        assert event.name == "exception"
        assert dict(event.attributes or {}) == {"exception.type": "RuntimeError"}


async def test_with_content_capture_the_exception_message_is_recorded(
    content_spans: Spans,
) -> None:
    with pytest.raises(RuntimeError):
        await agent(FunctionChatModel(_failing))(Msg("user", "hi", "user"))
    span = content_spans.one("chat function")
    assert "secret details" in (span.status.description or "")
    assert "secret details" in span.events[0].attributes["exception.message"]  # type: ignore[index]


def _slow_tool_model() -> ScriptedChatModel:
    return ScriptedChatModel([reply(tool_call("slow", {"seconds": 30})), reply("never")])


async def test_an_interrupted_reply_says_so_and_is_not_an_error(spans: Spans) -> None:
    friday = agent(_slow_tool_model())
    started = anyio.Event()

    async def slow(seconds: float) -> ToolResponse:
        """Wait.

        Args:
            seconds: how long.
        """
        started.set()
        await anyio.sleep(seconds)
        return ToolResponse(content=[])

    friday.toolkit.remove_tool_function("slow")
    friday.toolkit.register_tool_function(slow)
    async with anyio.create_task_group() as tg:
        tg.start_soon(friday, Msg("user", "wait", "user"))
        with anyio.fail_after(10):
            await started.wait()
        friday.interrupt()
    root = spans.one("invoke_agent Friday")
    assert root.attributes[A.AGENTSCOPE_INTERRUPTED] is True
    assert root.status.status_code is StatusCode.UNSET
    assert not root.events
    tool = spans.one("execute_tool slow")
    assert tool.attributes.get(A.AGENTSCOPE_INTERRUPTED) or tool.attributes.get(
        A.AGENTSCOPE_CANCELLED
    )


async def test_an_outer_cancellation_says_cancelled_and_is_not_an_error(spans: Spans) -> None:
    friday = agent(_slow_tool_model())
    with anyio.move_on_after(0.2):
        await friday(Msg("user", "wait", "user"))
    root = spans.one("invoke_agent Friday")
    assert root.attributes[A.AGENTSCOPE_CANCELLED] is True
    assert root.status.status_code is StatusCode.UNSET
    assert not root.events
    assert A.AGENTSCOPE_INTERRUPTED not in root.attributes
    assert spans.one("execute_tool slow").end_time is not None


async def test_a_streamed_reply_ends_its_chat_spans_with_the_last_chunks_usage(
    spans: Spans,
) -> None:
    await agent(two_tools_model(stream=True))(Msg("user", "go", "user"))
    chats = spans.named("chat scripted")
    assert len(chats) == 2
    for chat in chats:
        assert chat.status.status_code is StatusCode.OK
        assert chat.attributes[A.GEN_AI_USAGE_INPUT_TOKENS] == USAGE.input_tokens
        assert spans.parent_of(chat) is spans.one("invoke_agent Friday")


async def test_a_stream_closed_in_another_task_ends_its_span_without_context_errors(
    spans: Spans, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedChatModel([reply("one two three four five six")], stream=True)
    stream = await model([{"role": "user", "content": "hi"}])
    # Between chunks, the reader's current span is not the model's.
    before = otel_trace.get_current_span()
    await stream.__anext__()
    assert otel_trace.get_current_span() is before

    async def close() -> None:
        await stream.aclose()

    with caplog.at_level(logging.ERROR):
        async with anyio.create_task_group() as tg:
            tg.start_soon(close)
    chat = spans.one("chat scripted")
    assert chat.attributes[A.AGENTSCOPE_CLOSED_EARLY] is True
    assert not [r for r in caplog.records if "detach" in r.getMessage()]


async def test_a_dropped_stream_still_ends_its_span(spans: Spans) -> None:
    model = ScriptedChatModel([reply("one two three four")], stream=True)
    stream = await model([{"role": "user", "content": "hi"}])
    await stream.__anext__()
    del stream
    import gc

    gc.collect()
    assert spans.one("chat scripted").attributes[A.AGENTSCOPE_CLOSED_EARLY] is True


async def test_every_agent_is_traced_not_only_react(spans: Spans) -> None:
    from agentscope_rt.agent import AgentBase

    class Echo(AgentBase):
        name = "echo"

        async def reply(self, msg: Msg) -> Msg:
            return Msg(self.name, msg.get_text_content() or "", "assistant")

        async def observe(self, msg: Msg | list[Msg] | None) -> None:
            return None

    await Echo()(Msg("user", "hi", "user"))
    root = spans.one("invoke_agent echo")
    assert root.attributes[A.GEN_AI_PROVIDER_NAME] == "agentscope"


def test_the_run_id_of_init_is_the_conversation_id(spans: Spans) -> None:
    def run() -> None:
        agentscope_rt.init(run_id="run-42")

        async def call() -> None:
            await agent(two_tools_model())(Msg("user", "go", "user"))

        anyio.run(call)

    contextvars.copy_context().run(run)
    runtime_spans = [s for s in spans.all if "generic" not in s.name]
    assert len(runtime_spans) == 7
    assert {s.attributes[A.GEN_AI_CONVERSATION_ID] for s in runtime_spans} == {"run-42"}
    # init's values were set in that context only.
    assert agentscope_rt._config.run_id != "run-42"
