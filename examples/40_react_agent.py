"""A tool-using ReAct agent: the model calls a real tool, reads its result and answers.

Runs offline: with no ``OPENAI_API_KEY`` the model is SmolLM2-135M-Instruct in-process
(llama.cpp, the ``local`` extra). That small model calls tools reliably only when it is offered
one obvious tool and is *required* to call it, so a ``pre_reasoning`` hook asks for a tool call
until the tool has answered and for plain text afterwards (hooks may rewrite the arguments of
the step they wrap). A larger model is left to decide by itself.

The second part replays a scripted model to show what the small model cannot do reliably:
two tools called in parallel, results recorded in call order, and the reply's summed usage.

Run with ``python examples/40_react_agent.py`` (add ``trio`` to run on trio).
"""

from __future__ import annotations

import pathlib
import sys
import time
from typing import Any

import anyio

import agentscope_rt.formatter
from agentscope_rt.agent import ReActAgent
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import ChatUsage, LlamaCppChatModel, ScriptedChatModel, reply, tool_call
from agentscope_rt.tool import Toolkit, ToolResponse

# The examples share a helper module next to them; make it importable however we are run.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _models import pick_chat_model

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


async def tool_first(agent: ReActAgent, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Require a tool call until a tool result is in memory, then a plain answer."""
    answered = any(m.has_content_blocks("tool_result") for m in await agent.memory.get_memory())
    return {**kwargs, "tool_choice": "none" if answered else "required"}


def show(messages: list[Msg]) -> None:
    for msg in messages:
        for block in msg.get_content_blocks():
            if block.type == "text":
                print(f"  {msg.name:>8}: {block.text}")
            elif block.type == "tool_use":
                print(f"  {msg.name:>8}: -> {block.name}({block.input})")
            elif block.type == "tool_result":
                output = block.output
                text = output if isinstance(output, str) else " ".join(b.text for b in output)
                print(f"  {'tool':>8}: <- {text}")


async def with_a_real_model() -> None:
    model, formatter_name = pick_chat_model(
        generate_kwargs={"temperature": 0.0, "seed": 7, "max_tokens": 48}
    )
    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    agent = ReActAgent(
        name="Friday",
        sys_prompt=(
            "You are a helpful assistant. Use the tools you are given, then answer the user "
            "in one short sentence based on the tool result."
        ),
        model=model,
        formatter=getattr(agentscope_rt.formatter, formatter_name)(),
        toolkit=toolkit,
        max_iters=3,
    )
    agent.set_console_output_enabled(False)
    if isinstance(model, LlamaCppChatModel):
        agent.register_instance_hook("pre_reasoning", "tool_first", tool_first)

    print(f"1) {model.model_name} with one tool")
    answer = await agent(Msg("user", "What is the weather in Paris?", "user"))
    show(await agent.memory.get_memory())
    print(f"  generate_reason={agent.generate_reason}, metadata={answer.metadata}")
    print(f"  usage={agent.usage}")


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
    agent.set_console_output_enabled(False)
    print("\n2) a scripted model calling three tools in parallel")
    start = time.perf_counter()
    answer = await agent(Msg("user", "Populations of Paris and Lima, weather in Oslo?", "user"))
    elapsed = time.perf_counter() - start
    show(await agent.memory.get_memory())
    print(f"  two 0.3 s lookups ran side by side: the reply took {elapsed:.2f} s")
    print(f"  {answer.get_text_content()!r}; summed usage of the reply: {agent.usage}")


async def main() -> None:
    await with_a_real_model()
    await parallel_tools_scripted()


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
