"""AgentScope's half of the ReAct benchmark; run by ``bench_react.py`` with an AgentScope venv.

Usage: ``python _react_agentscope.py WARMUP`` warms one agent up, prints
``{"version": ...}`` and then serves batches: for each line ``REPLIES`` read from stdin it runs
that many replies and prints ``{"us_per_reply": ...}`` (so that ``bench_react.py`` can
interleave AgentScope's batches with its own). The workload matches ``bench_react.py``:
the user asks, a zero-latency model calls one tool, the tool runs, the model answers; memory
is cleared between replies and console output is off.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable

os.environ["AGENTSCOPE_DISABLE_CONSOLE_OUTPUT"] = "true"

import agentscope
from agentscope.agent import ReActAgent
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import Msg, TextBlock, ToolUseBlock
from agentscope.model import ChatModelBase, ChatResponse
from agentscope.tool import Toolkit, ToolResponse


class ZeroLatencyModel(ChatModelBase):
    """Calls the tool when the last message is the user's, answers after the tool result."""

    def __init__(self) -> None:
        super().__init__("zero-latency", stream=False)

    async def __call__(self, messages, tools=None, tool_choice=None, **kwargs):  # type: ignore[no-untyped-def]
        if messages[-1]["role"] == "tool":
            return ChatResponse(content=[TextBlock(type="text", text="It is sunny in Paris.")])
        return ChatResponse(
            content=[
                ToolUseBlock(
                    type="tool_use", id="call_1", name="get_weather", input={"city": "Paris"}
                )
            ]
        )


async def get_weather(city: str) -> ToolResponse:
    """Get the weather of a city.

    Args:
        city (str): the city.
    """
    return ToolResponse(content=[TextBlock(type="text", text=f"Sunny in {city}.")])


async def make_workload() -> Callable[[], Awaitable[None]]:
    """One reply of the workload, on a fresh agent (built inside the loop that runs it)."""
    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are a helpful assistant.",
        model=ZeroLatencyModel(),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
    )
    if hasattr(agent, "set_console_output_enabled"):
        agent.set_console_output_enabled(False)
    else:
        agent.disable_console_output()

    async def one() -> None:
        await agent.memory.clear()
        reply = await agent(Msg("user", "What is the weather in Paris?", "user"))
        assert reply.get_text_content() == "It is sunny in Paris.", reply

    return one


def main() -> None:
    warmup = int(sys.argv[1])
    loop = asyncio.new_event_loop()
    one = loop.run_until_complete(make_workload())

    async def batch(replies: int) -> float:
        start = time.perf_counter()
        for _ in range(replies):
            await one()
        return (time.perf_counter() - start) / replies * 1e6

    loop.run_until_complete(batch(warmup))
    print(json.dumps({"version": agentscope.__version__}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            break
        us = loop.run_until_complete(batch(int(line)))
        print(json.dumps({"us_per_reply": us}), flush=True)
    loop.close()


if __name__ == "__main__":
    main()
