"""Each formatter's output goes through its model class to a local server speaking the provider's
protocol, and the request the server receives has the provider's shape.

The conversation has a system prompt, a user question, an assistant turn with text and a tool
call, and the tool result (a ``system`` message, as the ReAct agent stores it). Chat and
multi-agent formatters format tool runs the same way, so both are checked with one assertion
per provider; only the user turn's text differs (``<history>`` for multi-agent).
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_rt.formatter import (
    AnthropicChatFormatter,
    AnthropicMultiAgentFormatter,
    DashScopeChatFormatter,
    DashScopeMultiAgentFormatter,
    DeepSeekChatFormatter,
    DeepSeekMultiAgentFormatter,
    FormatterBase,
    GeminiChatFormatter,
    GeminiMultiAgentFormatter,
    OllamaChatFormatter,
    OllamaMultiAgentFormatter,
    OpenAIChatFormatter,
    OpenAIMultiAgentFormatter,
)
from agentscope_rt.message import (
    AudioBlock,
    Base64Source,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
    VideoBlock,
)
from agentscope_rt.model import (
    AnthropicChatModel,
    ChatResponse,
    DashScopeChatModel,
    GeminiChatModel,
    OllamaChatModel,
    OpenAIChatModel,
    RetryConfig,
)
from tests.model._wire_servers import (
    Reply,
    WireServer,
    anthropic_message,
    gemini_response,
    ollama_chunk,
    openai_completion,
)

KEY = "test-key-not-secret"
FAST = RetryConfig(max_retries=0, initial_delay=0.01, max_delay=0.01, jitter=0.0)
SYSTEM = "You are a weather bot."
QUESTION = "Weather in Paris?"
RESULT = "Sunny, 21 C"
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
    }
]


def conversation() -> list[Msg]:
    return [
        Msg("system", SYSTEM, "system"),
        Msg("user", QUESTION, "user"),
        Msg(
            "bot",
            [
                TextBlock("Checking."),
                ToolUseBlock(id="call_1", name="get_weather", input={"city": "Paris"}),
            ],
            "assistant",
        ),
        Msg(
            "system",
            [ToolResultBlock(id="call_1", name="get_weather", output=[TextBlock(RESULT)])],
            "system",
        ),
    ]


def text_of(content: Any) -> str:
    """The text of a content string or a list of text parts."""
    if isinstance(content, str):
        return content
    return "\n".join(part["text"] for part in content if "text" in part)


@pytest.fixture
def wire() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


def check_openai_style(
    messages: list[dict[str, Any]], arguments: Any, assistant_text: Any = "Checking."
) -> None:
    """System first, the user question, the assistant's tool call, the ``role: tool`` result."""
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert text_of(messages[0]["content"]) == SYSTEM
    assert QUESTION in text_of(messages[1]["content"])
    assistant = messages[2]
    assert text_of(assistant["content"]) == assistant_text
    assert assistant["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": arguments},
        }
    ]
    assert messages[3]["tool_call_id"] == "call_1"
    assert messages[3]["content"] == RESULT


@pytest.mark.parametrize(
    "formatter",
    [
        OpenAIChatFormatter(),
        OpenAIMultiAgentFormatter(),
        DeepSeekChatFormatter(),
        DeepSeekMultiAgentFormatter(),
    ],
    ids=type,
)
async def test_openai_compatible_request(wire: WireServer, formatter: FormatterBase) -> None:
    wire.add(Reply(body=openai_completion("Sunny.")))
    messages = await formatter.format(conversation(), tools=TOOLS)
    model = OpenAIChatModel(
        "gpt-test",
        api_key=KEY,
        stream=False,
        client_kwargs={"base_url": wire.url + "/v1"},
        retry_config=FAST,
    )
    async with model:
        response = await model(messages, tools=TOOLS)
    assert response.content == [TextBlock("Sunny.")]  # type: ignore[union-attr]
    [request] = wire.requests
    assert request.path == "/v1/chat/completions"
    body = request.body
    check_openai_style(body["messages"], json.dumps({"city": "Paris"}))
    assert body["tools"] == TOOLS


@pytest.mark.parametrize(
    "formatter", [DashScopeChatFormatter(), DashScopeMultiAgentFormatter()], ids=type
)
async def test_dashscope_request(wire: WireServer, formatter: FormatterBase) -> None:
    wire.add(Reply(body=openai_completion("Sunny.")))
    messages = await formatter.format(conversation(), tools=TOOLS)
    model = DashScopeChatModel(
        "qwen-plus",
        api_key=KEY,
        stream=False,
        base_http_api_url=wire.url + "/compatible-mode/v1",
        retry_config=FAST,
    )
    async with model:
        await model(messages, tools=TOOLS)
    [request] = wire.requests
    assert request.path == "/compatible-mode/v1/chat/completions"
    body = request.body
    # Text-only messages travel as plain strings, as the compatible endpoint takes them.
    assert all(isinstance(m["content"], str) for m in body["messages"])
    check_openai_style(body["messages"], json.dumps({"city": "Paris"}))


@pytest.mark.parametrize(
    "formatter", [AnthropicChatFormatter(), AnthropicMultiAgentFormatter()], ids=type
)
async def test_anthropic_request(wire: WireServer, formatter: FormatterBase) -> None:
    wire.add(Reply(body=anthropic_message([{"type": "text", "text": "Sunny."}])))
    messages = await formatter.format(conversation(), tools=TOOLS)
    model = AnthropicChatModel(
        "claude-test",
        api_key=KEY,
        stream=False,
        client_kwargs={"base_url": wire.url},
        retry_config=FAST,
    )
    async with model:
        await model(messages, tools=TOOLS)
    [request] = wire.requests
    assert request.path == "/v1/messages"
    body = request.body
    # The system prompt is the separate parameter, not a message.
    assert text_of(body["system"]) == SYSTEM
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert QUESTION in text_of(body["messages"][0]["content"])
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "Checking."},
        {"id": "call_1", "type": "tool_use", "name": "get_weather", "input": {"city": "Paris"}},
    ]
    assert body["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "call_1",
            "content": [{"type": "text", "text": RESULT}],
        }
    ]
    assert body["tools"][0]["name"] == "get_weather"
    assert body["tools"][0]["input_schema"] == TOOLS[0]["function"]["parameters"]  # type: ignore[index]


@pytest.mark.parametrize(
    "formatter", [GeminiChatFormatter(), GeminiMultiAgentFormatter()], ids=type
)
async def test_gemini_request(wire: WireServer, formatter: FormatterBase) -> None:
    wire.add(Reply(body=gemini_response({"text": "Sunny."}, prompt_tokens=9, output_tokens=2)))
    messages = await formatter.format(conversation(), tools=TOOLS)
    model = GeminiChatModel(
        "gemini-2.5-flash",
        api_key=KEY,
        stream=False,
        client_kwargs={"base_url": wire.url},
        retry_config=FAST,
    )
    await model(messages, tools=TOOLS)
    [request] = wire.requests
    assert request.path.endswith("/models/gemini-2.5-flash:generateContent")
    body = request.body
    assert body["systemInstruction"] == {"parts": [{"text": SYSTEM}]}
    contents = body["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert QUESTION in contents[0]["parts"][0]["text"]
    # The call has no id of its own (Gemini assigns none); the null is not sent.
    assert contents[1]["parts"] == [
        {"text": "Checking."},
        {"function_call": {"name": "get_weather", "args": {"city": "Paris"}}},
    ]
    assert contents[2]["parts"] == [
        {
            "function_response": {
                "id": "call_1",
                "name": "get_weather",
                "response": {"output": RESULT},
            }
        }
    ]
    declarations = body["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == ["get_weather"]


@pytest.mark.parametrize(
    "formatter", [OllamaChatFormatter(), OllamaMultiAgentFormatter()], ids=type
)
async def test_ollama_request(wire: WireServer, formatter: FormatterBase) -> None:
    wire.add(Reply(body=ollama_chunk("Sunny.", done=True, prompt_eval_count=9, eval_count=2)))
    messages = await formatter.format(conversation(), tools=TOOLS)
    model = OllamaChatModel("qwen3:0.6b", stream=False, host=wire.url, retry_config=FAST)
    await model(messages, tools=TOOLS)
    [request] = wire.requests
    assert request.path == "/api/chat"
    # Ollama takes the arguments as an object, not a JSON string.
    check_openai_style(request.body["messages"], {"city": "Paris"})
    assert request.body["tools"][0]["function"]["name"] == "get_weather"


@pytest.mark.parametrize(
    "formatter", [AnthropicChatFormatter(), AnthropicMultiAgentFormatter()], ids=type
)
async def test_anthropic_thinking_signature_round_trip(
    wire: WireServer, formatter: FormatterBase
) -> None:
    # Turn 1: the model thinks (signed) and calls a tool.
    signature = "EqQBCkYIBxgCKkDs+/sig=="
    wire.add(
        Reply(
            body=anthropic_message(
                [
                    {"type": "thinking", "thinking": "Need the weather.", "signature": signature},
                    {"type": "tool_use", "id": "tu_1", "name": "get_weather", "input": {}},
                ]
            )
        ),
        Reply(body=anthropic_message([{"type": "text", "text": "Sunny."}])),
    )
    model = AnthropicChatModel(
        "claude-test",
        api_key=KEY,
        stream=False,
        client_kwargs={"base_url": wire.url},
        retry_config=FAST,
    )
    history = [Msg("system", SYSTEM, "system"), Msg("user", QUESTION, "user")]
    async with model:
        first = await model(await formatter.format(history), tools=TOOLS)
        assert isinstance(first, ChatResponse)
        history += [
            Msg("bot", [ThinkingBlock("Reasoning kept elsewhere.")], "assistant"),
            Msg("bot", list(first.content), "assistant"),
            Msg(
                "system",
                [ToolResultBlock(id="tu_1", name="get_weather", output=[TextBlock(RESULT)])],
                "system",
            ),
        ]
        # Turn 2: the signed block goes back unchanged; the unsigned one (which the API would
        # refuse) is left out together with the message it was alone in.
        formatted = await formatter.format(history)
        await model(formatted, tools=TOOLS)
    if isinstance(formatter, AnthropicChatFormatter):
        # The formatter keeps AgentScope's shape for the unsigned block; the model drops it.
        assert {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "Reasoning kept elsewhere."}],
        } in formatted
    sent = wire.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"][0] == {
        "type": "thinking",
        "thinking": "Need the weather.",
        "signature": signature,
    }
    assert sent[1]["content"][1]["type"] == "tool_use"
    thinking_sent = [b for m in sent if isinstance(m["content"], list) for b in m["content"]]
    assert all(b.get("signature") for b in thinking_sent if b.get("type") == "thinking")


DATA = Path(__file__).parent / "data"
WEB_IMAGE = "https://example.com/cat.png"
WEB_VIDEO = "https://example.com/clip.mp4"


def media_conversation() -> list[Msg]:
    return [
        Msg("system", SYSTEM, "system"),
        Msg(
            "user",
            [
                TextBlock("What do these show?"),
                ImageBlock(URLSource(WEB_IMAGE)),
                ImageBlock(URLSource(str(DATA / "pixel.png"))),
                AudioBlock(URLSource(str(DATA / "tone.wav"))),
                AudioBlock(Base64Source("audio/mpeg", "SUQzBA==")),
                VideoBlock(URLSource(WEB_VIDEO)),
                VideoBlock(URLSource(str(DATA / "clip.mp4"))),
            ],
            "user",
        ),
        Msg("bot", "A cat, a pixel, a tone and two clips.", "assistant"),
        Msg("user", "Thanks.", "user"),
    ]


@pytest.mark.parametrize(
    "formatter", [DashScopeChatFormatter(), DashScopeMultiAgentFormatter()], ids=type
)
async def test_dashscope_media_reach_the_server_in_compatible_shape(
    wire: WireServer, formatter: FormatterBase
) -> None:
    wire.add(Reply(body=openai_completion("Understood.")))
    messages = await formatter.format(media_conversation())
    # The formatter's output is DashScope-native (as AgentScope's); keep a copy to show the
    # model does not modify it.
    native = copy.deepcopy(messages)
    assert any(
        "image" in part for m in messages if isinstance(m["content"], list) for part in m["content"]
    )
    model = DashScopeChatModel(
        "qwen-omni-turbo",
        api_key=KEY,
        stream=False,
        base_http_api_url=wire.url + "/compatible-mode/v1",
        retry_config=FAST,
    )
    async with model:
        await model(messages)
    assert messages == native
    [request] = wire.requests
    sent = request.body["messages"]
    parts = [p for m in sent if isinstance(m["content"], list) for p in m["content"]]
    # Every part is typed: nothing native is left.
    assert parts and all("type" in p for p in parts)
    media = [p for p in parts if p["type"] != "text"]
    pixel = base64.b64encode((DATA / "pixel.png").read_bytes()).decode()
    # The WAV MIME type (audio/wav or audio/x-wav) depends on the platform's tables.
    [tone_url] = [
        p["audio"]
        for m in native
        if isinstance(m["content"], list)
        for p in m["content"]
        if str(p.get("audio", "")).startswith("data:audio/") and "wav" in p["audio"].split(";")[0]
    ]
    assert tone_url.endswith(base64.b64encode((DATA / "tone.wav").read_bytes()).decode())
    clip = base64.b64encode((DATA / "clip.mp4").read_bytes()).decode()
    assert media == [
        {"type": "image_url", "image_url": {"url": WEB_IMAGE}},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{pixel}"}},
        {
            "type": "input_audio",
            "input_audio": {"data": tone_url, "format": "wav"},
        },
        {
            "type": "input_audio",
            "input_audio": {"data": "data:audio/mpeg;base64,SUQzBA==", "format": "mp3"},
        },
        {"type": "video_url", "video_url": {"url": WEB_VIDEO}},
        {"type": "video_url", "video_url": {"url": f"data:video/mp4;base64,{clip}"}},
    ]
    texts = " ".join(p["text"] for p in parts if p["type"] == "text")
    assert "What do these show?" in texts
    assert sent[0] == {"role": "system", "content": SYSTEM}
