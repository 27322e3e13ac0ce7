"""Test doubles: drive a tool-using conversation with scripted and function models, offline.

Shows ``ScriptedChatModel`` (replay + call recording + streaming + structured output) and
``FunctionChatModel`` (answers computed from the conversation), called directly, without an
agent (the other examples hand them to a ``ReActAgent``).

Run: ``python examples/10_models_doubles.py`` (asyncio) or
``python examples/10_models_doubles.py trio``.

What to look for: two tool calls answered in one step, then the scripted answer and the count
of recorded calls; the function model's answer quoting the tool's result; the streamed chunks
growing to the whole text; the structured output as a dict in ``metadata``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import pydantic

from agentscope_rt.model import (
    ChatResponse,
    FunctionChatModel,
    ScriptedChatModel,
    reply,
    thinking,
    tool_call,
)

WEATHER = {"Paris": "sunny, 21 °C", "Oslo": "rain, 8 °C"}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather of a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def get_weather(city: str) -> str:
    return WEATHER.get(city, "unknown")


async def tool_loop(model: Any, question: str) -> str:
    """A minimal ReAct-style loop: call the model, run its tool calls, repeat until it answers."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    while True:
        response = await model(messages, tools=TOOLS)
        assert isinstance(response, ChatResponse)
        if not response.tool_calls:
            return response.get_text()
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.input)},
                    }
                    for c in response.tool_calls
                ],
            }
        )
        for call in response.tool_calls:
            result = get_weather(**call.input)
            print(f"  tool {call.name}({call.input}) -> {result}")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


class Forecast(pydantic.BaseModel):
    city: str
    summary: str


async def main() -> None:
    print("1. Scripted model: two tool calls in one response, then an answer")
    scripted = ScriptedChatModel(
        [
            reply(
                thinking("Two cities: call the tool twice."),
                tool_call("get_weather", {"city": "Paris"}),
                tool_call("get_weather", {"city": "Oslo"}),
            ),
            "Paris is sunny; Oslo is rainy.",
        ]
    )
    answer = await tool_loop(scripted, "Weather in Paris and Oslo?")
    print(f"  answer: {answer}")
    print(
        f"  the model was called {len(scripted.calls)} times; the second call saw "
        f"{len(scripted.calls[1].messages)} messages"
    )

    print("2. Function model: the answer is computed from the conversation")

    def weather_bot(messages: list[dict[str, Any]], tools: Any) -> Any:
        last = messages[-1]
        if last["role"] == "user":
            city = last["content"].rsplit(" ", 1)[-1].strip("?")
            return [tool_call("get_weather", {"city": city})]
        return f"The forecast says: {last['content']}."

    print(f"  answer: {await tool_loop(FunctionChatModel(weather_bot), 'Weather in Oslo?')}")

    print("3. Streaming: cumulative chunks")
    streaming = ScriptedChatModel(["Streaming shows the text as it grows."], stream=True)
    async for chunk in await streaming([{"role": "user", "content": "Stream!"}]):  # type: ignore[union-attr]
        print(f"  {'last ' if chunk.is_last else 'chunk'} {chunk.get_text()!r}")

    print("4. Structured output, validated into metadata")
    structured = ScriptedChatModel([reply("", metadata={"city": "Paris", "summary": "sunny"})])
    response = await structured(
        [{"role": "user", "content": "Forecast?"}], structured_model=Forecast
    )
    print(f"  metadata: {response.metadata}")  # type: ignore[union-attr]


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
