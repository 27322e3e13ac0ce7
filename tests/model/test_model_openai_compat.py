"""What OpenAI-compatible servers do beyond OpenAI's own protocol, wire-tested on
OpenAIChatModel and DashScopeChatModel (which inherits the streaming and structured output):

* stream chunks without a ``delta`` or with no ``choices`` at all are skipped;
* a server that refuses a forced ``tool_choice`` (DashScope in thinking mode, HTTP 400 before
  the stream or an error event as its first event) gets the structured-output request again
  with ``tool_choice="auto"``, and the structured output still comes back.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentscope_rt.exception import ModelAPIError
from agentscope_rt.message import TextBlock
from agentscope_rt.model import ChatResponse, DashScopeChatModel, OpenAIChatModel

from ._wire_servers import (
    Reply,
    WireServer,
    openai_chunk,
    openai_completion,
    openai_tool_delta,
    sse,
)
from .conftest import FAST

pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")

SECRET = "sk-compat-secret-31337"
MESSAGES = [{"role": "user", "content": "Weather in Oslo, as data?"}]
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
}
# DashScope's answer to a forced tool_choice in thinking mode (compatible endpoint).
REFUSAL = (
    "<400> InternalError.Algo.InvalidParameter: The tool_choice parameter does not support "
    "being set to required or object in thinking mode"
)
REFUSAL_BODY = {
    "error": {
        "message": REFUSAL,
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_parameter_error",
    }
}
FORCED = {"type": "function", "function": {"name": "generate_structured_output"}}
ARGUMENTS = '{"city": "Oslo", "celsius": 3}'


@pytest.fixture(params=["openai", "dashscope"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@contextlib.asynccontextmanager
async def compatible_model(
    server: WireServer, provider: str, stream: bool
) -> AsyncIterator[OpenAIChatModel]:
    model: OpenAIChatModel
    if provider == "openai":
        model = OpenAIChatModel(
            "gpt-test",
            api_key=SECRET,
            stream=stream,
            client_kwargs={"base_url": server.url + "/v1"},
            retry_config=FAST,
        )
    else:
        model = DashScopeChatModel(
            "qwen3-plus",
            api_key=SECRET,
            stream=stream,
            base_http_api_url=server.url + "/compatible-mode/v1",
            retry_config=FAST,
        )
    async with model:
        yield model


def raw_chunk(**fields: Any) -> str:
    """A ``chat.completion.chunk`` event with exactly the given ``choices`` shape."""
    chunk = {
        "id": "chatcmpl-raw",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-test",
        **fields,
    }
    return sse(chunk)


def structured_stream() -> list[str]:
    return [
        openai_chunk({"role": "assistant", "content": ""}),
        openai_tool_delta(0, '{"city": "Os', id="call_s", name="generate_structured_output"),
        openai_tool_delta(0, 'lo", "celsius": 3}'),
        openai_chunk({}, finish_reason="tool_calls"),
        openai_chunk(None, usage=(9, 6)),
        sse("[DONE]"),
    ]


# -- chunks without a delta ----------------------------------------------------------------------


async def test_stream_skips_chunks_without_delta_or_choices(
    server: WireServer, provider: str
) -> None:
    server.add(
        Reply(
            events=[
                openai_chunk({"role": "assistant", "content": ""}),
                raw_chunk(choices=[{"index": 0, "delta": None, "finish_reason": None}]),
                openai_chunk({"content": "Cold"}),
                raw_chunk(choices=[]),
                raw_chunk(choices=None),
                raw_chunk(choices=[{"index": 0, "delta": None, "finish_reason": "stop"}]),
                openai_chunk({"content": " and clear."}),
                openai_chunk(None, usage=(4, 3)),
                sse("[DONE]"),
            ]
        )
    )
    async with compatible_model(server, provider, stream=True) as model:
        chunks = [c async for c in await model(MESSAGES)]  # type: ignore[union-attr]
    assert [c.content for c in chunks] == [
        [TextBlock("Cold")],
        [TextBlock("Cold and clear.")],
        [TextBlock("Cold and clear.")],
    ]
    assert chunks[-1].is_last
    assert chunks[-1].usage is not None and chunks[-1].usage.output_tokens == 3


# -- a refused forced tool_choice ----------------------------------------------------------------


async def test_refused_tool_choice_falls_back_to_auto(
    server: WireServer, provider: str, caplog: pytest.LogCaptureFixture
) -> None:
    completion = openai_completion(
        None, tool_calls=[("call_1", "generate_structured_output", ARGUMENTS)]
    )
    server.add(Reply(400, REFUSAL_BODY), Reply(body=completion), Reply(body=completion))
    async with compatible_model(server, provider, stream=False) as model:
        with caplog.at_level(logging.WARNING):
            response = await model(MESSAGES, structured_model=SCHEMA)
        assert isinstance(response, ChatResponse)
        assert response.metadata == {"city": "Oslo", "celsius": 3}
        assert "refused a forced tool_choice" in caplog.text
        # The model remembers: the next structured call asks with "auto" at once.
        again = await model(MESSAGES, structured_model=SCHEMA)
        assert isinstance(again, ChatResponse) and again.metadata == response.metadata
    sent = [r.body for r in server.requests]
    assert [b["tool_choice"] for b in sent] == [FORCED, "auto", "auto"]
    assert sent[0]["tools"] == sent[1]["tools"]
    assert [t["function"]["name"] for t in sent[1]["tools"]] == ["generate_structured_output"]


async def test_refused_tool_choice_in_a_stream_before_it_starts(
    server: WireServer, provider: str
) -> None:
    server.add(Reply(400, REFUSAL_BODY), Reply(events=structured_stream()))
    async with compatible_model(server, provider, stream=True) as model:
        chunks = [
            c
            async for c in await model(MESSAGES, structured_model=SCHEMA)  # type: ignore[union-attr]
        ]
    assert chunks[-1].is_last and chunks[-1].metadata == {"city": "Oslo", "celsius": 3}
    assert [r.body["tool_choice"] for r in server.requests] == [FORCED, "auto"]


async def test_refused_tool_choice_as_the_first_stream_event(
    server: WireServer, provider: str
) -> None:
    # Some DashScope models accept the request and report the refusal inside the stream.
    server.add(
        Reply(events=[sse({"error": REFUSAL_BODY["error"]})]), Reply(events=structured_stream())
    )
    async with compatible_model(server, provider, stream=True) as model:
        stream = await model(MESSAGES, structured_model=SCHEMA)
        chunks = [c async for c in stream]  # type: ignore[union-attr]
    assert chunks[-1].metadata == {"city": "Oslo", "celsius": 3}
    assert [r.body["tool_choice"] for r in server.requests] == [FORCED, "auto"]


async def test_other_bad_requests_are_not_retried(server: WireServer, provider: str) -> None:
    server.add(Reply(400, {"error": {"message": "messages must not be empty"}}))
    async with compatible_model(server, provider, stream=False) as model:
        with pytest.raises(ModelAPIError, match="messages must not be empty") as info:
            await model(MESSAGES, structured_model=SCHEMA)
        assert info.value.status_code == 400
        # Without a structured model a refusal is the caller's to see: nothing is changed.
        server.add(Reply(400, REFUSAL_BODY))
        with pytest.raises(ModelAPIError, match="tool_choice"):
            await model(MESSAGES, tools=[], tool_choice="none")
    assert len(server.requests) == 2


async def test_dashscope_native_endpoint_falls_back_too(server: WireServer) -> None:
    refusal = {
        "code": "InvalidParameter",
        "message": "The tool_choice parameter does not support being set to required or object "
        "in thinking mode",
        "request_id": "req-r",
    }
    answer = {
        "output": {
            "choices": [
                {
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": [],
                        "tool_calls": [
                            {
                                "id": "call_v",
                                "type": "function",
                                "function": {
                                    "name": "generate_structured_output",
                                    "arguments": json.dumps({"city": "Oslo", "celsius": 3}),
                                },
                            }
                        ],
                    },
                }
            ]
        },
        "usage": {"input_tokens": 30, "output_tokens": 8},
        "request_id": "req-ok",
    }
    server.add(Reply(400, refusal), Reply(body=answer))
    model = DashScopeChatModel(
        "qwen-vl-max",
        api_key=SECRET,
        stream=False,
        base_http_api_url=server.url + "/api/v1",
        retry_config=FAST,
    )
    async with model:
        response = await model(MESSAGES, structured_model=SCHEMA)
    assert isinstance(response, ChatResponse)
    assert response.metadata == {"city": "Oslo", "celsius": 3}
    assert [r.body["parameters"]["tool_choice"] for r in server.requests] == [FORCED, "auto"]
