"""Agents and tools the tracing tests share."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import TextBlock
from agentscope_rt.model import ChatModelBase, ChatUsage, ScriptedChatModel, reply, tool_call
from agentscope_rt.tool import Toolkit, ToolResponse
from agentscope_rt.tracing import trace

USAGE = ChatUsage(input_tokens=11, output_tokens=7)


@trace("inside_tool")
def inside_tool(city: str) -> str:
    """A function a tool calls: its span must be a child of the tool's."""
    return city.upper()


async def lookup(city: str) -> ToolResponse:
    """Look a city up.

    Args:
        city: the city.
    """
    await anyio.lowlevel.checkpoint()
    return ToolResponse(content=[TextBlock(text=f"{inside_tool(city)}: 2 million people")])


def weather(city: str) -> ToolResponse:
    """The weather of a city (a sync tool: it runs in a worker thread).

    Args:
        city: the city.
    """
    return ToolResponse(content=[TextBlock(text=f"{inside_tool(city)}: sunny")])


async def slow(seconds: float) -> ToolResponse:
    """Wait.

    Args:
        seconds: how long.
    """
    await anyio.sleep(seconds)
    return ToolResponse(content=[TextBlock(text="done")])


def toolkit() -> Toolkit:
    kit = Toolkit()
    kit.register_tool_function(lookup)
    kit.register_tool_function(weather)
    kit.register_tool_function(slow)
    return kit


def two_tools_model(stream: bool = False) -> ScriptedChatModel:
    return ScriptedChatModel(
        [
            reply(
                tool_call("lookup", {"city": "Paris"}, id="call_lookup"),
                tool_call("weather", {"city": "Oslo"}, id="call_weather"),
                usage=USAGE,
            ),
            reply("Paris has 2 million people; Oslo is sunny.", usage=USAGE),
        ],
        stream=stream,
    )


def agent(model: ChatModelBase, **kwargs: Any) -> ReActAgent:
    built = ReActAgent(
        name="Friday",
        sys_prompt="You are helpful.",
        model=model,
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit(),
        **kwargs,
    )
    built.set_console_output_enabled(False)
    return built
