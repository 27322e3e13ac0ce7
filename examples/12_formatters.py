"""Formatters and token counting, offline.

One conversation (a system prompt, a tool call and its result, an image) formatted for
OpenAI, Anthropic and Gemini; then the same history truncated to a token budget counted
with tiktoken (offline), showing that the tool call and its result stay together.

Run: ``python examples/12_formatters.py`` (asyncio) or ``python examples/12_formatters.py trio``.

What to look for: the same five messages in each provider's shape (the tool call and result as
``tool_calls``/``tool`` for OpenAI, ``tool_use``/``tool_result`` blocks for Anthropic,
``function_call``/``function_response`` parts for Gemini; base64 shortened), the multi-agent
history folded into one user message, and the truncation lines: at smaller budgets fewer
messages are kept, the system prompt always, the tool call never without its result.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import sys
import zlib

import anyio

from agentscope_rt.formatter import (
    AnthropicChatFormatter,
    GeminiChatFormatter,
    OpenAIChatFormatter,
    OpenAIMultiAgentFormatter,
)
from agentscope_rt.message import (
    Base64Source,
    ImageBlock,
    Msg,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from agentscope_rt.token import OpenAITokenCounter


def tiny_png() -> str:
    """A 2x2 red PNG as base64, built in memory."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    raw = b"".join(b"\x00" + b"\xc8\x1e\x1e" * 2 for _ in range(2))
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )
    return base64.b64encode(png).decode()


def show(title: str, payload: list[dict]) -> None:
    text = json.dumps(payload, ensure_ascii=False, indent=1)
    # Shorten base64 so the output stays readable.
    print(f"--- {title}\n{re.sub(r'[A-Za-z0-9+/=]{40,}', '<base64>', text)}\n")


async def main() -> None:
    history = [
        Msg("system", "You are Friday, a weather assistant.", "system"),
        Msg(
            "user",
            [
                TextBlock(text="Is it sunny in Paris? Here's my view:"),
                ImageBlock(source=Base64Source(media_type="image/png", data=tiny_png())),
            ],
            "user",
        ),
        Msg(
            "Friday",
            [ToolUseBlock(id="call_1", name="get_weather", input={"city": "Paris"})],
            "assistant",
        ),
        Msg(
            "system",
            [ToolResultBlock(id="call_1", name="get_weather", output="Sunny, 21°C")],
            "system",
        ),
        Msg("Friday", "Yes: sunny and 21°C.", "assistant"),
    ]
    show("OpenAI", await OpenAIChatFormatter().format(history))
    show(
        "Anthropic (system prompt first; the model sends it as `system`)",
        await AnthropicChatFormatter().format(history),
    )
    show("Gemini", await GeminiChatFormatter().format(history))

    group = [
        Msg("system", "You are Bob.", "system"),
        Msg("Alice", "Shall we go to Lyon?", "user"),
        Msg("Carol", "Yes, by train.", "assistant"),
    ]
    show("OpenAI multi-agent", await OpenAIMultiAgentFormatter().format(group))

    # A long chat truncated to 150 tokens: the system prompt and newest turns are kept, and
    # the tool call is dropped together with its result, never alone.
    counter = OpenAITokenCounter("gpt-4")
    long_history = (
        history[:1]
        + [
            Msg("user", f"Old question number {i}: what about the weather in town {i}?", "user")
            for i in range(20)
        ]
        + history[2:]
    )
    full = await OpenAIChatFormatter().format(long_history)
    for budget in (400, 150, 60):
        kept = await OpenAIChatFormatter(token_counter=counter, max_tokens=budget).format(
            long_history
        )
        roles = [m["role"] for m in kept]
        n_full, n_kept = await counter.count(full), await counter.count(kept)
        print(
            f"budget {budget:>3}: {n_full} -> {n_kept} tokens, "
            f"{len(full)} -> {len(kept)} messages, roles {roles}"
        )


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
