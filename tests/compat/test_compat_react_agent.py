"""Port of AgentScope's ReAct agent example (``examples/agent/react_agent/main.py``).

A ReAct agent with AgentScope's built-in coding and file tools plus a tool function written the
AgentScope way (``TextBlock(type="text", ...)`` inside a ``ToolResponse``), asked two questions
in a row with a streaming model. Only the import and the model line differ from the original.
"""

from __future__ import annotations

from pathlib import Path

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import DashScopeChatFormatter
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from agentscope_rt.model import reply, tool_call
from agentscope_rt.tool import (
    Toolkit,
    ToolResponse,
    execute_python_code,
    execute_shell_command,
    view_text_file,
)

from ._support import cloud_model


def get_current_time(timezone: str) -> ToolResponse:
    """Get the current time in a timezone.

    Args:
        timezone (str):
            The timezone, e.g. "UTC+8".
    """
    return ToolResponse(
        content=[TextBlock(type="text", text=f"It is 12:00 in {timezone}.")],
    )


async def main(notes: Path) -> tuple[ReActAgent, list[Msg]]:
    """The example's main(), returning the agent and its replies for the checks below."""
    toolkit = Toolkit()
    toolkit.register_tool_function(execute_shell_command)
    toolkit.register_tool_function(execute_python_code)
    toolkit.register_tool_function(view_text_file)
    toolkit.register_tool_function(get_current_time)

    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are a helpful assistant named Friday.",
        model=cloud_model(
            reply(
                "Let me compute it.",
                tool_call("execute_python_code", {"code": "print(6 * 7)"}),
            ),
            reply(tool_call("view_text_file", {"file_path": str(notes)})),
            "6 * 7 is 42, and your notes say: buy milk.",
            reply(tool_call("get_current_time", {"timezone": "UTC+8"})),
            "It is 12:00 in UTC+8.",
        ),
        formatter=DashScopeChatFormatter(),
        toolkit=toolkit,
        memory=InMemoryMemory(),
    )
    agent.set_console_output_enabled(False)

    first = await agent(
        Msg("user", "What is 6 * 7, and what do my notes say?", "user"),
    )
    second = await agent(
        Msg("user", "What time is it in UTC+8?", "user"),
    )
    return agent, [first, second]


async def test_the_react_example_runs_its_tools_and_answers(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("buy milk\n")

    agent, (first, second) = await main(notes)

    assert first.get_text_content() == "6 * 7 is 42, and your notes say: buy milk."
    assert second.get_text_content() == "It is 12:00 in UTC+8."
    memory = await agent.memory.get_memory()
    results = [
        block
        for msg in memory
        for block in msg.get_content_blocks("tool_result")
        if isinstance(block, ToolResultBlock)
    ]
    assert [r.name for r in results] == [
        "execute_python_code",
        "view_text_file",
        "get_current_time",
    ]
    assert results[0].output == [
        {"type": "text", "text": "<returncode>0</returncode><stdout>42\n</stdout><stderr></stderr>"}
    ]
    assert "buy milk" in results[1].output[0]["text"]
    # AgentScope's dict view of the tool's output works on what the agent stored.
    assert results[2].output == [{"type": "text", "text": "It is 12:00 in UTC+8."}]
    # Every tool call has its result (the memory invariant), in AgentScope's order.
    uses = [
        b.id
        for m in memory
        for b in m.get_content_blocks("tool_use")
        if isinstance(b, ToolUseBlock)
    ]
    assert uses == [r.id for r in results]
    assert [m.role for m in memory] == [
        "user", "assistant", "system", "assistant", "system", "assistant",
        "user", "assistant", "system", "assistant",
    ]  # fmt: skip
