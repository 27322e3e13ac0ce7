"""AgentScope's half of the ReAct benchmark; run by ``bench_react.py`` with an AgentScope venv.

Usage: ``python _react_agentscope.py REPLIES RUNS WARMUP`` prints one JSON object:
``{"version": ..., "us_per_reply": [run, ...]}``. The workload matches ``bench_react.py``:
the user asks, a zero-latency model calls one tool, the tool runs, the model answers; memory
is cleared between replies and console output is off.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

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


async def main(replies: int, runs: int, warmup: int) -> dict[str, object]:
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

    for _ in range(warmup):
        await one()
    results = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(replies):
            await one()
        results.append((time.perf_counter() - start) / replies * 1e6)
    return {"version": agentscope.__version__, "us_per_reply": results}


if __name__ == "__main__":
    replies, runs, warmup = (int(a) for a in sys.argv[1:4])
    print(json.dumps(asyncio.run(main(replies, runs, warmup))))
