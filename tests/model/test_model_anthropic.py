"""AnthropicChatModel against a local server speaking the messages API, SSE events included."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

import attrs
import pytest

from agentscope_rt.message import TextBlock, ThinkingBlock, ToolUseBlock
from agentscope_rt.model import AnthropicChatModel, ChatResponse, RetryConfig
from agentscope_rt.model._anthropic_model import _without_unsigned_thinking

from .._timing import takes_at_least
from ._wire_servers import (
    Reply,
    WireServer,
    anthropic_event,
    anthropic_message,
    anthropic_stream,
)
from .conftest import WEATHER_TOOL, collect, sdk_model

# Every SDK async generator must be closed explicitly: under trio one left to the garbage
# collector is reported as a ResourceWarning, which these tests turn into a failure.
pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")

SECRET = "sk-ant-test-secret-987654"
MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Oslo?"}]},
]
TOOLS = [WEATHER_TOOL]


def anthropic_model(
    server: WireServer, stream: bool, **kwargs: Any
) -> AbstractAsyncContextManager[AnthropicChatModel]:
    return sdk_model(AnthropicChatModel, "claude-test", SECRET, server.url, stream, **kwargs)


async def test_request_shape_system_tools_and_thinking(server: WireServer) -> None:
    server.add(Reply(body=anthropic_message([{"type": "text", "text": "Sunny."}], id="msg_a")))
    thinking = {"type": "enabled", "budget_tokens": 1024}
    async with anthropic_model(server, False, max_tokens=512, thinking=thinking) as model:
        response = await model(MESSAGES, tools=TOOLS, tool_choice="required", temperature=1)
    assert isinstance(response, ChatResponse)
    assert response.id == "msg_a"
    assert response.content == [TextBlock("Sunny.")]
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 6)
    request = server.requests[0]
    assert request.path == "/v1/messages"
    # Depending on the SDK release the key travels as x-api-key or as a bearer token.
    assert SECRET in (
        request.headers.get("x-api-key"),
        request.headers.get("authorization", "")[7:],
    )
    body = request.body
    assert body["system"] == "You are terse."
    assert body["messages"] == MESSAGES[1:]
    assert body["max_tokens"] == 512
    assert body["thinking"] == thinking
    assert body["temperature"] == 1
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Weather of a city.",
            "input_schema": TOOLS[0]["function"]["parameters"],
        }
    ]
    assert body["tool_choice"] == {"type": "any"}


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("get_weather", {"type": "tool", "name": "get_weather"}),
    ],
)
async def test_tool_choice_mapping(
    server: WireServer, choice: str, expected: dict[str, str]
) -> None:
    server.add(Reply(body=anthropic_message([{"type": "text", "text": "ok"}])))
    async with anthropic_model(server, False) as model:
        await model(MESSAGES, tools=TOOLS, tool_choice=choice)
    assert server.requests[0].body["tool_choice"] == expected


async def test_thinking_and_several_tool_calls(server: WireServer) -> None:
    content = [
        {"type": "thinking", "thinking": "Two cities.", "signature": "sig"},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "tu_1", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "tu_2", "name": "get_weather", "input": {"city": "Oslo"}},
    ]
    server.add(Reply(body=anthropic_message(content)))
    async with anthropic_model(server, False) as model:
        response = await model(MESSAGES, tools=TOOLS)
    assert isinstance(response, ChatResponse)
    assert response.content == [
        ThinkingBlock("Two cities.", signature="sig"),
        TextBlock("Checking."),
        ToolUseBlock("tu_1", "get_weather", {"city": "Paris"}),
        ToolUseBlock("tu_2", "get_weather", {"city": "Oslo"}),
    ]


async def test_stream_thinking_text_and_streamed_tool_arguments(server: WireServer) -> None:
    events = anthropic_stream(
        [
            ("thinking", ["Two ", "cities."]),
            ("text", ["Check", "ing."]),
            ("tool_use", ['{"ci', 'ty": "Par', 'is"}'], {"id": "tu_1", "name": "get_weather"}),
            ("tool_use", ['{"city": "Oslo"}'], {"id": "tu_2", "name": "get_weather"}),
        ],
        usage=(30, 17),
    )
    server.add(Reply(events=events))
    async with anthropic_model(server, True) as model:
        chunks = await collect(await model(MESSAGES, tools=TOOLS))
    assert {c.id for c in chunks} == {"msg_s1"}
    assert [c.is_last for c in chunks] == [False] * (len(chunks) - 1) + [True]
    thinking_seen = [c.content[0].thinking for c in chunks if c.content]  # type: ignore[union-attr]
    assert thinking_seen[:2] == ["Two ", "Two cities."]
    partial = [c.tool_calls[0].input for c in chunks if c.tool_calls and not c.is_last]
    assert {"city": "Par"} in partial
    last = chunks[-1]
    # The signature (sent after the thinking text) must reach the final chunk unchanged, so
    # that it can be sent back with the block in the next turn.
    assert last.content == [
        ThinkingBlock("Two cities.", signature="sig-1"),
        TextBlock("Checking."),
        ToolUseBlock("tu_1", "get_weather", {"city": "Paris"}),
        ToolUseBlock("tu_2", "get_weather", {"city": "Oslo"}),
    ]
    assert last.usage is not None
    assert (last.usage.input_tokens, last.usage.output_tokens) == (30, 17)
    assert server.requests[0].body["stream"] is True


async def test_streamed_malformed_tool_json_becomes_raw_input(server: WireServer) -> None:
    events = anthropic_stream(
        [("tool_use", ['{"city": ', "Paris}"], {"id": "tu_1", "name": "get_weather"})]
    )
    server.add(Reply(events=events))
    async with anthropic_model(server, True) as model:
        chunks = await collect(await model(MESSAGES, tools=TOOLS))
    assert chunks[-1].tool_calls == [ToolUseBlock("tu_1", "get_weather", {}, '{"city": Paris}')]


@pytest.mark.parametrize("stream", [False, True])
async def test_429_then_success_honours_retry_after(server: WireServer, stream: bool) -> None:
    error = {"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down"}}
    server.add(
        Reply(429, error, headers={"retry-after": "0.2"}),
        Reply(events=anthropic_stream([("text", ["late"])]))
        if stream
        else Reply(body=anthropic_message([{"type": "text", "text": "late"}])),
    )
    config = RetryConfig(max_retries=2, initial_delay=0.001, max_delay=2.0, jitter=0.0)
    # At least the 0.2 s the server asked for.
    async with anthropic_model(server, stream, retry_config=config) as model, takes_at_least(0.2):
        result = await model(MESSAGES)
        final = result if isinstance(result, ChatResponse) else (await collect(result))[-1]
    assert final.get_text() == "late"
    assert len(server.requests) == 2


async def test_overload_error_event_before_output_is_retried(server: WireServer) -> None:
    overloaded = anthropic_event(
        "error", error={"type": "overloaded_error", "message": "Overloaded"}
    )
    server.add(
        Reply(events=[overloaded]),
        Reply(events=anthropic_stream([("text", ["fine"])])),
    )
    async with anthropic_model(server, True) as model:
        chunks = await collect(await model(MESSAGES))
    assert chunks[-1].get_text() == "fine"
    assert len(server.requests) == 2


@attrs.define
class Forecast:
    city: str
    temperature: float


@pytest.mark.parametrize("stream", [False, True])
async def test_structured_output_with_attrs_class(server: WireServer, stream: bool) -> None:
    if stream:
        server.add(
            Reply(
                events=anthropic_stream(
                    [
                        (
                            "tool_use",
                            ['{"city": "Oslo", ', '"temperature": 4}'],
                            {"id": "tu_s", "name": "generate_structured_output"},
                        )
                    ]
                )
            )
        )
    else:
        block = {
            "type": "tool_use",
            "id": "tu_s",
            "name": "generate_structured_output",
            "input": {"city": "Oslo", "temperature": 4},
        }
        server.add(Reply(body=anthropic_message([block])))
    async with anthropic_model(server, stream) as model:
        result = await model(MESSAGES, structured_model=Forecast)
        final = result if isinstance(result, ChatResponse) else (await collect(result))[-1]
    assert final.metadata == {"city": "Oslo", "temperature": 4.0}
    body = server.requests[0].body
    assert body["tool_choice"] == {"type": "tool", "name": "generate_structured_output"}
    assert body["tools"][0]["input_schema"]["required"] == ["city", "temperature"]


def test_key_is_absent_from_repr_and_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    model = AnthropicChatModel("claude-test")
    assert SECRET not in repr(model)
    assert SECRET not in str(vars(model))
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        AnthropicChatModel("claude-test")


def test_bad_tool_schema_is_rejected() -> None:
    model = AnthropicChatModel("claude-test", api_key=SECRET)
    with pytest.raises(ValueError, match="function"):
        model._request_kwargs(MESSAGES, [{"name_only": "x"}], None, None, {})


def test_unsigned_thinking_is_left_out_copy_on_write() -> None:
    signed = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "a", "signature": "s1"},
            {"type": "text", "text": "hi"},
        ],
    }
    plain: list[dict[str, Any]] = [{"role": "user", "content": "hello"}, signed]
    assert _without_unsigned_thinking(plain) is plain
    mixed = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "b"},
            {"type": "thinking", "thinking": "c", "signature": ""},
            {"type": "text", "text": "ok"},
        ],
    }
    alone = {"role": "assistant", "content": [{"type": "thinking", "thinking": "d"}]}
    messages: list[dict[str, Any]] = [plain[0], alone, signed, mixed]
    result = _without_unsigned_thinking(messages)
    assert result == [plain[0], signed, {"role": "assistant", "content": [mixed["content"][2]]}]
    # Untouched messages are shared; the caller's list and messages are unchanged.
    assert result[0] is plain[0] and result[1] is signed
    assert len(messages) == 4 and len(mixed["content"]) == 3
