"""Memory compression in the loop: trigger, summary in later prompts, pairs kept together."""

from __future__ import annotations

import pytest

from agentscope_rt.agent import CompressionConfig, ReActAgent, SummarySchema
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.memory import MemoryMark
from agentscope_rt.message import TextBlock
from agentscope_rt.model import ChatResponse, ChatUsage, ScriptedChatModel
from agentscope_rt.token import CharTokenCounter
from agentscope_rt.tool import Toolkit, ToolResponse

from ._support import (
    call,
    history,
    make_agent,
    prompt_text,
    response,
    text,
    tool_pair_problems,
    user,
)

SUMMARY = {
    "task_overview": "Look up the weather in Paris.",
    "current_state": "The weather tool said: sunny.",
    "important_discoveries": "None.",
    "next_steps": "Answer follow-up questions.",
    "context_to_preserve": "The user likes short answers.",
}


def get_weather(city: str) -> ToolResponse:
    """Get the weather.

    Args:
        city: the city.
    """
    return ToolResponse(content=[TextBlock(text=f"sunny in {city}")])


def _summary_response() -> ChatResponse:
    return ChatResponse(content=[], metadata=dict(SUMMARY), usage=ChatUsage(100, 50, 0.01))


def _agent(model: ScriptedChatModel, keep_recent: int, threshold: int = 10) -> ReActAgent:
    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    return make_agent(
        model,
        toolkit,
        compression_config=ReActAgent.CompressionConfig(
            enable=True,
            agent_token_counter=CharTokenCounter(),
            trigger_threshold=threshold,
            keep_recent=keep_recent,
        ),
    )


async def test_compression_summarises_old_messages_and_feeds_the_summary_back() -> None:
    model = ScriptedChatModel(
        [
            response(call("get_weather", "c1", city="Paris")),
            _summary_response(),  # before the 2nd reasoning step: the question is compressed
            response(text("It is sunny.")),
            _summary_response(),  # next reply: summary, tool call and result are compressed
            response(text("Still sunny.")),
        ]
    )
    agent = _agent(model, keep_recent=2)
    await agent(user("Weather in Paris?"))
    first_compression = model.calls[1]
    assert first_compression.structured_model is SummarySchema
    assert first_compression.tools is None
    assert "write a continuation summary" in str(first_compression.messages[-1]["content"])
    assert "Weather in Paris?" in prompt_text(first_compression)
    sent = prompt_text(model.calls[2])
    assert "Look up the weather in Paris." in sent and "# Next Steps" in sent
    assert "Weather in Paris?" not in sent
    assert "sunny in Paris" in sent

    reply = await agent(user("And now?"))
    second_compression = prompt_text(model.calls[3])
    # The earlier summary is folded into the new one, with the messages after it.
    assert "Look up the weather in Paris." in second_compression
    assert "sunny in Paris" in second_compression
    reasoning = prompt_text(model.calls[4])
    assert "sunny in Paris" not in reasoning
    assert "It is sunny." in reasoning and "And now?" in reasoning

    msgs = await history(agent.memory)
    marked = [m for m, marks in agent.memory.content if MemoryMark.COMPRESSED in marks]
    assert [m.role for m in marked] == ["user", "assistant", "system"]
    assert len(msgs) == 6  # compressed messages are kept, only marked
    assert tool_pair_problems(msgs) == []
    assert reply.get_text_content()
    assert agent.usage is not None
    assert agent.usage.input_tokens == 110  # the compression call counts too


async def test_compression_never_separates_a_tool_call_from_its_result() -> None:
    model = ScriptedChatModel(
        [
            response(call("get_weather", "c1", city="Paris")),
            response(text("It is sunny.")),
            _summary_response(),
            response(text("ok")),
        ]
    )
    agent = _agent(model, keep_recent=3)
    await agent(user("Weather in Paris?"))
    await agent(user("Thanks"))
    # Keeping 3 would start at the tool result: the cut moves back before its call.
    marked = [m for m, marks in agent.memory.content if MemoryMark.COMPRESSED in marks]
    assert [m.get_text_content() for m in marked] == ["Weather in Paris?"]
    sent = model.calls[3].messages
    roles = [m["role"] for m in sent]
    assert roles[:3] == ["system", "user", "assistant"]  # system, summary, the tool call
    assert "tool_calls" in sent[2] and sent[3]["role"] == "tool"


async def test_no_compression_below_the_threshold() -> None:
    model = ScriptedChatModel([response(text("a")), response(text("b"))])
    agent = _agent(model, keep_recent=1, threshold=100_000)
    await agent(user("one"))
    await agent(user("two"))
    assert len(model.calls) == 2
    assert all(not marks for _, marks in agent.memory.content)


def test_compression_config_checks_its_arguments() -> None:
    counter = CharTokenCounter()
    with pytest.raises(TypeError, match="agent_token_counter"):
        CompressionConfig(enable=True, agent_token_counter=len, trigger_threshold=10)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="trigger_threshold"):
        CompressionConfig(enable=True, agent_token_counter=counter, trigger_threshold=-1)
    with pytest.raises(ValueError, match="compression_formatter"):
        CompressionConfig(
            enable=True,
            agent_token_counter=counter,
            trigger_threshold=10,
            compression_model=ScriptedChatModel([]),
        )
    config = CompressionConfig(
        True,
        counter,
        10,
        compression_model=ScriptedChatModel([]),
        compression_formatter=OpenAIChatFormatter(),
    )
    assert config.keep_recent == 3 and config.summary_schema is SummarySchema
    assert "{task_overview}" in config.summary_template
