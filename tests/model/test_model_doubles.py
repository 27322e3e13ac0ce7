"""ScriptedChatModel and FunctionChatModel: replay, recording, streaming, structured output."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from agentscope_rt.exception import ModelResponseError
from agentscope_rt.message import TextBlock, ThinkingBlock, ToolUseBlock
from agentscope_rt.model import (
    ChatResponse,
    ChatUsage,
    FunctionChatModel,
    ScriptedChatModel,
    ScriptExhaustedError,
    reply,
    thinking,
    tool_call,
)

MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]
TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
    }
]


async def test_scripted_replays_in_order_and_records_calls() -> None:
    first = reply(thinking("Look it up."), tool_call("get_weather", {"city": "Paris"}, id="c1"))
    model = ScriptedChatModel([first, "Sunny.", [{"type": "text", "text": "Bye."}]])
    response = await model(MESSAGES, tools=TOOLS, tool_choice="get_weather", temperature=0)
    assert response is first
    assert response.content == [
        ThinkingBlock("Look it up."),
        ToolUseBlock("c1", "get_weather", {"city": "Paris"}),
    ]
    second = await model(MESSAGES)
    assert isinstance(second, ChatResponse) and second.content == [TextBlock("Sunny.")]
    third = await model(MESSAGES)
    assert isinstance(third, ChatResponse) and third.get_text() == "Bye."
    assert model.remaining == 0
    call = model.calls[0]
    assert call.messages is MESSAGES
    assert call.tools is TOOLS and call.tool_names == ["get_weather"]
    assert call.tool_choice == "get_weather"
    assert call.kwargs == {"temperature": 0}
    assert len(model.calls) == 3


async def test_running_out_of_script_is_a_clear_error() -> None:
    model = ScriptedChatModel(["only one"])
    await model(MESSAGES)
    with pytest.raises(ScriptExhaustedError, match="only 1 response"):
        await model(MESSAGES)
    model.add("more")
    again = await model(MESSAGES)
    assert isinstance(again, ChatResponse) and again.get_text() == "more"


async def test_bad_script_item_names_its_position() -> None:
    model = ScriptedChatModel(["fine", 42])  # type: ignore[list-item]
    await model(MESSAGES)
    with pytest.raises(TypeError, match="scripted response 1"):
        await model(MESSAGES)


async def test_unknown_tool_choice_is_rejected() -> None:
    model = ScriptedChatModel(["x"])
    with pytest.raises(ValueError, match="get_time"):
        await model(MESSAGES, tools=TOOLS, tool_choice="get_time")


async def test_streaming_yields_cumulative_chunks() -> None:
    usage = ChatUsage(5, 7, 0.0)
    response = reply(
        thinking("Let me think about it."),
        "The weather in Paris is sunny.",
        tool_call("get_weather", {"city": "Paris"}, id="c1"),
        usage=usage,
    )
    model = ScriptedChatModel([response], stream=True)
    chunks = [c async for c in await model(MESSAGES)]  # type: ignore[union-attr]
    assert len(chunks) > 4
    assert {c.id for c in chunks} == {response.id}
    assert [c.is_last for c in chunks] == [False] * (len(chunks) - 1) + [True]
    texts = [c.get_text() for c in chunks]
    assert texts == sorted(texts, key=len)
    assert any(0 < len(t) < len(response.get_text()) for t in texts)
    assert chunks[-1].content == response.content
    assert chunks[-1].usage is usage


async def test_structured_output_from_metadata_text_or_tool_call() -> None:
    class Answer(pydantic.BaseModel):
        city: str
        sunny: bool = True

    model = ScriptedChatModel(
        [
            reply("done", metadata={"city": "Paris"}),
            '{"city": "Oslo", "sunny": false}',
            reply(tool_call("generate_structured_output", {"city": "Rome"})),
            reply("no json here"),
            reply(metadata={"sunny": "maybe"}),
        ]
    )
    results = [await model(MESSAGES, structured_model=Answer) for _ in range(3)]
    assert [r.metadata for r in results] == [  # type: ignore[union-attr]
        {"city": "Paris", "sunny": True},
        {"city": "Oslo", "sunny": False},
        {"city": "Rome", "sunny": True},
    ]
    with pytest.raises(ModelResponseError):
        await model(MESSAGES, structured_model=Answer)
    with pytest.raises(ModelResponseError, match="city"):
        await model(MESSAGES, structured_model=Answer)


async def test_structured_output_when_streaming_is_on_the_last_chunk() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    model = ScriptedChatModel([reply("ok", metadata={"n": 3})], stream=True)
    chunks = [c async for c in await model(MESSAGES, structured_model=schema)]  # type: ignore[union-attr]
    assert chunks[-1].metadata == {"n": 3}


async def test_function_model_sync_and_async() -> None:
    seen: list[Any] = []

    def sync_fn(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        seen.append((messages, tools))
        return f"{len(messages)} message(s), {len(tools or [])} tool(s)"

    async def async_fn(
        messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> list[Any]:
        return [tool_call("get_weather", {"city": messages[-1]["content"]}, id="x")]

    sync_model = FunctionChatModel(sync_fn)
    response = await sync_model(MESSAGES, tools=TOOLS)
    assert isinstance(response, ChatResponse)
    assert response.get_text() == "1 message(s), 1 tool(s)"
    assert seen == [(MESSAGES, TOOLS)]
    assert sync_model.calls[0].tools is TOOLS

    async_model = FunctionChatModel(async_fn, stream=True)
    chunks = [c async for c in await async_model(MESSAGES)]  # type: ignore[union-attr]
    assert chunks[-1].tool_calls == [
        ToolUseBlock("x", "get_weather", {"city": "Weather in Paris?"})
    ]


def test_function_model_needs_a_callable() -> None:
    with pytest.raises(TypeError, match="callable"):
        FunctionChatModel("not a function")  # type: ignore[arg-type]
