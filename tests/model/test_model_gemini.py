"""GeminiChatModel against a local server speaking Gemini's generateContent protocol (SSE)."""

from __future__ import annotations

import logging
from typing import Any

import attrs
import pytest

from agentscope_rt.exception import ModelAPIError
from agentscope_rt.message import TextBlock, ThinkingBlock
from agentscope_rt.model import ChatResponse
from agentscope_rt.model._gemini_model import GeminiChatModel, _clean_part

from ._wire_servers import (
    Recorded,
    Reply,
    WireServer,
    free_port_url,
    gemini_error,
    gemini_events,
    gemini_response,
)
from .conftest import FAST
from .conftest import collect_closed as collect

API_KEY = "test-gemini-key-5f3a9c"
CONTENTS = [
    {"role": "system", "parts": [{"text": "You are terse."}]},
    {"role": "user", "parts": [{"text": "Weather in Paris and Oslo?"}]},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city.",
            "parameters": {
                "type": "object",
                "properties": {"place": {"$ref": "#/$defs/Place"}},
                "required": ["place"],
                "$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string"}}}},
            },
        },
    }
]


def model(server: WireServer, stream: bool = False, **kwargs: Any) -> GeminiChatModel:
    return GeminiChatModel(
        "gemini-2.5-flash",
        api_key=API_KEY,
        stream=stream,
        client_kwargs={"base_url": server.url},
        retry_config=FAST,
        **kwargs,
    )


def sse_answer(*events: dict[str, Any]) -> Reply:
    return Reply(events=gemini_events(*events))


async def test_text_reply_request_shape_and_usage(server: WireServer) -> None:
    server.add(Reply(body=gemini_response({"text": "Sunny."}, prompt_tokens=12, output_tokens=2)))
    m = model(
        server,
        thinking_config={"include_thoughts": True, "thinking_budget": 64},
        generate_kwargs={"temperature": 0.2, "safety_settings": []},
    )
    response = await m(CONTENTS, max_output_tokens=50)
    assert isinstance(response, ChatResponse)
    assert response.content == [TextBlock("Sunny.")]
    assert response.id == "resp-1"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 2)
    request = server.requests[0]
    assert request.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert request.query == {}
    assert request.headers["x-goog-api-key"] == API_KEY
    body = request.body
    assert body["systemInstruction"] == {"parts": [{"text": "You are terse."}]}
    assert body["contents"] == CONTENTS[1:]
    assert body["safetySettings"] == []
    assert body["generationConfig"] == {
        "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 64},
        "temperature": 0.2,
        "maxOutputTokens": 50,
    }


async def test_several_function_calls_thinking_and_tool_config(server: WireServer) -> None:
    server.add(
        Reply(
            body=gemini_response(
                {"text": "Two cities.", "thought": True},
                {"functionCall": {"name": "get_weather", "args": {"place": {"city": "Paris"}}}},
                {
                    "functionCall": {"name": "get_weather", "args": {"place": {"city": "Oslo"}}},
                    "thoughtSignature": "c2ln",
                },
                prompt_tokens=30,
                output_tokens=10,
                thoughts_tokens=5,
            )
        )
    )
    response = await model(server)(CONTENTS, tools=TOOLS, tool_choice="get_weather")
    assert isinstance(response, ChatResponse)
    assert response.content[0] == ThinkingBlock("Two cities.")
    assert [c.input for c in response.tool_calls] == [
        {"place": {"city": "Paris"}},
        {"place": {"city": "Oslo"}},
    ]
    assert len({c.id for c in response.tool_calls}) == 2
    assert response.usage is not None and response.usage.output_tokens == 15
    body = server.requests[0].body
    (declaration,) = body["tools"][0]["functionDeclarations"]
    # Gemini schemas have no $ref: definitions are inlined.
    assert declaration["parameters"]["properties"]["place"]["properties"] == {
        "city": {"type": "string"}
    }
    assert "$defs" not in declaration["parameters"]
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
    }


async def test_tool_choice_modes(server: WireServer) -> None:
    modes = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
    for choice in modes:
        server.add(Reply(body=gemini_response({"text": "ok"}, prompt_tokens=1)))
        await model(server)(CONTENTS, tools=TOOLS, tool_choice=choice)
    sent = [r.body["toolConfig"]["functionCallingConfig"] for r in server.requests]
    assert sent == [{"mode": mode} for mode in modes.values()]


async def test_malformed_function_args_become_raw_input(server: WireServer) -> None:
    server.add(
        Reply(
            body=gemini_response(
                {"functionCall": {"name": "get_weather", "args": '{"place": '}}, prompt_tokens=1
            )
        )
    )
    response = await model(server)(CONTENTS, tools=TOOLS)
    assert isinstance(response, ChatResponse)
    (block,) = response.tool_calls
    assert block.input == {}
    assert block.raw_input == '{"place": '


async def test_structured_output_with_attrs_class(server: WireServer) -> None:
    @attrs.define
    class Answer_:
        city: str
        celsius: float

    server.add(
        Reply(body=gemini_response({"text": '{"city": "Oslo", "celsius": 3}'}, prompt_tokens=1))
    )
    response = await model(server)(CONTENTS, structured_model=Answer_)
    assert isinstance(response, ChatResponse)
    assert response.metadata == {"city": "Oslo", "celsius": 3.0}
    config = server.requests[0].body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert set(config["responseJsonSchema"]["properties"]) == {"city", "celsius"}


async def test_stream_sse_cumulative_chunks(server: WireServer) -> None:
    server.add(
        sse_answer(
            gemini_response({"text": "Think", "thought": True}),
            gemini_response({"text": "ing.", "thought": True}),
            gemini_response({"text": "Hel"}),
            gemini_response(
                {"text": "lo"},
                {"functionCall": {"name": "get_weather", "args": {"place": {"city": "Oslo"}}}},
                prompt_tokens=7,
                output_tokens=3,
            ),
        )
    )
    chunks = await collect(await model(server, stream=True)(CONTENTS, tools=TOOLS))
    request = server.requests[0]
    assert request.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    assert request.query == {"alt": ["sse"]}
    assert [c.is_last for c in chunks] == [False] * 4 + [True]
    assert chunks[2].get_text() == "Hel"
    last = chunks[-1]
    assert last.content[:2] == [ThinkingBlock("Thinking."), TextBlock("Hello")]
    assert [c.input for c in last.tool_calls] == [{"place": {"city": "Oslo"}}]
    assert last.usage is not None and (last.usage.input_tokens, last.usage.output_tokens) == (7, 3)


async def test_429_then_success(server: WireServer) -> None:
    for stream in (False, True):
        server.requests.clear()
        server.add(
            Reply(429, gemini_error(429, "Resource has been exhausted", "RESOURCE_EXHAUSTED")),
            sse_answer(gemini_response({"text": "ok"}, prompt_tokens=1))
            if stream
            else Reply(body=gemini_response({"text": "ok"}, prompt_tokens=1)),
        )
        result = await model(server, stream=stream)(CONTENTS)
        response = (await collect(result))[-1] if stream else result
        assert isinstance(response, ChatResponse)
        assert response.get_text() == "ok"
        assert len(server.requests) == 2


async def test_error_event_inside_stream(server: WireServer) -> None:
    server.add(
        sse_answer(
            gemini_response({"text": "par"}),
            gemini_error(503, f"overloaded (key {API_KEY})", "UNAVAILABLE"),
        )
    )
    with pytest.raises(ModelAPIError, match="overloaded") as info:
        await collect(await model(server, stream=True)(CONTENTS))
    assert info.value.status_code == 503
    assert API_KEY not in str(info.value)
    # Output was already yielded: starting again would repeat it, so no retry.
    assert (info.value.attempts, len(server.requests)) == (1, 1)


def test_api_key_from_environment_and_never_in_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", API_KEY)
    m = GeminiChatModel("gemini-2.5-flash")
    assert API_KEY not in repr(m)
    assert API_KEY not in str(vars(m).get("client_kwargs"))
    monkeypatch.delenv("GEMINI_API_KEY")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(ValueError, match="GEMINI_API_KEY"):
        GeminiChatModel("gemini-2.5-flash")


async def test_error_event_before_output_is_retried(server: WireServer) -> None:
    for status_code, status in ((503, "UNAVAILABLE"), (429, "RESOURCE_EXHAUSTED")):
        server.requests.clear()
        server.add(
            sse_answer(gemini_error(status_code, f"try again (key {API_KEY})", status)),
            sse_answer(gemini_response({"text": "ok"}, prompt_tokens=1)),
        )
        chunks = await collect(await model(server, stream=True)(CONTENTS))
        assert chunks[-1].get_text() == "ok"
        assert len(server.requests) == 2


async def test_error_event_before_output_until_failure_hides_key(
    server: WireServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for _ in range(3):
        server.add(sse_answer(gemini_error(503, f"overloaded (key {API_KEY})", "UNAVAILABLE")))
    with pytest.raises(ModelAPIError, match="overloaded") as info:
        await collect(await model(server, stream=True)(CONTENTS))
    error = info.value
    assert (error.provider, error.status_code, error.attempts) == ("gemini", 503, 3)
    assert len(server.requests) == 3
    # The error event stays attached as the cause: it must not carry the key either.
    assert error.__cause__ is not None
    for text in (str(error), repr(error), str(error.__cause__), repr(error.__cause__)):
        assert API_KEY not in text
    assert API_KEY not in caplog.text


async def test_error_event_without_code_uses_status(server: WireServer) -> None:
    server.add(
        sse_answer({"error": {"message": "busy", "status": "UNAVAILABLE"}}),
        sse_answer(gemini_response({"text": "ok"}, prompt_tokens=1)),
    )
    chunks = await collect(await model(server, stream=True)(CONTENTS))
    assert chunks[-1].get_text() == "ok"
    assert len(server.requests) == 2


async def test_client_error_event_is_not_retried(server: WireServer) -> None:
    server.add(
        sse_answer(gemini_error(400, "bad request", "INVALID_ARGUMENT")),
        sse_answer(gemini_response({"text": "never"}, prompt_tokens=1)),
    )
    with pytest.raises(ModelAPIError, match="bad request") as info:
        await collect(await model(server, stream=True)(CONTENTS))
    assert (info.value.status_code, info.value.attempts) == (400, 1)
    assert len(server.requests) == 1


def test_clean_part_copies_only_what_changes() -> None:
    media = {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo" * 1000}}
    ready = {"role": "user", "parts": [{"text": "look"}, media]}
    assert _clean_part(ready) is ready
    signed: dict[str, Any] = {
        "role": "model",
        "parts": [
            {"text": "a"},
            {"function_call": {"name": "f", "args": {}}, "thought_signature": b"sig", "x": None},
            media,
        ],
    }
    cleaned = _clean_part(signed)
    assert cleaned == {
        "role": "model",
        "parts": [
            {"text": "a"},
            {"function_call": {"name": "f", "args": {}}, "thought_signature": "c2ln"},
            media,
        ],
    }
    # The caller's message is untouched; unchanged parts are shared, not copied.
    assert signed["parts"][1]["thought_signature"] == b"sig"
    assert cleaned["parts"][0] is signed["parts"][0]
    assert cleaned["parts"][2] is media
    assert _clean_part({"a": None, "b": 1}) == {"b": 1}
    assert _clean_part([None, {"c": None}]) == [None, {}]


# -- thought signatures ------------------------------------------------------------------------


def _signed_answer_parts() -> tuple[dict[str, Any], ...]:
    return (
        {"text": "Checking.", "thought": True},
        {
            "functionCall": {"name": "get_weather", "args": {"place": {"city": "Oslo"}}},
            "thoughtSignature": "U0lHLWNhbGw=",
        },
        {"text": "One moment."},
        {"text": "", "thoughtSignature": "U0lHLXRleHQ="},
    )


async def _next_turn_request(server: WireServer, response: ChatResponse) -> dict[str, Any]:
    """Send *response* back through Msg JSON and the formatter; the next request's contents."""
    from agentscope_rt.formatter import GeminiChatFormatter
    from agentscope_rt.message import Msg, ToolResultBlock

    reply = Msg.from_dict(Msg("Friday", list(response.content), "assistant").to_dict())
    (call,) = reply.get_content_blocks("tool_use")
    result = Msg("system", [ToolResultBlock(call.id, call.name, "3 °C")], "system")
    contents = await GeminiChatFormatter().format([Msg("user", "Weather?", "user"), reply, result])
    server.add(Reply(body=gemini_response({"text": "3 °C in Oslo."}, prompt_tokens=1)))
    await model(server)(contents, tools=TOOLS)
    body: dict[str, Any] = server.requests[-1].body
    return body


async def test_thought_signatures_are_kept_and_sent_back(server: WireServer) -> None:
    server.add(Reply(body=gemini_response(*_signed_answer_parts(), prompt_tokens=3)))
    response = await model(server)(CONTENTS, tools=TOOLS)
    assert isinstance(response, ChatResponse)
    thinking, text, call = response.content
    assert thinking == ThinkingBlock("Checking.")
    # A signature on a part without a function call belongs to the answer's text.
    assert (text.text, text.thought_signature) == ("One moment.", "U0lHLXRleHQ=")
    assert call.thought_signature == "U0lHLWNhbGw="
    # AgentScope's JSON shape: the key beside the block's other keys, only when set.
    assert call.to_dict()["thought_signature"] == "U0lHLWNhbGw="
    assert "thought_signature" not in thinking.to_dict()

    body = await _next_turn_request(server, response)
    model_turn = body["contents"][1]
    assert model_turn["role"] == "model"
    assert model_turn["parts"] == [
        {"text": "One moment.", "thought_signature": "U0lHLXRleHQ="},
        {
            "function_call": {"name": "get_weather", "args": {"place": {"city": "Oslo"}}},
            "thought_signature": "U0lHLWNhbGw=",
        },
    ]


async def test_thought_signatures_in_a_stream(server: WireServer) -> None:
    first, call, text, signature = _signed_answer_parts()
    server.add(
        sse_answer(
            gemini_response(first),
            gemini_response(call),
            gemini_response(text),
            gemini_response(signature, prompt_tokens=3, output_tokens=4),
        )
    )
    chunks = await collect(await model(server, stream=True)(CONTENTS, tools=TOOLS))
    final = chunks[-1]
    assert final.is_last
    (tool_use,) = final.tool_calls
    assert tool_use.thought_signature == "U0lHLWNhbGw="
    texts = [b for b in final.content if isinstance(b, TextBlock)]
    assert [(b.text, b.thought_signature) for b in texts] == [("One moment.", "U0lHLXRleHQ=")]
    # Before the signature event the text has none yet.
    assert [b.thought_signature for b in chunks[2].content if isinstance(b, TextBlock)] == [None]

    body = await _next_turn_request(server, final)
    assert [p.get("thought_signature") for p in body["contents"][1]["parts"]] == [
        "U0lHLXRleHQ=",
        "U0lHLWNhbGw=",
    ]


async def test_blocks_without_signatures_send_none(server: WireServer) -> None:
    server.add(
        Reply(
            body=gemini_response(
                {"functionCall": {"name": "get_weather", "args": {"place": {"city": "Oslo"}}}},
                prompt_tokens=1,
            )
        )
    )
    response = await model(server)(CONTENTS, tools=TOOLS)
    assert isinstance(response, ChatResponse)
    assert response.tool_calls[0].thought_signature is None
    body = await _next_turn_request(server, response)
    assert body["contents"][1]["parts"] == [
        {"function_call": {"name": "get_weather", "args": {"place": {"city": "Oslo"}}}}
    ]


# -- Vertex AI ---------------------------------------------------------------------------------

VERTEX_TOKEN = "ya29.vertex-token-7c1e"
VERTEX_PATH = (
    "/v1/projects/my-proj/locations/europe-west4/publishers/google/models/gemini-2.5-flash"
)


def vertex_model(server: WireServer, stream: bool = False, **client_kwargs: Any) -> GeminiChatModel:
    return GeminiChatModel(
        "gemini-2.5-flash",
        stream=stream,
        client_kwargs={
            "vertexai": True,
            "project": "my-proj",
            "location": "europe-west4",
            "base_url": server.url,
            **client_kwargs,
        },
        retry_config=FAST,
    )


@pytest.fixture
def no_google_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_CLOUD_ACCESS_TOKEN",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_GENAI_USE_VERTEXAI",
    ):
        monkeypatch.delenv(name, raising=False)


async def test_vertex_ai_path_and_bearer_token(server: WireServer, no_google_env: None) -> None:
    server.add(Reply(body=gemini_response({"text": "Hi."}, prompt_tokens=2, output_tokens=1)))
    m = vertex_model(server, credentials=VERTEX_TOKEN)
    response = await m(CONTENTS)
    assert isinstance(response, ChatResponse)
    assert response.content == [TextBlock("Hi.")]
    request = server.requests[0]
    assert request.path == f"{VERTEX_PATH}:generateContent"
    assert request.headers["authorization"] == f"Bearer {VERTEX_TOKEN}"
    assert "x-goog-api-key" not in request.headers
    assert request.body["contents"] == CONTENTS[1:]
    assert VERTEX_TOKEN not in repr(m) and VERTEX_TOKEN not in repr(vars(m))


async def test_vertex_ai_stream_with_token_from_environment(
    server: WireServer, no_google_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_ACCESS_TOKEN", VERTEX_TOKEN)
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-proj")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west4")
    server.add(
        sse_answer(
            gemini_response({"text": "Hel"}),
            gemini_response({"text": "lo"}, prompt_tokens=2, output_tokens=2),
        )
    )
    m = GeminiChatModel("gemini-2.5-flash", stream=True, client_kwargs={"base_url": server.url})
    chunks = await collect(await m(CONTENTS))
    assert chunks[-1].content == [TextBlock("Hello")]
    request = server.requests[0]
    assert request.path == f"{VERTEX_PATH}:streamGenerateContent"
    assert request.query == {"alt": ["sse"]}
    assert request.headers["authorization"] == f"Bearer {VERTEX_TOKEN}"


async def test_vertex_ai_error_scrubs_the_token(server: WireServer, no_google_env: None) -> None:
    server.add(Reply(403, gemini_error(403, f"token {VERTEX_TOKEN} lacks a role", "DENIED")))
    with pytest.raises(ModelAPIError) as info:
        await vertex_model(server, credentials=VERTEX_TOKEN)(CONTENTS)
    assert info.value.status_code == 403
    assert VERTEX_TOKEN not in str(info.value) and "***" in str(info.value)


async def test_vertex_ai_credentials_object(server: WireServer, no_google_env: None) -> None:
    class Credentials:
        """google.auth's interface: a valid token needs no refresh."""

        token = VERTEX_TOKEN
        valid = True

        def refresh(self, request: Any) -> None:
            raise AssertionError("a valid token is not refreshed")

    server.add(Reply(body=gemini_response({"text": "ok"}, prompt_tokens=1)))
    await vertex_model(server, credentials=Credentials())(CONTENTS)
    assert server.requests[0].headers["authorization"] == f"Bearer {VERTEX_TOKEN}"


REFRESH_TOKEN = "1//refresh-token-5d2a"
CLIENT_SECRET = "client-secret-9b3f"


def _refusal(sent: Recorded) -> dict[str, str]:
    """Google's OAuth token endpoint refusing a refresh, quoting what it was sent."""
    return {"error": "invalid_grant", "error_description": f"Bad: {sent.body}"}


def _refreshable(token_uri: str) -> Any:
    from google.oauth2.credentials import Credentials

    return Credentials(
        None,
        refresh_token=REFRESH_TOKEN,
        token_uri=token_uri,
        client_id="client-id",
        client_secret=CLIENT_SECRET,
    )


async def test_vertex_ai_credentials_google_auth_refuses_are_a_model_api_error(
    server: WireServer, no_google_env: None
) -> None:
    with WireServer() as endpoint:
        endpoint.add(Reply(400, body=_refusal))
        model = vertex_model(server, credentials=_refreshable(f"{endpoint.url}/token"))
        with pytest.raises(ModelAPIError) as info:
            await model(CONTENTS)
    text = str(info.value)
    assert "invalid_grant" in text and "could not be used" in text
    assert info.value.attempts == 1  # a refusal is not retried
    assert REFRESH_TOKEN not in text and CLIENT_SECRET not in text
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert server.requests == []  # nothing reached Gemini


async def test_vertex_ai_token_endpoint_unreachable_is_a_model_api_error(
    server: WireServer, no_google_env: None
) -> None:
    model = vertex_model(server, credentials=_refreshable(f"{free_port_url()}/token"))
    with pytest.raises(ModelAPIError) as info:
        await model(CONTENTS)
    assert info.value.status_code is None
    assert "could not reach Google" in info.value.message
    assert server.requests == []


def test_vertex_ai_endpoints_and_settings(no_google_env: None) -> None:
    regional = GeminiChatModel(
        "gemini-2.5-flash",
        client_kwargs={
            "vertexai": True,
            "project": "p",
            "location": "us-east1",
            "credentials": "t",
        },
    )
    assert regional.base_url == "https://us-east1-aiplatform.googleapis.com/v1"
    # google-genai's default location is "global", served by the host without a region.
    default = GeminiChatModel(
        "m", client_kwargs={"vertexai": True, "project": "p", "credentials": "t"}
    )
    assert default.base_url == "https://aiplatform.googleapis.com/v1"
    assert default.location == "global"
    beta = GeminiChatModel(
        "m",
        client_kwargs={
            "vertexai": True,
            "project": "p",
            "credentials": "t",
            "api_version": "v1beta1",
        },
    )
    assert beta.base_url.endswith("/v1beta1")
    with pytest.raises(ValueError, match="GOOGLE_CLOUD_PROJECT"):
        GeminiChatModel("m", client_kwargs={"vertexai": True, "credentials": "t"})


def test_vertex_ai_without_any_token_source(
    no_google_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agentscope_rt.model._gemini_model as gemini_module

    monkeypatch.setattr(gemini_module, "_has_google_auth", lambda: False)
    with pytest.raises(ValueError, match="GOOGLE_CLOUD_ACCESS_TOKEN") as info:
        GeminiChatModel("m", client_kwargs={"vertexai": True, "project": "p"})
    assert "google-auth" in str(info.value)


async def test_vertex_ai_express_mode_uses_the_api_key(
    server: WireServer, no_google_env: None
) -> None:
    server.add(Reply(body=gemini_response({"text": "ok"}, prompt_tokens=1)))
    m = GeminiChatModel(
        "gemini-2.5-flash",
        api_key=API_KEY,
        stream=False,
        client_kwargs={"vertexai": True, "base_url": server.url},
        retry_config=FAST,
    )
    await m(CONTENTS)
    request = server.requests[0]
    assert request.path == "/v1/publishers/google/models/gemini-2.5-flash:generateContent"
    assert request.headers["x-goog-api-key"] == API_KEY
    assert "authorization" not in request.headers
