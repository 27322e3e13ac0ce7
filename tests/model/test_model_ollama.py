"""OllamaChatModel against a local server speaking Ollama's /api/chat protocol (NDJSON)."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from agentscope_rt.exception import ModelAPIError, ModelResponseError
from agentscope_rt.message import TextBlock, ThinkingBlock, ToolUseBlock
from agentscope_rt.model import ChatResponse
from agentscope_rt.model._ollama_model import OllamaChatModel

from ._wire_servers import Reply, WireServer, ndjson, ollama_chunk
from .conftest import FAST, TERSE_CHAT
from .conftest import collect_closed as collect

MESSAGES = TERSE_CHAT
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}},
    },
]


def model(server: WireServer, stream: bool = False, **kwargs: Any) -> OllamaChatModel:
    return OllamaChatModel(
        "qwen3:0.6b", stream=stream, host=server.url, retry_config=FAST, **kwargs
    )


def call(name: str, arguments: Any) -> dict[str, Any]:
    return {"function": {"name": name, "arguments": arguments}}


async def test_text_reply_request_shape_and_usage(server: WireServer) -> None:
    server.add(Reply(body=ollama_chunk("Sunny.", done=True, prompt_eval_count=21, eval_count=3)))
    m = model(server, options={"temperature": 0}, enable_thinking=False)
    response = await m(MESSAGES, temperature_hint=1)
    assert isinstance(response, ChatResponse)
    assert response.content == [TextBlock("Sunny.")]
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (21, 3)
    assert response.usage.time >= 0
    request = server.requests[0]
    assert request.path == "/api/chat"
    assert request.body["model"] == "qwen3:0.6b"
    assert request.body["messages"] == MESSAGES
    assert request.body["stream"] is False
    assert request.body["options"] == {"temperature": 0}
    assert request.body["think"] is False
    assert request.body["temperature_hint"] == 1


async def test_several_tool_calls_and_thinking(server: WireServer) -> None:
    server.add(
        Reply(
            body=ollama_chunk(
                "",
                thinking="Two cities, two calls.",
                tool_calls=[
                    call("get_weather", {"city": "Paris"}),
                    call("get_weather", {"city": "Oslo"}),
                ],
                done=True,
            )
        )
    )
    response = await model(server)(MESSAGES, tools=TOOLS)
    assert isinstance(response, ChatResponse)
    assert response.content[0] == ThinkingBlock("Two cities, two calls.")
    calls = response.tool_calls
    assert [(c.name, c.input) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Oslo"}),
    ]
    assert len({c.id for c in calls}) == 2
    assert server.requests[0].body["tools"] == TOOLS


async def test_tool_choice_mapping(server: WireServer) -> None:
    for _ in range(2):
        server.add(Reply(body=ollama_chunk("ok", done=True)))
    m = model(server)
    await m(MESSAGES, tools=TOOLS, tool_choice="none")
    await m(MESSAGES, tools=TOOLS, tool_choice="get_time")
    assert "tools" not in server.requests[0].body
    assert [t["function"]["name"] for t in server.requests[1].body["tools"]] == ["get_time"]
    with pytest.raises(ValueError, match="get_date"):
        await m(MESSAGES, tools=TOOLS, tool_choice="get_date")


async def test_malformed_tool_arguments_become_raw_input(server: WireServer) -> None:
    server.add(
        Reply(body=ollama_chunk(tool_calls=[call("get_weather", '{"city": "Par')], done=True))
    )
    response = await model(server)(MESSAGES, tools=TOOLS)
    assert isinstance(response, ChatResponse)
    (block,) = response.tool_calls
    assert isinstance(block, ToolUseBlock)
    assert block.input == {}
    assert block.raw_input == '{"city": "Par'


async def test_structured_output_sends_format_and_validates(server: WireServer) -> None:
    class City(pydantic.BaseModel):
        name: str
        population: int

    server.add(Reply(body=ollama_chunk('{"name": "Oslo", "population": "700000"}', done=True)))
    server.add(Reply(body=ollama_chunk('{"name": "Oslo"}', done=True)))
    m = model(server)
    response = await m(MESSAGES, structured_model=City)
    assert isinstance(response, ChatResponse)
    assert response.metadata == {"name": "Oslo", "population": 700000}
    assert server.requests[0].body["format"]["properties"]["population"]["type"] == "integer"
    with pytest.raises(ModelResponseError, match="population"):
        await m(MESSAGES, structured_model=City)


async def test_stream_is_cumulative_with_usage_on_last(server: WireServer) -> None:
    server.add(
        Reply(
            content_type="application/x-ndjson",
            events=ndjson(
                ollama_chunk("", thinking="Hm"),
                ollama_chunk("", thinking="m."),
                ollama_chunk("Hel"),
                ollama_chunk("lo", tool_calls=[call("get_time", {})]),
                ollama_chunk("", done=True, prompt_eval_count=9, eval_count=4),
            ),
        )
    )
    chunks = await collect(await model(server, stream=True)(MESSAGES, tools=TOOLS))
    assert server.requests[0].body["stream"] is True
    assert [c.is_last for c in chunks] == [False, False, False, False, True]
    assert len({c.id for c in chunks}) == 1
    assert chunks[2].get_text() == "Hel"
    last = chunks[-1]
    assert last.content[0] == ThinkingBlock("Hmm.")
    assert last.get_text() == "Hello"
    assert [c.name for c in last.tool_calls] == ["get_time"]
    assert last.usage is not None and (last.usage.input_tokens, last.usage.output_tokens) == (9, 4)


async def test_429_then_success_honours_retry_after(server: WireServer) -> None:
    server.add(
        Reply(429, {"error": "too many requests"}, headers={"retry-after": "0"}),
        Reply(body=ollama_chunk("ok", done=True)),
    )
    response = await model(server)(MESSAGES)
    assert isinstance(response, ChatResponse)
    assert response.get_text() == "ok"
    assert len(server.requests) == 2


async def test_stream_429_then_success(server: WireServer) -> None:
    server.add(
        Reply(429, {"error": "slow down"}),
        Reply(content_type="application/x-ndjson", events=ndjson(ollama_chunk("ok", done=True))),
    )
    chunks = await collect(await model(server, stream=True)(MESSAGES))
    assert chunks[-1].get_text() == "ok"
    assert len(server.requests) == 2


async def test_client_error_is_not_retried(server: WireServer) -> None:
    server.add(Reply(404, {"error": "model 'nope' not found"}))
    with pytest.raises(ModelAPIError, match="not found") as info:
        await model(server)(MESSAGES)
    assert info.value.status_code == 404
    assert len(server.requests) == 1


async def test_error_line_inside_stream(server: WireServer) -> None:
    server.add(
        Reply(
            content_type="application/x-ndjson",
            events=ndjson(ollama_chunk("par"), {"error": "out of memory"}),
        )
    )
    with pytest.raises(ModelAPIError, match="out of memory"):
        await collect(await model(server, stream=True)(MESSAGES))
