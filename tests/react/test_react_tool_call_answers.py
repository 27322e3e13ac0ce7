"""Every tool call a model makes gets its own result, naming the cause when the call cannot
run: a shell call whose timeout a subprocess cannot use, and calls sharing one id."""

from __future__ import annotations

import math

import pytest

from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import ScriptedChatModel, reply, tool_call
from agentscope_rt.tool import ToolResponse, execute_shell_command

from ._support import (
    call,
    history,
    make_agent,
    response,
    text,
    texts_of,
    tool_pair_problems,
    toolkit_of,
    user,
)


@pytest.mark.parametrize("bad_timeout", [math.nan, math.inf, -1.0])
async def test_a_shell_call_with_an_unusable_timeout_is_answered_with_the_cause(
    bad_timeout: float,
) -> None:
    model = ScriptedChatModel(
        [
            response(call("execute_shell_command", "c1", command="echo hi", timeout=bad_timeout)),
            response(text("done")),
        ]
    )
    agent = make_agent(model, toolkit_of(execute_shell_command))
    reply = await agent(user("run it"))
    assert reply.get_text_content() == "done"
    msgs = await history(agent.memory)
    assert tool_pair_problems(msgs) == []
    result = texts_of(msgs[-2])
    assert "timeout" in result
    assert "TaskGroup" not in result and "ExceptionGroup" not in result
    assert "<returncode>" not in result  # the command never ran
    # The result the model is sent next names the cause too.
    tool_messages = [m for m in model.calls[-1].messages if m["role"] == "tool"]
    assert "timeout" in str(tool_messages[-1]["content"])


async def test_two_calls_with_one_id_in_a_response_each_get_their_own_result() -> None:
    def echo(text: str) -> ToolResponse:
        """Echo the text.

        Args:
            text: The text.
        """
        return ToolResponse(content=[TextBlock(text=text)])

    model = ScriptedChatModel(
        [
            reply(
                tool_call("echo", {"text": "a"}, id="x"),
                tool_call("echo", {"text": "b"}, id="x"),
                tool_call("echo", {"text": "c"}, id="x_2"),
            ),
            "done",
        ]
    )
    agent = make_agent(model, toolkit_of(echo), sys_prompt="")
    await agent(Msg("user", "go", "user"))
    memory = await agent.memory.get_memory()
    uses = [b.id for m in memory for b in m.get_content_blocks("tool_use")]
    results = {b.id: b.output[0].text for m in memory for b in m.get_content_blocks("tool_result")}
    assert len(uses) == len(set(uses)) == 3
    assert [results[i] for i in uses] == ["a", "b", "c"]
    # The next request pairs every call with its result.
    request = model.calls[1].messages
    call_ids = [c["id"] for m in request for c in m.get("tool_calls") or []]
    assert sorted(call_ids) == sorted(m["tool_call_id"] for m in request if m["role"] == "tool")
