"""LlamaCppChatModel with the real SmolLM2-135M-Instruct model (the ``local`` extra).

Each constrained generation takes seconds on a small CPU, so these tests are few and use
small ``max_tokens``.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncGenerator
from contextlib import aclosing

import anyio
import pydantic
import pytest

from agentscope_rt.message import TextBlock, ToolUseBlock
from agentscope_rt.model import ChatResponse, LlamaCppChatModel

pytestmark = pytest.mark.local_model

GREEDY = {"temperature": 0.0, "seed": 7}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


async def test_chat_completion_streams_cumulative_text_with_usage() -> None:
    model = LlamaCppChatModel(stream=True, generate_kwargs={**GREEDY, "max_tokens": 12})
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": [{"type": "text", "text": "What is the capital of France?"}]},
    ]
    stream = await model(messages)
    assert isinstance(stream, AsyncGenerator)
    async with aclosing(stream):
        chunks = [chunk async for chunk in stream]
    assert len(chunks) >= 2
    texts = [c.get_text() for c in chunks]
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(texts))
    last = chunks[-1]
    assert last.is_last and not any(c.is_last for c in chunks[:-1])
    assert "Paris" in last.get_text()
    assert last.usage is not None
    assert last.usage.input_tokens > 10
    assert 0 < last.usage.output_tokens <= 13
    assert model.model_name == "SmolLM2-135M-Instruct.Q4_1"


async def test_required_tool_call_is_well_formed() -> None:
    model = LlamaCppChatModel(generate_kwargs={**GREEDY, "max_tokens": 32})
    response = await model(
        [{"role": "user", "content": "What is the weather in Paris?"}],
        tools=[WEATHER_TOOL],
        tool_choice="required",
    )
    assert isinstance(response, ChatResponse)
    (call,) = response.content
    assert isinstance(call, ToolUseBlock)
    assert call.name == "get_weather"
    assert call.id.startswith("call_")
    assert isinstance(call.input.get("city"), str) and call.raw_input is None
    assert "paris" in call.input["city"].lower()


async def test_structured_output_is_validated_into_metadata() -> None:
    class City(pydantic.BaseModel):
        name: str
        country: str

    model = LlamaCppChatModel(generate_kwargs={**GREEDY, "max_tokens": 32})
    response = await model(
        [{"role": "user", "content": "Describe the city of Paris: its name and country."}],
        structured_model=City,
    )
    assert isinstance(response, ChatResponse)
    assert response.metadata is not None
    assert set(response.metadata) == {"name", "country"}
    assert isinstance(response.content[0], TextBlock)


async def test_event_loop_keeps_running_during_generation() -> None:
    model = LlamaCppChatModel(generate_kwargs={**GREEDY, "max_tokens": 16})
    ticks = 0
    finished = anyio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not finished.is_set():
            await anyio.sleep(0.01)
            ticks += 1

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        response = await model([{"role": "user", "content": "Name three colours."}])
        finished.set()
    assert isinstance(response, ChatResponse) and response.get_text()
    # A blocked loop would tick about once in total; a free one ticks every ~10 ms of the
    # generation (16 tokens, about 0.5 s here). Counted, not compared with the elapsed time:
    # on a loaded machine the ticks come late, never early.
    assert ticks >= 5


async def test_closing_the_stream_early_frees_the_model() -> None:
    model = LlamaCppChatModel(stream=True, generate_kwargs={**GREEDY, "max_tokens": 200})
    stream = await model([{"role": "user", "content": "Tell me a long story about the sea."}])
    assert isinstance(stream, AsyncGenerator)
    async with aclosing(stream):
        first = await stream.__anext__()
    assert first.get_text() and not first.is_last
    # Closing released the model: the next call runs (a leaked lock would hang here).
    with anyio.fail_after(60):
        response = await model([{"role": "user", "content": "Hi"}], max_tokens=2)
    assert isinstance(response, AsyncGenerator)
    async with aclosing(response):
        chunks = [c async for c in response]
    assert chunks[-1].usage is not None and chunks[-1].usage.output_tokens <= 3


def test_missing_model_file_is_reported() -> None:
    with pytest.raises(FileNotFoundError, match=r"no-such\.gguf"):
        LlamaCppChatModel(model_path="no-such.gguf")
