"""Chat with a real language model offline: SmolLM2-135M-Instruct, in-process via llama.cpp.

The model is the file ``agentscope-rt-fetch-model`` keeps (after ``pip install -e ".[local]"``
in a clone; ``nox -s examples`` runs both), so this needs no API key and no network. The reply
streams token by token while a second task keeps ticking — generation runs in a worker thread
and never blocks the event loop. Then the same model makes a well-formed tool call thanks to
JSON-schema-constrained generation.

Run: ``python examples/11_local_model_chat.py`` (asyncio) or
``python examples/11_local_model_chat.py trio``.

What to look for: the answer appears token by token after ``SmolLM2-135M-Instruct...:``, then
the token counts and how many times the event loop ticked meanwhile (many: generation did not
block it). Then one well-formed ``get_weather`` call with ``{'city': 'Paris'}``. The answer's
wording is the small model's own and may be odd; the call's shape is guaranteed by the
JSON-schema constraint.
"""

from __future__ import annotations

import sys
from contextlib import aclosing

import anyio

from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import ChatResponse, LlamaCppChatModel

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


async def main() -> None:
    model = LlamaCppChatModel(stream=True, generate_kwargs={"max_tokens": 48, "temperature": 0})
    formatter = OpenAIChatFormatter()
    messages = await formatter.format(
        [
            Msg("system", "You are a helpful assistant.", "system"),
            Msg("user", "What is the capital of France?", "user"),
        ]
    )

    ticks = 0
    done = anyio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            await anyio.sleep(0.05)
            ticks += 1

    printed = ""
    last: ChatResponse | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        print(f"{model.model_name}: ", end="", flush=True)
        stream = await model(messages)
        assert not isinstance(stream, ChatResponse)
        async with aclosing(stream):
            async for chunk in stream:
                text = chunk.get_text()
                print(text[len(printed) :], end="", flush=True)
                printed, last = text, chunk
        done.set()
    print()
    assert last is not None and last.usage is not None
    print(
        f"[{last.usage.input_tokens} prompt tokens, {last.usage.output_tokens} generated in "
        f"{last.usage.time:.1f} s; the event loop ticked {ticks} times meanwhile]"
    )

    model.stream = False
    question = await formatter.format([Msg("user", "What is the weather in Paris?", "user")])
    answer = await model(question, tools=[WEATHER_TOOL], tool_choice="required", max_tokens=32)
    assert isinstance(answer, ChatResponse)
    for call in answer.tool_calls:
        print(f"tool call {call.id}: {call.name}({call.input})")


if __name__ == "__main__":
    backend = sys.argv[1] if len(sys.argv) > 1 else "asyncio"
    anyio.run(main, backend=backend)
