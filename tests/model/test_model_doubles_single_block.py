"""A single block is accepted as a whole scripted response."""

from __future__ import annotations

from agentscope_rt.message import TextBlock, ToolUseBlock
from agentscope_rt.model import ChatResponse, ScriptedChatModel, tool_call


async def test_a_single_block_is_a_response_of_one_block() -> None:
    model = ScriptedChatModel([tool_call("get_weather", {"city": "Paris"}), "It is sunny."])
    first = await model([{"role": "user", "content": "Weather?"}])
    assert isinstance(first, ChatResponse)
    assert len(first.content) == 1 and isinstance(first.content[0], ToolUseBlock)
    assert first.content[0].input == {"city": "Paris"}
    second = await model([{"role": "user", "content": "Weather?"}])
    assert isinstance(second, ChatResponse)
    assert second.content == [TextBlock(text="It is sunny.")]
