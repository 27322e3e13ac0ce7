"""Writes the AgentScope 1.0.21 session files in data/agentscope_1_0_21/.

Run it with a Python that has agentscope==1.0.21 installed:

python tests/session/make_fixtures.py tests/session/data/agentscope_1_0_21
"""

import asyncio
import logging
import sys

from agentscope.agent import ReActAgent
from agentscope.formatter import OpenAIChatFormatter
from agentscope.memory import InMemoryMemory
from agentscope.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from agentscope.model import ChatModelBase
from agentscope.session import JSONSession
from agentscope.tool import Toolkit, ToolResponse


def get_weather(city: str) -> ToolResponse:
    """Get the weather.

    Args:
        city (str): The city.
    """
    return ToolResponse(content=[TextBlock(type="text", text="sunny")])


class M(ChatModelBase):
    """A model that is never called."""

    def __init__(self) -> None:
        super().__init__("m", False)

    async def __call__(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError("not called")


async def main(out: str) -> None:
    toolkit = Toolkit()
    toolkit.create_tool_group("weather", "Weather tools", active=True)
    toolkit.register_tool_function(get_weather, group_name="weather")
    toolkit.create_tool_group("travel", "Travel tools", active=False)
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are Friday.",
        model=M(),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
    )
    msgs = [
        Msg("user", "Weather in Paris? café ☕", "user"),
        Msg(
            "Friday",
            [
                TextBlock(type="text", text="Let me check."),
                ToolUseBlock(
                    type="tool_use", id="call_1", name="get_weather", input={"city": "Paris"}
                ),
            ],
            "assistant",
        ),
        Msg(
            "system",
            [
                ToolResultBlock(
                    type="tool_result",
                    id="call_1",
                    name="get_weather",
                    output=[TextBlock(type="text", text="sunny")],
                )
            ],
            "system",
        ),
        Msg("Friday", "It is sunny in Paris.", "assistant", metadata={"mood": "happy"}),
    ]
    for m in msgs:
        await agent.memory.add(m)
    await agent.memory.update_messages_mark("important", msg_ids=[msgs[0].id])
    notes = InMemoryMemory()
    await notes.add(Msg("user", "remember: Paris", "user"))
    session = JSONSession(save_dir=out)
    await session.save_session_state("chat_1", user_id="alice", friday=agent, notes=notes)
    await session.save_session_state("chat_2", friday=agent)


if __name__ == "__main__":
    logging.disable(logging.CRITICAL)
    asyncio.run(main(sys.argv[1]))
