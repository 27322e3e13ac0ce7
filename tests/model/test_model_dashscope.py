"""DashScopeChatModel against a local server speaking DashScope's OpenAI-compatible protocol."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agentscope_rt.exception import ModelAPIError
from agentscope_rt.message import TextBlock, ThinkingBlock
from agentscope_rt.model import DashScopeChatModel, RetryConfig
from agentscope_rt.model._dashscope_model import DASHSCOPE_BASE_URL, compatible_messages

from ._wire_servers import Reply, WireServer, openai_chunk, openai_completion, sse

# Every SDK async generator must be closed explicitly: under trio one left to the garbage
# collector is reported as a ResourceWarning, which these tests turn into a failure.
pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")

SECRET = "sk-dashscope-secret-42"
FAST = RetryConfig(max_retries=1, initial_delay=0.01, max_delay=0.05, jitter=0.0)
MESSAGES = [{"role": "user", "content": "1+1?"}]


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as srv:
        yield srv


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
