"""OpenAITokenCounter counts an image by its size, never its base64 text.

AgentScope's own test prompt (tests/token_openai_test.py in AgentScope 1.0.21: a 550x550 PNG
inline, a web JPEG, a few text turns and a tool call) is rebuilt here with images of the same
sizes, the web one served from 127.0.0.1. The base64 payload (~32,000 characters) must cost
what OpenAI's tile formula says, not thousands of text tokens; the web image, whose size cannot
be known offline, is fetched as AgentScope does (it was counted as 1024x1024 before), but only
its header.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

from agentscope_rt.token import OpenAITokenCounter
from agentscope_rt.token._openai_token_counter import image_tokens

from .._local_http import LocalHTTPServer, QuietHandler


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


def _jpeg(width: int, height: int) -> bytes:
    """A JPEG header (SOI, APP0, SOF0) of *width* x *height*, then filler."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof0 + b"\x00" * 4096 + b"\xff\xd9"


class _ImageServer(QuietHandler):
    """/dog.jpg: a 1280x720 JPEG (6 tiles, as AgentScope's web test image); /big.png: 2 MiB
    that are no image; anything else 404."""

    hits: list[str]

    def do_GET(self) -> None:
        self.hits.append(self.path)
        path = self.path.split("?", 1)[0]
        bodies = {
            "/dog.jpg": (_jpeg(1280, 720), "image/jpeg"),
            "/big.png": (b"x" * (2 << 20), "image/png"),
        }
        if path not in bodies:
            self.send_error(404)
            return
        body, content_type = bodies[path]
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        # The counter stops reading once it has the header.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)


@pytest.fixture
def images() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []
    handler = type("Handler", (_ImageServer,), {"hits": hits})
    with LocalHTTPServer(handler) as server:
        yield server.url, hits


def _agentscope_prompt(image_url: str, web_url: str | None = None) -> list[dict[str, Any]]:
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
                *([{"type": "image_url", "image_url": {"url": web_url}}] if web_url else []),
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


@pytest.mark.parametrize(
    ("model", "agentscope"),
    [
        ("o3-mini", 1796),  # AgentScope 1.0.21's own figure
        ("gpt-4o", 146 + (85 + 170 * 4) + (85 + 170 * 6)),
    ],
)
async def test_web_image_is_counted_by_its_fetched_size(
    images: tuple[str, list[str]], model: str, agentscope: int
) -> None:
    base, hits = images
    counter = OpenAITokenCounter(model)
    count = await counter.count(_agentscope_prompt(INLINE, base + "/dog.jpg"))
    # Within one token: the text is counted with cl100k_base offline, o200k_base there.
    assert abs(count - agentscope) <= 1
    # Remembered: counting again (as truncation does) fetches nothing more.
    assert await counter.count(_agentscope_prompt(INLINE, base + "/dog.jpg")) == count
    assert hits == ["/dog.jpg"]


async def test_other_payload_shapes_fetch_web_images_too(images: tuple[str, list[str]]) -> None:
    base, _ = images
    counter = OpenAITokenCounter("gpt-4o")
    six_tiles = 85 + 170 * 6
    anthropic = [
        {
            "role": "user",
            "content": [{"type": "image", "source": {"type": "url", "url": base + "/dog.jpg"}}],
        }
    ]
    dashscope = [{"role": "user", "content": [{"image": base + "/dog.jpg"}]}]
    for prompt in (anthropic, dashscope):
        assert await counter.count(prompt) == 3 + 3 + 1 + six_tiles


async def test_unreadable_web_image_counts_as_the_default_size(
    images: tuple[str, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    base, hits = images
    counter = OpenAITokenCounter("gpt-4o")
    default = 85 + 170 * 4
    with caplog.at_level(logging.WARNING):
        missing = await counter.count(_agentscope_prompt(INLINE, base + "/gone.png?sig=SECRET"))
        junk = await counter.count(_agentscope_prompt(INLINE, base + "/big.png"))
    text_and_inline = await counter.count(_agentscope_prompt(INLINE))
    assert missing == junk == text_and_inline + default
    # Tried three times as AgentScope does, then remembered.
    assert hits.count("/gone.png?sig=SECRET") == 3
    assert "could not read the size" in caplog.text
    assert "SECRET" not in caplog.text


async def test_fetching_can_be_turned_off(images: tuple[str, list[str]]) -> None:
    base, hits = images
    counter = OpenAITokenCounter("gpt-4o", fetch_web_images=False)
    count = await counter.count(_agentscope_prompt(INLINE, base + "/dog.jpg"))
    assert count == await counter.count(_agentscope_prompt(INLINE)) + 85 + 170 * 4
    assert hits == []
    assert "fetch_web_images=False" in repr(counter)


async def test_unknown_detail_of_a_web_image_is_refused_before_fetching(
    images: tuple[str, list[str]],
) -> None:
    base, hits = images
    prompt = [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": base + "/dog.jpg", "detail": "max"}}
            ],
        }
    ]
    with pytest.raises(ValueError, match="detail"):
        await OpenAITokenCounter("gpt-4o").count(prompt)
    assert hits == []
