"""OpenAIResponseModel against a local server speaking the Responses API's JSON and SSE.

The server (``_wire_servers_responses``) checks each request body as the API does and answers
a malformed one with the API's 400, so every test here also shows that the model (and, in the
round trips, the Responses formatters) send what the API accepts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import pydantic
import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.exception import ModelAPIError, ModelResponseError
from agentscope_rt.formatter import OpenAIResponseChatFormatter
from agentscope_rt.message import Msg, TextBlock, ThinkingBlock, ToolUseBlock
from agentscope_rt.model import ChatResponse, OpenAIResponseModel, RetryConfig
from agentscope_rt.tool import Toolkit, ToolResponse

from ._wire_servers import Reply, sse
from ._wire_servers_responses import (
    Call,
    Message,
    Reasoning,
    ResponsesServer,
    reply_events,
    reply_json,
    response_events,
)
from .conftest import WEATHER_TOOL, collect, sdk_model

# Every SDK async generator must be closed explicitly: under trio one left to the garbage
# collector is reported as a ResourceWarning, which these tests turn into a failure.
pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")

SECRET = "sk-test-secret-0123456789"
NO_RETRY = RetryConfig(max_retries=0)
INPUT = [
    {"role": "system", "content": [{"type": "input_text", "text": "You are terse."}]},
    {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris and Oslo?"}]},
]
TOOLS = [
    WEATHER_TOOL,
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Local time of a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    },
]


@pytest.fixture
def server() -> Iterator[ResponsesServer]:
    with ResponsesServer() as srv:
        yield srv


def response_model(
    server: ResponsesServer, stream: bool, **kwargs: Any
) -> AbstractAsyncContextManager[OpenAIResponseModel]:
    return sdk_model(OpenAIResponseModel, "o4-test", SECRET, server.url + "/v1", stream, **kwargs)


async def final_of(result: ChatResponse | Any) -> ChatResponse:
    if isinstance(result, ChatResponse):
        return result
    chunks = await collect(result)
    assert chunks[-1].is_last
    return chunks[-1]


# -- text and request shape -----------------------------------------------------------------


async def test_text_response_with_usage_and_request_shape(server: ResponsesServer) -> None:
    server.add(reply_json([Message(["Sunny."])], usage=(11, 2), id="resp_abc"))
    async with response_model(
        server, False, generate_kwargs={"temperature": 0}, reasoning_effort="low"
    ) as model:
        response = await model(INPUT, tools=TOOLS, tool_choice="get_weather", top_p=0.5)
    assert isinstance(response, ChatResponse)
    assert response.id == "resp_abc"
    assert response.content == [TextBlock("Sunny.")]
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 2)
    assert server.rejected == []
    request = server.requests[0]
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    body = request.body
    assert body["model"] == "o4-test"
    assert body["input"] == INPUT
    # Tools in the Responses API's flat form, the forced tool as {"type", "name"}.
    assert body["tools"] == [{"type": "function", **t["function"]} for t in TOOLS]
    assert body["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert body["reasoning"] == {"effort": "low"}
    assert (body["temperature"], body["top_p"]) == (0, 0.5)
    assert "stream" not in body


@pytest.mark.parametrize("choice", ["auto", "none", "required"])
async def test_tool_choice_modes_pass_through(server: ResponsesServer, choice: str) -> None:
    server.add(reply_json([Message(["ok"])]))
    async with response_model(server, False) as model:
        await model(INPUT, tools=TOOLS, tool_choice=choice)
    assert server.requests[0].body["tool_choice"] == choice


async def test_tool_choice_list_becomes_allowed_tools(server: ResponsesServer) -> None:
    server.add(reply_json([Message(["ok"])]))
    flat_tools = [{"type": "function", **t["function"]} for t in TOOLS]
    async with response_model(server, False) as model:
        # Tools already in the flat form are accepted as they are.
        await model(INPUT, tools=flat_tools, tool_choice=["get_time"])
    body = server.requests[0].body
    assert body["tools"] == flat_tools
    assert body["tool_choice"] == {
        "type": "allowed_tools",
        "mode": "auto",
        "tools": [{"type": "function", "name": "get_time"}],
    }


@pytest.mark.parametrize(
    ("choice", "error", "match"),
    [
        ("get_date", ValueError, "get_date"),
        (["get_time", "get_date"], ValueError, "get_date"),
        ([], ValueError, "at least one"),
        ([1], TypeError, "tool names"),
    ],
)
async def test_bad_tool_choice_is_rejected_before_sending(
    server: ResponsesServer, choice: Any, error: type[Exception], match: str
) -> None:
    async with response_model(server, False) as model:
        with pytest.raises(error, match=match):
            await model(INPUT, tools=TOOLS, tool_choice=choice)
    assert server.requests == []


async def test_malformed_input_items_are_rejected_before_sending(
    server: ResponsesServer,
) -> None:
    async with response_model(server, False) as model:
        with pytest.raises(ValueError, match=r"messages\[1\].*'role' or 'type'"):
            await model([INPUT[1], {"content": "neither role nor type"}])
        with pytest.raises(TypeError, match="list"):
            await model("hello")  # type: ignore[arg-type]
    assert server.requests == []


# -- tool calls and reasoning ---------------------------------------------------------------


async def test_reasoning_and_several_tool_calls_in_output_order(server: ResponsesServer) -> None:
    server.add(
        reply_json(
            [
                Reasoning([["Two cities,"], ["two calls."]]),
                Call("call_1", "get_weather", ['{"city": "Paris"}'], id="fc_1"),
                Call("call_2", "get_weather", ['{"city": "Oslo"}'], id="fc_2"),
            ]
        )
    )
    async with response_model(server, False) as model:
        response = await model(INPUT, tools=TOOLS)
    assert isinstance(response, ChatResponse)
    # The ToolUseBlock id is the call_id a function_call_output answers, not the item id.
    assert response.content == [
        ThinkingBlock("Two cities,\n\ntwo calls."),
        ToolUseBlock("call_1", "get_weather", {"city": "Paris"}),
        ToolUseBlock("call_2", "get_weather", {"city": "Oslo"}),
    ]


async def test_malformed_tool_arguments_become_raw_input(server: ResponsesServer) -> None:
    server.add(reply_json([Call("c1", "get_weather", ['{"city": "Par'])]))
    async with response_model(server, False) as model:
        response = await model(INPUT, tools=TOOLS)
    assert isinstance(response, ChatResponse)
    assert response.content == [ToolUseBlock("c1", "get_weather", {}, '{"city": "Par')]


async def test_reasoning_text_is_thinking_when_there_is_no_summary(
    server: ResponsesServer,
) -> None:
    # Servers running open models send the reasoning itself (reasoning_text), not a summary.
    item = Reasoning([], content=[["Let me ", "think."]])
    server.add(reply_json([item, Message(["Done."])]), reply_events([item, Message(["Done."])]))
    async with response_model(server, False) as model:
        complete = await model(INPUT)
    async with response_model(server, True) as model:
        streamed = await final_of(await model(INPUT))
    expected = [ThinkingBlock("Let me think."), TextBlock("Done.")]
    assert isinstance(complete, ChatResponse)
    assert complete.content == expected
    assert streamed.content == expected


# -- streaming ------------------------------------------------------------------------------


async def test_streamed_text_is_cumulative_with_one_id_and_final_usage(
    server: ResponsesServer,
) -> None:
    server.add(reply_events([Message(["Hel", "lo", ", world"])], usage=(9, 4), id="resp_s9"))
    async with response_model(server, True) as model:
        chunks = await collect(await model(INPUT))
    texts = [c.get_text() for c in chunks]
    assert texts[:3] == ["Hel", "Hello", "Hello, world"]
    assert texts[-1] == "Hello, world"
    assert {c.id for c in chunks} == {"resp_s9"}
    assert [c.is_last for c in chunks] == [False] * (len(chunks) - 1) + [True]
    last = chunks[-1]
    assert last.usage is not None
    assert (last.usage.input_tokens, last.usage.output_tokens) == (9, 4)
    assert last.usage.time > 0
    assert server.requests[0].body["stream"] is True
    assert server.rejected == []


async def test_streamed_reasoning_and_tool_arguments(server: ResponsesServer) -> None:
    server.add(
        reply_events(
            [
                Reasoning([["Two ", "cities"], ["two calls"]]),
                Call("call_1", "get_weather", ['{"ci', 'ty": "Par', 'is"}'], id="fc_1"),
                Call("call_2", "get_time", ['{"city":', ' "Oslo"}'], id="fc_2"),
            ],
            usage=(20, 12),
        )
    )
    async with response_model(server, True, reasoning_summary="auto") as model:
        chunks = await collect(await model(INPUT, tools=TOOLS))
    thinking = [c.content[0].thinking for c in chunks if c.content]  # type: ignore[union-attr]
    assert thinking[:2] == ["Two ", "Two cities"]
    # Partial arguments are readable while they stream in.
    partial = [c.tool_calls[0].input for c in chunks if c.tool_calls and not c.is_last]
    assert {"city": "Par"} in partial
    assert partial[0] == {}  # announced by response.output_item.added, before any argument
    last = chunks[-1]
    assert last.content == [
        ThinkingBlock("Two cities\n\ntwo calls"),
        ToolUseBlock("call_1", "get_weather", {"city": "Paris"}),
        ToolUseBlock("call_2", "get_time", {"city": "Oslo"}),
    ]
    assert last.usage is not None and last.usage.output_tokens == 12
    assert server.requests[0].body["reasoning"] == {"summary": "auto"}


async def test_stream_without_tool_parsing_keeps_partial_inputs_empty(
    server: ResponsesServer,
) -> None:
    server.add(reply_events([Call("call_1", "get_weather", ['{"city":', ' "Rome"}'])]))
    async with response_model(server, True, stream_tool_parsing=False) as model:
        chunks = await collect(await model(INPUT, tools=TOOLS))
    assert all(c.tool_calls[0].input == {} for c in chunks[:-1])
    assert chunks[-1].tool_calls == [ToolUseBlock("call_1", "get_weather", {"city": "Rome"})]


# -- encrypted reasoning round trip ---------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_encrypted_reasoning_is_kept_and_sent_back(
    server: ResponsesServer, stream: bool
) -> None:
    first = [
        Reasoning([["Need the weather."]], id="rs_9", encrypted_content="gAAAA-opaque"),
        Call("call_7", "get_weather", ['{"city": "Lima"}'], id="fc_7"),
    ]
    server.add(
        reply_events(first) if stream else reply_json(first),
        reply_json([Message(["Warm in Lima."])]),
    )
    formatter = OpenAIResponseChatFormatter()
    msgs = [Msg("user", "Weather in Lima?", "user")]
    async with response_model(
        server, stream, generate_kwargs={"store": False}, reasoning_effort="high"
    ) as model:
        response = await final_of(await model(await formatter.format(msgs), tools=TOOLS))
        thinking = response.content[0]
        assert isinstance(thinking, ThinkingBlock)
        assert thinking.thinking == "Need the weather."
        assert thinking.signature is not None
        msgs.append(response.to_msg("Friday"))
        msgs.append(
            Msg(
                "system",
                [{"type": "tool_result", "id": "call_7", "name": "get_weather", "output": "25C"}],
                "system",
            )
        )
        model.stream = False
        second = await model(await formatter.format(msgs), tools=TOOLS)
    assert isinstance(second, ChatResponse) and second.get_text() == "Warm in Lima."
    assert server.rejected == []
    body = server.requests[0].body
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    replay = server.requests[1].body["input"]
    assert replay[1:] == [
        {
            "type": "reasoning",
            "id": "rs_9",
            "summary": [{"type": "summary_text", "text": "Need the weather."}],
            "encrypted_content": "gAAAA-opaque",
        },
        {
            "type": "function_call",
            "call_id": "call_7",
            "name": "get_weather",
            "arguments": '{"city": "Lima"}',
        },
        {"type": "function_call_output", "call_id": "call_7", "output": "25C"},
    ]


async def test_reasoning_without_encrypted_content_is_not_sent_back(
    server: ResponsesServer,
) -> None:
    server.add(
        reply_json([Reasoning([["Think."]], id="rs_1"), Message(["Hi."])]),
        reply_json([Message(["Again."])]),
    )
    formatter = OpenAIResponseChatFormatter()
    msgs = [Msg("user", "Hello", "user")]
    async with response_model(server, False) as model:
        response = await final_of(await model(await formatter.format(msgs)))
        assert response.content[0] == ThinkingBlock("Think.")
        msgs += [response.to_msg("Friday"), Msg("user", "Again", "user")]
        await model(await formatter.format(msgs))
    assert "include" not in server.requests[0].body
    assert [item.get("type", "message") for item in server.requests[1].body["input"]] == [
        "message",
        "message",
        "message",
    ]


# -- structured output ----------------------------------------------------------------------


class Forecast(pydantic.BaseModel):
    city: str
    temperature: float


@pytest.mark.parametrize("stream", [False, True])
async def test_structured_output_via_text_format(server: ResponsesServer, stream: bool) -> None:
    answer = '{"city": "Paris", "temperature": "21.5"}'
    items = [Message([answer[:12], answer[12:]])]
    server.add(reply_events(items) if stream else reply_json(items))
    async with response_model(server, stream) as model:
        final = await final_of(await model(INPUT, tools=TOOLS, structured_model=Forecast))
    assert final.metadata == {"city": "Paris", "temperature": 21.5}
    body = server.requests[0].body
    assert "tools" not in body and "tool_choice" not in body
    assert body["text"]["format"] == {
        "type": "json_schema",
        "name": "Forecast",
        "schema": Forecast.model_json_schema(),
        # pydantic's schema allows extra properties, which strict mode rejects.
        "strict": False,
    }


async def test_strict_schema_is_sent_strict(server: ResponsesServer) -> None:
    schema = {
        "title": "City pick",
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    server.add(reply_json([Message(['{"city": "Oslo"}'])]))
    async with response_model(
        server, False, generate_kwargs={"text": {"verbosity": "low"}}
    ) as model:
        response = await model(INPUT, structured_model=schema)
    assert isinstance(response, ChatResponse) and response.metadata == {"city": "Oslo"}
    text = server.requests[0].body["text"]
    assert text["verbosity"] == "low"
    assert (text["format"]["name"], text["format"]["strict"]) == ("City_pick", True)


async def test_invalid_structured_output_names_the_field(server: ResponsesServer) -> None:
    server.add(reply_json([Message(['{"city": 1}'])]))
    async with response_model(server, False) as model:
        with pytest.raises(ModelResponseError, match="city"):
            await model(INPUT, structured_model=Forecast)


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_429_then_success_is_retried(server: ResponsesServer, stream: bool) -> None:
    server.add(
        Reply(
            429,
            {"error": {"message": "Rate limit reached", "type": "requests"}},
            headers={"retry-after-ms": "10"},
        ),
        reply_events([Message(["late"])]) if stream else reply_json([Message(["late"])]),
    )
    async with response_model(server, stream) as model:
        final = await final_of(await model(INPUT))
    assert final.get_text() == "late"
    assert len(server.requests) == 2


@pytest.mark.parametrize("stream", [False, True])
async def test_400_is_a_model_error_without_the_key(server: ResponsesServer, stream: bool) -> None:
    server.add(
        Reply(
            400,
            {
                "error": {
                    "message": f"Invalid 'input[0]' sent with key {SECRET}",
                    "type": "invalid_request_error",
                    "param": "input",
                    "code": None,
                }
            },
        )
    )
    async with response_model(server, stream) as model:
        with pytest.raises(ModelAPIError) as info:
            await final_of(await model(INPUT))
        assert SECRET not in repr(model) and SECRET not in str(vars(model))
    error = info.value
    assert (error.provider, error.status_code, error.attempts) == ("openai", 400, 1)
    assert "Invalid 'input[0]'" in error.message
    assert SECRET not in str(error) and SECRET not in repr(error)


async def test_request_the_api_rejects_is_reported(server: ResponsesServer) -> None:
    # A chat-completions tool message is not a Responses input item: the server says so.
    wrong = [*INPUT, {"role": "tool", "tool_call_id": "c1", "content": "x"}]
    async with response_model(server, False) as model:
        with pytest.raises(ModelAPIError) as info:
            await model(wrong)
    assert info.value.status_code == 400
    assert "'tool'" in info.value.message
    assert server.rejected and len(server.requests) == 1


async def test_failed_event_with_server_error_is_retried(server: ResponsesServer) -> None:
    server.add(
        Reply(
            events=response_events(
                [], failure={"code": "server_error", "message": "The model had an error"}
            )
        ),
        reply_events([Message(["recovered"])]),
    )
    async with response_model(server, True) as model:
        final = await final_of(await model(INPUT))
    assert final.get_text() == "recovered"
    assert len(server.requests) == 2


async def test_error_event_that_cannot_be_cured_is_raised(server: ResponsesServer) -> None:
    error = {"type": "error", "code": "invalid_prompt", "message": "Prompt flagged"}
    server.add(Reply(events=[sse(error, event="error")]))
    async with response_model(server, True) as model:
        with pytest.raises(ModelAPIError) as info:
            await final_of(await model(INPUT))
    assert info.value.attempts == 1
    assert info.value.message == "invalid_prompt: Prompt flagged"


def test_key_comes_from_the_environment_and_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    model = OpenAIResponseModel("o4-test")
    assert SECRET not in repr(model)
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIResponseModel("o4-test")
    # A local server needs no key.
    OpenAIResponseModel("o4-test", client_kwargs={"base_url": "http://127.0.0.1:1/v1"})


# -- a ReAct loop through the model ---------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_react_agent_calls_a_tool_through_the_responses_api(
    server: ResponsesServer, stream: bool
) -> None:
    asked: list[str] = []

    def get_weather(city: str) -> ToolResponse:
        """Get the current weather of a city.

        Args:
            city: the name of the city.
        """
        asked.append(city)
        return ToolResponse(content=[TextBlock(text=f"Sunny in {city}.")])

    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    first = [
        Reasoning([["Look it up."]], id="rs_2", encrypted_content="enc-2"),
        Call("call_w", "get_weather", ['{"city":', ' "Paris"}'], id="fc_w"),
    ]
    second = [Message(["It is sunny in Paris."])]
    if stream:
        server.add(reply_events(first), reply_events(second, usage=(30, 6)))
    else:
        server.add(reply_json(first), reply_json(second, usage=(30, 6)))
    async with response_model(server, stream, generate_kwargs={"store": False}) as model:
        agent = ReActAgent(
            name="Friday",
            sys_prompt="You are a helpful assistant.",
            model=model,
            formatter=OpenAIResponseChatFormatter(),
            toolkit=toolkit,
            max_iters=3,
        )
        agent.set_console_output_enabled(False)
        reply = await agent(Msg("user", "What is the weather in Paris?", "user"))
    assert asked == ["Paris"]
    assert reply.get_text_content() == "It is sunny in Paris."
    assert server.rejected == []
    first_body, second_body = (r.body for r in server.requests)
    assert [t["name"] for t in first_body["tools"]] == ["get_weather"]
    assert first_body["input"][0] == {
        "role": "system",
        "content": [{"type": "input_text", "text": "You are a helpful assistant."}],
    }
    kinds = [item.get("type") or item["role"] for item in second_body["input"]]
    assert kinds == ["system", "user", "reasoning", "function_call", "function_call_output"]
    output = second_body["input"][-1]
    assert output["call_id"] == "call_w" and "Sunny in Paris." in output["output"]
    assert json.loads(second_body["input"][3]["arguments"]) == {"city": "Paris"}


# -- answers that are not what they claim ---------------------------------------------------


async def test_a_stream_cut_before_response_completed_is_a_model_api_error(
    server: ResponsesServer,
) -> None:
    # The connection closed cleanly in the middle of a call's arguments: no answer is made
    # of the half that came, and before the first chunk the cut is retried.
    events = response_events([Call("c1", "get_weather", ['{"city": ', '"Paris"}'])])
    mid_arguments = [e for e in events if "response.completed" not in e][:-3]
    server.add(Reply(events=mid_arguments))
    async with response_model(server, stream=True) as model:
        with pytest.raises(ModelAPIError) as info:
            await collect(await model(INPUT, tools=TOOLS))
    assert info.value.status_code == 200
    assert "the stream was cut" in info.value.message
    # Cut before any chunk: retried as a server fault, and the next answer is taken.
    server.add(Reply(events=events[:2]), reply_events([Message(["Sunny."])]))
    async with response_model(server, stream=True) as model:
        final = await final_of(await model(INPUT))
    assert final.content == [TextBlock("Sunny.")]
    assert len(server.requests) == 3


@pytest.mark.parametrize("body", [{}, {"id": "resp_1"}, {"output": "none"}])
async def test_a_200_answer_that_is_not_a_response_is_a_model_api_error(
    server: ResponsesServer, body: Any
) -> None:
    server.add(Reply(body=body))
    async with response_model(server, stream=False, retry_config=NO_RETRY) as model:
        with pytest.raises(ModelAPIError) as info:
            await model(INPUT)
    assert info.value.status_code == 200
    assert "not a response" in info.value.message
