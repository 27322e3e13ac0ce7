"""What the session tests save: an agent like the one in AgentScope's fixtures, and a memory."""

from __future__ import annotations

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.tool import Toolkit, ToolResponse


def get_weather(city: str) -> ToolResponse:
    """Get the weather.

    Args:
        city (str): The city.
    """
    return ToolResponse(content=[])


def make_agent(name: str = "Friday", sys_prompt: str = "You are Friday.") -> ReActAgent:
    """The agent of the fixtures: a weather group (active) and a travel group (inactive)."""
    toolkit = Toolkit()
    toolkit.create_tool_group("weather", "Weather tools", active=False)
    toolkit.register_tool_function(get_weather, group_name="weather")
    toolkit.create_tool_group("travel", "Travel tools", active=False)
    agent = ReActAgent(
        name=name,
        sys_prompt=sys_prompt,
        model=ScriptedChatModel([]),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
    )
    return agent


def make_memory() -> InMemoryMemory:
    return InMemoryMemory()
