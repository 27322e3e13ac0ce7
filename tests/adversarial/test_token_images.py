"""OpenAITokenCounter counts an inline image by its size, never its base64 text.

AgentScope's own test prompt (tests/token_openai_test.py in AgentScope 1.0.21: a 550x550 PNG
inline, a web JPEG, a few text turns and a tool call) is rebuilt here with an image of the same
size. The base64 payload (~32,000 characters) must cost what OpenAI's tile formula says, not
thousands of text tokens.
"""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

import pytest

from agentscope_rt.token import OpenAITokenCounter
from agentscope_rt.token._openai_token_counter import image_tokens


def _png(width: int, height: int) -> bytes:
    """A PNG of *width* x *height* (one IDAT of zeros: the counter reads only the header)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"\x00" * ((width + 1) * height))
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def _agentscope_prompt(image_url: str) -> list[dict[str, Any]]:
    def turn(role: str, text: str) -> dict[str, Any]:
        return {"role": role, "name": role, "content": [{"type": "text", "text": text}]}

    return [
        {
            "role": "system",
            "name": "system",
            "content": [{"type": "text", "text": "You're a helpful assistant."}],
        },
        {
            "role": "user",
            "name": "user",
            "content": [
                {"type": "text", "text": "What is the capital of France?"},
                {"type": "image_url", "image_url": {"url": image_url}},
            ],
        },
        turn("assistant", "The capital of France is Paris."),
        turn("user", "What is the capital of Germany?"),
        turn("assistant", "The capital of Germany is Berlin."),
        turn("user", "What is the capital of Japan?"),
        {
            "role": "assistant",
            "name": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "1",
                    "type": "function",
                    "function": {"name": "get_capital", "arguments": '{"country": "Japan"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "1", "content": "The capital of Japan is Tokyo."},
        turn("assistant", "The capital of Japan is Tokyo."),
    ]


def _without_image(prompt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    copy = [dict(message) for message in prompt]
    copy[1]["content"] = copy[1]["content"][:1]
    return copy


INLINE = "data:image/png;base64," + base64.b64encode(_png(550, 550)).decode()


@pytest.mark.parametrize(
    ("model", "image"),
    [
        # 550x550 is under 768 px: 2x2 tiles of 512 px.
        ("gpt-4o", 85 + 170 * 4),
        ("gpt-4.1", 85 + 170 * 4),
        ("o3-mini", 75 + 150 * 4),  # AgentScope's o3-mini figure for this image
        ("o1", 75 + 150 * 4),
        # OpenAI's published gpt-4o-mini prices (2833 + 5667 per tile), which its API reports.
        ("gpt-4o-mini", 2833 + 5667 * 4),
        ("gpt-4.1-mini", 525),  # ceil(18 x 18 patches of 32 px x 1.62)
    ],
)
async def test_inline_image_costs_its_tiles_not_its_base64(model: str, image: int) -> None:
    counter = OpenAITokenCounter(model)
    prompt = _agentscope_prompt(INLINE)
    with_image = await counter.count(prompt)
    text_only = await counter.count(_without_image(prompt))
    assert with_image - text_only == image
    # The text of AgentScope's prompt is ~150 tokens; 32,000 base64 characters as text would
    # be ~20,000 more.
    assert text_only < 200


async def test_agentscope_prompt_text_is_counted_as_agentscope_does() -> None:
    # AgentScope 1.0.21 counts this prompt, with a 550x550 image and a web image of 6 tiles,
    # as 1796 tokens on o3-mini: 146 for the text and tool call, 675 + 975 for the images.
    # Offline the text is counted with cl100k_base (o200k_base is not shipped): 147.
    counter = OpenAITokenCounter("o3-mini")
    text_only = await counter.count(_without_image(_agentscope_prompt(INLINE)))
    assert abs(text_only + 675 + image_tokens("o3-mini", 1280, 720) - 1796) <= 1
