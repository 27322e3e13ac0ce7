"""DashScopeChatModel against a local server speaking DashScope's OpenAI-compatible protocol."""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_rt.exception import ModelAPIError
from agentscope_rt.message import TextBlock, ThinkingBlock
from agentscope_rt.model import ChatResponse, DashScopeChatModel, RetryConfig
from agentscope_rt.model._dashscope_model import (
    DASHSCOPE_BASE_URL,
    compatible_messages,
    native_messages,
)

from ._wire_servers import (
    Reply,
    WireServer,
    dashscope_answer,
    dashscope_event,
    openai_chunk,
    openai_completion,
    sse,
)

# Every SDK async generator must be closed explicitly: under trio one left to the garbage
# collector is reported as a ResourceWarning, which these tests turn into a failure.
pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")

SECRET = "sk-dashscope-secret-42"
FAST = RetryConfig(max_retries=1, initial_delay=0.01, max_delay=0.05, jitter=0.0)
MESSAGES = [{"role": "user", "content": "1+1?"}]


async def test_thinking_stream_with_key_from_environment(
    server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", SECRET)
    server.add(
        Reply(
            events=[
                openai_chunk({"role": "assistant", "reasoning_content": "Add them."}),
                openai_chunk({"reasoning_content": " Two."}),
                openai_chunk({"content": "2"}),
                openai_chunk(None, usage=(4, 9)),
                sse("[DONE]"),
            ]
        )
    )
    # enable_thinking forces streaming, as DashScope requires.
    model = DashScopeChatModel(
        "qwen-plus",
        stream=False,
        enable_thinking=True,
        base_http_api_url=server.url + "/compatible-mode/v1",
        retry_config=FAST,
    )
    async with model:
        assert model.stream
        chunks = [c async for c in await model(MESSAGES)]  # type: ignore[union-attr]
    assert chunks[-1].content == [ThinkingBlock("Add them. Two."), TextBlock("2")]
    assert chunks[-1].usage is not None and chunks[-1].usage.output_tokens == 9
    request = server.requests[0]
    assert request.path == "/compatible-mode/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.body["enable_thinking"] is True
    assert SECRET not in repr(model) and SECRET not in str(vars(model))


async def test_errors_name_dashscope(server: WireServer) -> None:
    server.add(*[Reply(503, {"error": {"message": "Service unavailable"}}) for _ in range(2)])
    model = DashScopeChatModel(
        "qwen-plus", api_key=SECRET, stream=False, base_http_api_url=server.url, retry_config=FAST
    )
    async with model:
        with pytest.raises(ModelAPIError) as info:
            await model(MESSAGES)
    assert (info.value.provider, info.value.status_code, info.value.attempts) == (
        "dashscope",
        503,
        2,
    )


async def test_non_streaming_text(server: WireServer) -> None:
    server.add(Reply(body=openai_completion("2", usage=(3, 1))))
    model = DashScopeChatModel(
        "qwen-plus", api_key=SECRET, stream=False, base_http_api_url=server.url
    )
    async with model:
        response = await model(MESSAGES)
    assert response.content == [TextBlock("2")]  # type: ignore[union-attr]
    assert "enable_thinking" not in server.requests[0].body


def test_defaults_and_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    with pytest.raises(ValueError, match="DASHSCOPE_API_KEY"):
        DashScopeChatModel("qwen-plus")
    model = DashScopeChatModel("qwen-plus", api_key=SECRET)
    assert str(model.client.base_url).rstrip("/") == DASHSCOPE_BASE_URL


def test_compatible_messages_converts_native_parts_copy_on_write() -> None:
    typed = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    plain: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}, typed]
    assert compatible_messages(plain) is plain
    native = {
        "role": "user",
        "content": [
            {"type": "text", "text": "already typed"},
            {"text": "look"},
            {"image": "https://example.com/a.jpg"},
            {"audio": "https://example.com/talk.MP3?sig=1"},
            {"audio": "data:audio/wav;base64,UklGRg=="},
            {"audio": "https://example.com/stream"},
            {"video": ["https://example.com/f1.jpg", "https://example.com/f2.jpg"]},
            {"video": "file-id-without-extension"},
        ],
    }
    messages: list[dict[str, Any]] = [plain[0], native, typed]
    result = compatible_messages(messages)
    assert result[0] is plain[0] and result[2] is typed
    assert result[1]["role"] == "user"
    assert result[1]["content"] == [
        {"type": "text", "text": "already typed"},
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}},
        {
            "type": "input_audio",
            "input_audio": {"data": "https://example.com/talk.MP3?sig=1", "format": "mp3"},
        },
        {
            "type": "input_audio",
            "input_audio": {"data": "data:audio/wav;base64,UklGRg==", "format": "wav"},
        },
        # No extension and no MIME type: the format is left for the server to detect.
        {"type": "input_audio", "input_audio": {"data": "https://example.com/stream"}},
        {"type": "video", "video": ["https://example.com/f1.jpg", "https://example.com/f2.jpg"]},
        {"type": "video_url", "video_url": {"url": "file-id-without-extension"}},
    ]
    # The typed part is shared, and the caller's message keeps its native parts.
    assert result[1]["content"][0] is native["content"][0]
    assert native["content"][1] == {"text": "look"}


# -- the native multimodal endpoint ------------------------------------------------------------

MULTIMODAL_PATH = "/api/v1/services/aigc/multimodal-generation/generation"
IMAGE_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "Describe images."},
    {
        "role": "user",
        "content": [
            {"image": "https://example.com/cat.png"},
            # An OpenAI-shaped part goes back to the native shape.
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"text": "What is this?"},
        ],
    },
]
NATIVE_IMAGE_MESSAGES = [
    IMAGE_MESSAGES[0],
    {
        "role": "user",
        "content": [
            {"image": "https://example.com/cat.png"},
            {"image": "data:image/png;base64,iVBORw0KGgo="},
            {"text": "What is this?"},
        ],
    },
]


def multimodal_model(server: WireServer, stream: bool, **kwargs: Any) -> DashScopeChatModel:
    return DashScopeChatModel(
        "qwen-vl-max",
        api_key=SECRET,
        stream=stream,
        multimodality=True,
        base_http_api_url=server.url + "/api/v1",
        retry_config=FAST,
        **kwargs,
    )


async def test_multimodal_endpoint_non_streaming(server: WireServer) -> None:
    server.add(
        Reply(body=dashscope_answer([{"text": "A cat "}, {"text": "on a mat."}], reasoning="Look."))
    )
    async with multimodal_model(server, False, generate_kwargs={"temperature": 0.1}) as model:
        assert model.uses_multimodal_endpoint
        response = await model(IMAGE_MESSAGES)
    assert isinstance(response, ChatResponse)
    assert response.content == [ThinkingBlock("Look."), TextBlock("A cat on a mat.")]
    assert response.id == "req-mm-1"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (20, 4)
    (request,) = server.requests
    assert request.path == MULTIMODAL_PATH
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert "x-dashscope-sse" not in request.headers
    assert request.body == {
        "model": "qwen-vl-max",
        "input": {"messages": NATIVE_IMAGE_MESSAGES},
        "parameters": {"result_format": "message", "temperature": 0.1},
    }


async def test_multimodal_endpoint_stream_with_thinking_and_tool_calls(server: WireServer) -> None:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "zoom"}}
    events = [
        dashscope_answer([], reasoning="Small "),
        dashscope_answer([], reasoning="image."),
        dashscope_answer([{"text": "Let me zoom."}]),
        dashscope_answer(
            [], tool_calls=[{**call, "function": {"name": "zoom", "arguments": '{"fac'}}]
        ),
        dashscope_answer([], tool_calls=[{"index": 0, "function": {"arguments": 'tor": 2}'}}]),
        dashscope_answer([], usage=(30, 9)),
    ]
    server.add(Reply(events=[dashscope_event(i, e) for i, e in enumerate(events, 1)]))
    tools = [{"type": "function", "function": {"name": "zoom", "parameters": {"type": "object"}}}]
    async with multimodal_model(server, True, enable_thinking=True) as model:
        stream = await model(IMAGE_MESSAGES, tools=tools, tool_choice="required")
        chunks = [c async for c in stream]  # type: ignore[union-attr]
    final = chunks[-1]
    assert final.is_last and not any(c.is_last for c in chunks[:-1])
    assert final.content[:2] == [ThinkingBlock("Small image."), TextBlock("Let me zoom.")]
    (tool_use,) = final.tool_calls
    assert (tool_use.id, tool_use.name, tool_use.input) == ("call_1", "zoom", {"factor": 2})
    assert final.usage is not None and final.usage.output_tokens == 9
    assert {c.id for c in chunks} == {"req-mm-1"}
    # Cumulative: the thinking grows chunk by chunk.
    assert [c.content[0] for c in chunks[:2]] == [
        ThinkingBlock("Small "),
        ThinkingBlock("Small image."),
    ]
    (request,) = server.requests
    assert request.path == MULTIMODAL_PATH
    assert request.headers["x-dashscope-sse"] == "enable"
    assert request.headers["accept"] == "text/event-stream"
    parameters = request.body["parameters"]
    assert parameters["incremental_output"] is True
    assert parameters["enable_thinking"] is True
    assert parameters["tools"] == tools
    # As in AgentScope: DashScope's native API has no "required"; "auto" is sent.
    assert parameters["tool_choice"] == "auto"


async def test_multimodal_stream_error_event_is_retried_before_output(server: WireServer) -> None:
    throttled = {"code": "Throttling.RateQuota", "message": "Requests rate limit exceeded"}
    server.add(
        Reply(events=[dashscope_event(1, throttled, status=429)]),
        Reply(events=[dashscope_event(1, dashscope_answer([{"text": "ok"}]))]),
    )
    async with multimodal_model(server, True) as model:
        chunks = [c async for c in await model(IMAGE_MESSAGES)]  # type: ignore[union-attr]
    assert chunks[-1].content == [TextBlock("ok")]
    assert len(server.requests) == 2


async def test_multimodal_http_error_names_dashscope_code(server: WireServer) -> None:
    bad = {"code": "InvalidParameter", "message": "The image is too large", "request_id": "r"}
    server.add(Reply(400, bad))
    async with multimodal_model(server, False) as model:
        with pytest.raises(ModelAPIError, match="The image is too large") as info:
            await model(IMAGE_MESSAGES)
    assert (info.value.provider, info.value.status_code, info.value.attempts) == (
        "dashscope",
        400,
        1,
    )
    assert SECRET not in str(info.value)


async def test_endpoint_choice_follows_agentscope(server: WireServer) -> None:
    # multimodality=None: qvq* and *-vl* models are multimodal, others are not.
    for name, native in (("qwen-vl-plus", True), ("qvq-max", True), ("qwen-plus", False)):
        model = DashScopeChatModel(name, api_key=SECRET, base_http_api_url=server.url)
        assert model.uses_multimodal_endpoint is native
    forced_off = DashScopeChatModel("qwen-vl-max", api_key=SECRET, multimodality=False)
    assert not forced_off.uses_multimodal_endpoint
    # A compatible-mode base URL maps to the native base on the same host.
    server.add(Reply(body=dashscope_answer([{"text": "ok"}])))
    model = DashScopeChatModel(
        "qwen-vl-max",
        api_key=SECRET,
        stream=False,
        base_http_api_url=server.url + "/compatible-mode/v1",
    )
    async with model:
        await model(IMAGE_MESSAGES)
    assert server.requests[0].path == MULTIMODAL_PATH


def test_native_messages_copy_on_write() -> None:
    plain: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "hi"}]}]
    assert native_messages(plain) is plain
    converted = native_messages(IMAGE_MESSAGES)
    assert converted == NATIVE_IMAGE_MESSAGES
    assert converted[0] is IMAGE_MESSAGES[0]
    assert IMAGE_MESSAGES[1]["content"][1]["type"] == "image_url"
    audio = {"type": "input_audio", "input_audio": {"data": "https://a/b.mp3", "format": "mp3"}}
    video = {"type": "video_url", "video_url": {"url": "https://a/v.mp4"}}
    assert native_messages([{"role": "user", "content": [audio, video]}])[0]["content"] == [
        {"audio": "https://a/b.mp3"},
        {"video": "https://a/v.mp4"},
    ]


async def test_enable_thinking_false_is_sent_per_request_and_generate_kwargs_stay_as_given(
    server: WireServer,
) -> None:
    # AgentScope adds enable_thinking to each request; its generate_kwargs are what was passed.
    server.add(Reply(body=openai_completion("2")), Reply(body=openai_completion("2")))
    model = DashScopeChatModel(
        "qwen-plus",
        api_key=SECRET,
        stream=False,
        enable_thinking=False,
        generate_kwargs={"temperature": 0},
        base_http_api_url=server.url,
    )
    assert model.generate_kwargs == {"temperature": 0}
    async with model:
        await model(MESSAGES)
        # A value the call sets itself is kept.
        await model(MESSAGES, extra_body={"enable_thinking": True})
    assert model.generate_kwargs == {"temperature": 0}
    first, second = (request.body for request in server.requests)
    assert first["enable_thinking"] is False and first["temperature"] == 0
    assert second["enable_thinking"] is True
