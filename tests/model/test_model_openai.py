"""OpenAIChatModel against a local server speaking chat.completions JSON and SSE."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import pydantic
import pytest

from agentscope_rt.exception import ModelAPIError, ModelResponseError
from agentscope_rt.message import TextBlock, ThinkingBlock, ToolUseBlock
from agentscope_rt.model import ChatResponse, OpenAIChatModel, RetryConfig

from .._timing import takes_at_least
from ._wire_servers import (
    Reply,
    WireServer,
    free_port_url,
    openai_chunk,
    openai_completion,
    openai_text_stream,
    openai_tool_delta,
    sse,
)
from .conftest import FAST, TERSE_CHAT, WEATHER_TOOL, collect, sdk_model

# Every SDK async generator must be closed explicitly: under trio one left to the garbage
# collector is reported as a ResourceWarning, which these tests turn into a failure.
pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")

SECRET = "sk-test-secret-0123456789"
MESSAGES = TERSE_CHAT
TOOLS = [WEATHER_TOOL]


def openai_model(
    server: WireServer, stream: bool, **kwargs: Any
) -> AbstractAsyncContextManager[OpenAIChatModel]:
    return sdk_model(OpenAIChatModel, "gpt-test", SECRET, server.url + "/v1", stream, **kwargs)


async def test_text_response_with_usage_and_request_shape(server: WireServer) -> None:
    server.add(Reply(body=openai_completion("Sunny.", usage=(11, 2), id="chatcmpl-abc")))
    async with openai_model(server, False, generate_kwargs={"temperature": 0}) as model:
        response = await model(MESSAGES, tools=TOOLS, tool_choice="get_weather", seed=7)
    assert isinstance(response, ChatResponse)
    assert response.id == "chatcmpl-abc"
    assert response.content == [TextBlock("Sunny.")]
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 2)
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.body["model"] == "gpt-test"
    assert request.body["messages"] == MESSAGES
    assert request.body["tools"] == TOOLS
    assert request.body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert request.body["temperature"] == 0
    assert request.body["seed"] == 7
    assert "stream" not in request.body


@pytest.mark.parametrize("choice", ["auto", "none", "required"])
async def test_tool_choice_modes_pass_through(server: WireServer, choice: str) -> None:
    server.add(Reply(body=openai_completion("ok")))
    async with openai_model(server, False) as model:
        await model(MESSAGES, tools=TOOLS, tool_choice=choice)
    assert server.requests[0].body["tool_choice"] == choice


async def test_unknown_tool_choice_is_rejected_before_sending(server: WireServer) -> None:
    async with openai_model(server, False) as model:
        with pytest.raises(ValueError, match="get_time"):
            await model(MESSAGES, tools=TOOLS, tool_choice="get_time")
    assert server.requests == []


async def test_several_tool_calls_and_reasoning(server: WireServer) -> None:
    server.add(
        Reply(
            body=openai_completion(
                None,
                tool_calls=[
                    ("call_1", "get_weather", '{"city": "Paris"}'),
                    ("call_2", "get_weather", '{"city": "Oslo"}'),
                ],
                reasoning="Two cities, two calls.",
            )
        )
    )
    async with openai_model(server, False) as model:
        response = await model(MESSAGES, tools=TOOLS)
    assert isinstance(response, ChatResponse)
    assert response.content == [
        ThinkingBlock("Two cities, two calls."),
        ToolUseBlock("call_1", "get_weather", {"city": "Paris"}),
        ToolUseBlock("call_2", "get_weather", {"city": "Oslo"}),
    ]


async def test_malformed_tool_arguments_become_raw_input(server: WireServer) -> None:
    server.add(
        Reply(body=openai_completion(None, tool_calls=[("c1", "get_weather", '{"city": "Par')]))
    )
    async with openai_model(server, False) as model:
        response = await model(MESSAGES, tools=TOOLS)
    assert isinstance(response, ChatResponse)
    assert response.content == [ToolUseBlock("c1", "get_weather", {}, '{"city": "Par')]


async def test_streamed_text_is_cumulative_with_one_id_and_final_usage(
    server: WireServer,
) -> None:
    server.add(Reply(events=openai_text_stream(["Hel", "lo", ", world"], usage=(9, 4))))
    async with openai_model(server, True) as model:
        chunks = await collect(await model(MESSAGES))
    texts = [c.get_text() for c in chunks]
    assert texts[:3] == ["Hel", "Hello", "Hello, world"]
    assert texts[-1] == "Hello, world"
    assert {c.id for c in chunks} == {"chatcmpl-s1"}
    assert [c.is_last for c in chunks] == [False] * (len(chunks) - 1) + [True]
    last = chunks[-1]
    assert last.usage is not None
    assert (last.usage.input_tokens, last.usage.output_tokens) == (9, 4)
    assert last.usage.time > 0
    body = server.requests[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


async def test_streamed_tool_arguments_assembled_for_several_calls(server: WireServer) -> None:
    events = [
        openai_chunk({"role": "assistant", "content": None, "reasoning_content": "Think"}),
        openai_tool_delta(0, "", id="call_1", name="get_weather"),
        openai_tool_delta(0, '{"ci'),
        openai_tool_delta(0, 'ty": "Par'),
        openai_tool_delta(0, 'is"}'),
        openai_tool_delta(1, '{"city":', id="call_2", name="get_weather"),
        openai_tool_delta(1, ' "Oslo"}'),
        openai_chunk({}, finish_reason="tool_calls"),
        openai_chunk(None, usage=(20, 12)),
        sse("[DONE]"),
    ]
    server.add(Reply(events=events))
    async with openai_model(server, True) as model:
        chunks = await collect(await model(MESSAGES, tools=TOOLS))
    # Partial arguments are readable while they stream in.
    partial_inputs = [c.tool_calls[0].input for c in chunks if c.tool_calls and not c.is_last]
    assert {"city": "Par"} in partial_inputs
    last = chunks[-1]
    assert last.is_last
    assert last.content == [
        ThinkingBlock("Think"),
        ToolUseBlock("call_1", "get_weather", {"city": "Paris"}),
        ToolUseBlock("call_2", "get_weather", {"city": "Oslo"}),
    ]
    assert last.usage is not None and last.usage.output_tokens == 12


async def test_streamed_malformed_tool_arguments_become_raw_input(server: WireServer) -> None:
    events = [
        openai_tool_delta(0, '{"city": ', id="call_1", name="get_weather"),
        openai_tool_delta(0, "Paris}"),
        openai_chunk(None, usage=(1, 1)),
        sse("[DONE]"),
    ]
    server.add(Reply(events=events))
    async with openai_model(server, True) as model:
        chunks = await collect(await model(MESSAGES, tools=TOOLS))
    assert chunks[-1].tool_calls == [ToolUseBlock("call_1", "get_weather", {}, '{"city": Paris}')]


@pytest.mark.parametrize("stream", [False, True])
async def test_429_then_success_honours_retry_after(server: WireServer, stream: bool) -> None:
    server.add(
        Reply(
            429,
            {"error": {"message": "Rate limit reached", "type": "requests"}},
            headers={"retry-after": "0.2"},
        ),
        Reply(body=openai_completion("late"))
        if not stream
        else Reply(events=openai_text_stream(["late"])),
    )
    config = RetryConfig(max_retries=2, initial_delay=0.001, max_delay=2.0, jitter=0.0)
    # At least the 0.2 s the server asked for.
    async with openai_model(server, stream, retry_config=config) as model, takes_at_least(0.2):
        result = await model(MESSAGES)
        final = result if isinstance(result, ChatResponse) else (await collect(result))[-1]
    assert final.get_text() == "late"
    assert len(server.requests) == 2


async def test_auth_error_is_not_retried_and_hides_the_key(server: WireServer) -> None:
    server.add(Reply(401, {"error": {"message": f"Incorrect API key provided: {SECRET}"}}))
    async with openai_model(server, False) as model:
        with pytest.raises(ModelAPIError) as info:
            await model(MESSAGES)
    assert info.value.status_code == 401 and info.value.attempts == 1
    assert SECRET not in str(info.value)


async def test_connection_refused_is_retried_then_reported() -> None:
    model = OpenAIChatModel(
        "gpt-test",
        api_key=SECRET,
        stream=False,
        client_kwargs={"base_url": free_port_url()},
        retry_config=FAST,
    )
    async with model:
        with pytest.raises(ModelAPIError) as info:
            await model(MESSAGES)
    assert info.value.status_code is None and info.value.attempts == 3


async def test_an_answer_slower_than_the_read_timeout_is_retried_then_reported(
    server: WireServer,
) -> None:
    server.add(*[Reply(body=openai_completion("late"), delay=2.0) for _ in range(3)])
    async with openai_model(server, False, client_kwargs={"timeout": 0.3}) as model:
        with anyio.fail_after(60), pytest.raises(ModelAPIError) as info:
            await model(MESSAGES)
    assert info.value.status_code is None and info.value.attempts == 3
    assert "timed out" in info.value.message
    assert len(server.requests) == 3


class Forecast(pydantic.BaseModel):
    city: str
    temperature: float


@pytest.mark.parametrize("stream", [False, True])
async def test_structured_output_via_forced_tool_call(server: WireServer, stream: bool) -> None:
    arguments = '{"city": "Paris", "temperature": "21.5"}'
    if stream:
        server.add(
            Reply(
                events=[
                    openai_tool_delta(
                        0, arguments[:10], id="c1", name="generate_structured_output"
                    ),
                    openai_tool_delta(0, arguments[10:]),
                    openai_chunk(None, usage=(3, 3)),
                    sse("[DONE]"),
                ]
            )
        )
    else:
        server.add(
            Reply(body=openai_completion(None, [("c1", "generate_structured_output", arguments)]))
        )
    async with openai_model(server, stream) as model:
        result = await model(MESSAGES, tools=TOOLS, structured_model=Forecast)
        final = result if isinstance(result, ChatResponse) else (await collect(result))[-1]
    assert final.metadata == {"city": "Paris", "temperature": 21.5}
    body = server.requests[0].body
    assert [t["function"]["name"] for t in body["tools"]] == ["generate_structured_output"]
    assert body["tools"][0]["function"]["parameters"]["required"] == ["city", "temperature"]
    assert body["tool_choice"] == {
        "type": "function",
        "function": {"name": "generate_structured_output"},
    }


async def test_invalid_structured_output_names_the_field(server: WireServer) -> None:
    server.add(
        Reply(body=openai_completion(None, [("c1", "generate_structured_output", '{"city": 1}')]))
    )
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    async with openai_model(server, False) as model:
        with pytest.raises(ModelResponseError, match="city"):
            await model(MESSAGES, structured_model=schema)


def test_key_is_absent_from_repr_and_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    model = OpenAIChatModel("gpt-test")
    assert SECRET not in repr(model)
    assert SECRET not in str(vars(model))
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIChatModel("gpt-test")


async def test_malformed_messages_are_rejected(server: WireServer) -> None:
    async with openai_model(server, False) as model:
        with pytest.raises(ValueError, match=r"messages\[1\]"):
            await model([{"role": "user", "content": "x"}, {"content": "no role"}])
