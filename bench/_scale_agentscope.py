"""AgentScope's half of the creation benchmark; run by ``bench_scale.py`` with an AgentScope venv.

Usage: ``python _scale_agentscope.py COUNT`` builds one agent (warm-up), then COUNT agents
timed, then COUNT agents again under ``tracemalloc``, and prints one JSON line
``{"version", "us_per_agent", "bytes_per_agent"}``. The workload matches ``bench_scale.py``:
each agent is a ReActAgent with its own one-tool Toolkit and memory; the model and formatter
are shared by all agents (as in a simulation), console output off.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
import tracemalloc
from typing import Any

os.environ["AGENTSCOPE_DISABLE_CONSOLE_OUTPUT"] = "true"

import agentscope
from agentscope.agent import ReActAgent
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import TextBlock
from agentscope.model import ChatModelBase, ChatResponse
from agentscope.tool import Toolkit, ToolResponse


class IdleModel(ChatModelBase):
    """Never called: the agents stay idle."""

    def __init__(self) -> None:
        super().__init__("idle", stream=False)

    async def __call__(self, *args: Any, **kwargs: Any) -> ChatResponse:
        return ChatResponse(content=[TextBlock(type="text", text="ok")])


async def get_weather(city: str) -> ToolResponse:
    """Get the weather of a city.

    Args:
        city (str): the city.
    """
    return ToolResponse(content=[TextBlock(type="text", text=f"Sunny in {city}.")])


MODEL = IdleModel()
FORMATTER = OpenAIChatFormatter()


def make_agent(index: int) -> ReActAgent:
    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    agent = ReActAgent(
        name=f"agent{index}",
        sys_prompt="You are a helpful assistant.",
        model=MODEL,
        formatter=FORMATTER,
        toolkit=toolkit,
    )
    if hasattr(agent, "set_console_output_enabled"):
        agent.set_console_output_enabled(False)
    else:
        agent.disable_console_output()
    return agent


def main(count: int) -> dict[str, Any]:
    make_agent(-1)
    gc.collect()
    started = time.perf_counter()
    agents = [make_agent(i) for i in range(count)]
    seconds = time.perf_counter() - started
    del agents
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    agents = [make_agent(i) for i in range(count)]
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return {
        "version": agentscope.__version__,
        "us_per_agent": seconds * 1e6 / count,
        "bytes_per_agent": (after - before) / len(agents),
    }


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]))), flush=True)
