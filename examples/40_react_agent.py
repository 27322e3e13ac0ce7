"""A tool-using ReActAgent on a real model, printing as it streams; then three tools at once.

1. A ``ReActAgent`` with one tool, ``get_weather``, on a real chat model: an OpenAI model when
   ``OPENAI_API_KEY`` is set, else SmolLM2-135M-Instruct in the process (llama.cpp, the
   ``local`` extra; no key, no network). The model streams, and the agent prints to the console
   as AgentScope agents do: the text as it grows, then each tool call and its result. The model
   decides by itself whether to call the tool; nothing forces its choice.
2. A scripted model (``ScriptedChatModel``, deterministic) calls three tools in one step; with
   ``parallel_tool_calls=True`` the two slow lookups run side by side, the results are recorded
   in call order and the reply carries the summed usage.

Run: ``python examples/40_react_agent.py`` (asyncio) or
``python examples/40_react_agent.py trio``.

What to look for: in part 1, ``Friday:`` lines appear piece by piece while the model writes.
A large model calls ``get_weather`` and answers from its result. SmolLM2-135M is a very small
model: it may call the tool and answer from the result, or answer straight away and make the
weather up; the summary after the reply says which it did (tool calls made, why the reply
ended). Part 2 prints three tool calls, three results, and a reply time of about 0.3 s for two
0.3 s lookups: they overlapped.
"""

from __future__ import annotations

import sys
import time

import anyio
from _models import pick_chat_model

import agentscope_rt.formatter
from agentscope_rt.agent import ReActAgent
from agentscope_rt.exception import ModelResponseError
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import ChatUsage, ScriptedChatModel, reply, tool_call
from agentscope_rt.tool import Toolkit, ToolResponse

WEATHER = {"paris": "sunny, 21 °C", "oslo": "light snow, -3 °C", "lima": "cloudy, 17 °C"}


def get_weather(city: str) -> ToolResponse:
    """Get the current weather of a city.

    Args:
        city: the name of the city, e.g. "Paris".
    """
    report = WEATHER.get(city.strip().lower(), "no data")
    return ToolResponse(content=[TextBlock(text=f"Weather in {city}: {report}.")])


async def slow_lookup(city: str) -> ToolResponse:
    """Look up a city's population (takes a while).

    Args:
        city: the city.
    """
    await anyio.sleep(0.3)
    return ToolResponse(content=[TextBlock(text=f"{city}: about 2 million people.")])


async def tool_calls_of(agent: ReActAgent) -> list[str]:
    """The tool calls the agent's model made, as ``name(arguments)``."""
    return [
        f"{block.name}({block.input})"
        for msg in await agent.memory.get_memory()
        for block in msg.get_content_blocks("tool_use")
    ]


async def with_a_real_model() -> None:
    model, formatter_name = pick_chat_model(
        stream=True, generate_kwargs={"temperature": 0.0, "seed": 7, "max_tokens": 64}
    )
    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    agent = ReActAgent(
        name="Friday",
        sys_prompt=(
            "You are a helpful assistant. For weather questions, call get_weather, then answer "
            "in one short sentence based on its result."
        ),
        model=model,
        formatter=getattr(agentscope_rt.formatter, formatter_name)(),
        toolkit=toolkit,
        max_iters=3,
    )
    print(f"1) {model.model_name} with one tool (the agent prints as the model streams)")
    try:
        await agent(Msg("user", "What is the weather in Paris?", "user"))
    except ModelResponseError:
        # A small model may ramble past max_tokens inside its JSON answer, which then cannot
        # be read; the model reports that as an error rather than guess.
        print("\n   the model's answer ran past its token limit and could not be read")
    calls = await tool_calls_of(agent)
    print(f"\n   summary: tool calls {calls or 'none'}; the reply ended by {agent.generate_reason}")
    if not calls:
        print(
            "   The model answered without asking the tool, so its answer is not based on the\n"
            "   weather data; a 135M-parameter model often does this. An API model\n"
            "   (set OPENAI_API_KEY) is expected to call the tool here."
        )
    print(f"   usage: {agent.usage}")


async def parallel_tools_scripted() -> None:
    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    toolkit.register_tool_function(slow_lookup)
    usage = ChatUsage(input_tokens=120, output_tokens=30)
    model = ScriptedChatModel(
        [
            reply(
                tool_call("slow_lookup", {"city": "Paris"}),
                tool_call("slow_lookup", {"city": "Lima"}),
                tool_call("get_weather", {"city": "Oslo"}),
                usage=usage,
            ),
            reply(
                "Paris and Lima have about 2 million people each; Oslo has light snow.", usage=usage
            ),
        ]
    )
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are a helpful assistant.",
        model=model,
        formatter=agentscope_rt.formatter.OpenAIChatFormatter(),
        toolkit=toolkit,
        parallel_tool_calls=True,
    )
    print("\n2) a scripted model calling three tools in parallel")
    start = time.perf_counter()
    await agent(Msg("user", "Populations of Paris and Lima, weather in Oslo?", "user"))
    elapsed = time.perf_counter() - start
    print(f"\n   two 0.3 s lookups ran side by side: the reply took {elapsed:.2f} s")
    print(f"   summed usage of the reply: {agent.usage}")


async def main() -> None:
    await with_a_real_model()
    await parallel_tools_scripted()


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
