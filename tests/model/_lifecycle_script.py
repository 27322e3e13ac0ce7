"""Run by test_model_client_lifecycle.py in a fresh interpreter: every provider makes calls
from ``asyncio.run(main())`` or ``trio.run(main)`` and is never closed, as AgentScope programs
do. Whatever the interpreter prints to stderr afterwards (ResourceWarning, "Event loop is
closed") is what the test looks for.

Usage: ``python _lifecycle_script.py asyncio|trio``
"""

from __future__ import annotations

import asyncio
import gc
import sys
from typing import Any

from agentscope_rt.model import (
    AnthropicChatModel,
    ChatModelBase,
    DashScopeChatModel,
    GeminiChatModel,
    OllamaChatModel,
    OpenAIChatModel,
)
from tests.model._wire_servers import (
    Reply,
    WireServer,
    anthropic_message,
    anthropic_stream,
    gemini_events,
    gemini_response,
    ndjson,
    ollama_chunk,
    openai_completion,
    openai_text_stream,
)

CHAT = [{"role": "user", "content": "hi"}]
GEMINI_CHAT = [{"role": "user", "parts": [{"text": "hi"}]}]


def models(wire: WireServer) -> dict[str, tuple[ChatModelBase, ...]]:
    """Each provider's plain and streaming model, with their answers scripted in the order
    :func:`main` calls them."""
    wire.add(
        Reply(body=openai_completion("ok")),
        Reply(events=openai_text_stream(["o", "k"])),
        Reply(body=anthropic_message([{"type": "text", "text": "ok"}])),
        Reply(events=anthropic_stream([("text", ["o", "k"])])),
        Reply(body=openai_completion("ok")),
        Reply(events=openai_text_stream(["o", "k"])),
        Reply(body=gemini_response({"text": "ok"}, prompt_tokens=1)),
        Reply(events=gemini_events(gemini_response({"text": "ok"}, prompt_tokens=1))),
        Reply(body=ollama_chunk("ok", done=True)),
        Reply(
            content_type="application/x-ndjson",
            events=ndjson(ollama_chunk("o"), ollama_chunk("k", done=True)),
        ),
    )
    made: dict[str, tuple[ChatModelBase, ...]] = {}
    for stream in (False, True):
        made.setdefault("openai", ())
        made["openai"] += (
            OpenAIChatModel(
                "m", api_key="k", stream=stream, client_kwargs={"base_url": wire.url + "/v1"}
            ),
        )
        made.setdefault("anthropic", ())
        made["anthropic"] += (
            AnthropicChatModel(
                "m", api_key="k", stream=stream, client_kwargs={"base_url": wire.url}
            ),
        )
        made.setdefault("dashscope", ())
        made["dashscope"] += (
            DashScopeChatModel("m", api_key="k", stream=stream, base_http_api_url=wire.url + "/v1"),
        )
    for stream in (False, True):
        made.setdefault("gemini", ())
        made["gemini"] += (
            GeminiChatModel("m", api_key="k", stream=stream, client_kwargs={"base_url": wire.url}),
        )
        made.setdefault("ollama", ())
        made["ollama"] += (OllamaChatModel("m", stream=stream, host=wire.url),)
    return made


async def call(name: str, model: ChatModelBase) -> None:
    result: Any = await model(GEMINI_CHAT if name == "gemini" else CHAT)
    if model.stream:
        async for chunk in result:
            result = chunk
    assert result.content, (name, result)


async def main(global_models: dict[str, tuple[ChatModelBase, ...]], wire: Any) -> None:
    # Models that live on after the loop, as module globals do...
    for name, pair in global_models.items():
        for model in pair:
            await call(name, model)
    # ...and models dropped while the loop still runs.
    local = models(wire)
    for name, pair in local.items():
        for model in pair:
            await call(name, model)
        print("ok", name)
    del local, pair, model
    gc.collect()


def run() -> None:
    backend = sys.argv[1]
    with WireServer() as wire:
        global_models = models(wire)
        if backend == "asyncio":
            asyncio.run(main(global_models, wire))
        else:
            import trio

            trio.run(main, global_models, wire)
        del global_models
        gc.collect()


if __name__ == "__main__":
    run()
