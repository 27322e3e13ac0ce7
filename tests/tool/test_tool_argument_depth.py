"""Deeply nested tool arguments: one depth rule where a model's output enters, clear errors
elsewhere.

A tool call whose arguments nest deeper than ``MAX_TOOL_INPUT_DEPTH`` levels becomes an
argument error the model reads (its arguments are not kept), whichever model produced it: a
provider's parsed text or a model that builds its blocks itself. So the reply goes on and the
agent's state can always be saved (nested 150 levels, arguments used to be accepted and every
later save failed; 1,200 levels raised ``RecursionError`` from ``Msg.copy``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.exception import MessageFormatError
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg, TextBlock, ToolUseBlock
from agentscope_rt.message.serde import MAX_JSON_DEPTH, MAX_TOOL_INPUT_DEPTH
from agentscope_rt.model import ChatResponse, ScriptedChatModel
from agentscope_rt.model._common import parse_tool_input, parse_tool_value
from agentscope_rt.session import JSONSession
from agentscope_rt.tool import Toolkit, ToolResponse

from ..react._support import make_agent, toolkit_of


def nested(depth: int) -> dict[str, Any]:
    value: Any = 1
    for _ in range(depth - 1):
        value = {"a": value}
    return {"a": value}


def test_the_rule_leaves_room_for_what_wraps_a_tool_call_in_a_saved_state() -> None:
    assert MAX_TOOL_INPUT_DEPTH <= MAX_JSON_DEPTH // 2


@pytest.mark.parametrize("depth", [MAX_TOOL_INPUT_DEPTH + 1, 150, 600, 5000])
def test_provider_output_deeper_than_the_rule_is_kept_only_as_raw_text(depth: int) -> None:
    text = '{"a": ' * depth + "1" + "}" * depth
    assert parse_tool_input(text) == ({}, text)
    if depth < 900:  # a dict the json module can still write
        assert parse_tool_value(nested(depth))[0] == {}
    assert parse_tool_input(json.dumps(nested(MAX_TOOL_INPUT_DEPTH)))[0] == nested(
        MAX_TOOL_INPUT_DEPTH
    )


def _echo_agent(arguments: dict[str, Any]) -> tuple[ReActAgent, list[Any]]:
    """An agent whose model calls the tool ``echo`` with *arguments* then answers "done", and
    the list of what ``echo`` was called with."""
    calls: list[Any] = []

    async def echo(a: Any = None) -> ToolResponse:
        """Echo."""
        calls.append(a)
        return ToolResponse(content=[TextBlock(text="echoed")])

    model = ScriptedChatModel(
        [
            # A model that builds its blocks itself: nothing parsed them.
            ChatResponse(content=[ToolUseBlock("c1", "echo", arguments)]),
            ChatResponse(content=[TextBlock(text="done")]),
        ]
    )
    return make_agent(model, toolkit_of(echo)), calls


@pytest.mark.parametrize("depth", [150, 600, 5000])
async def test_a_deep_call_from_any_model_is_an_argument_error_and_the_agent_saves(
    depth: int, tmp_path: Path
) -> None:
    agent, calls = _echo_agent(nested(depth))
    reply = await agent(Msg("user", "go", "user"))
    assert reply.get_text_content() == "done"
    assert calls == []
    msgs = await agent.memory.get_memory()
    (result,) = [b for m in msgs for b in m.get_content_blocks("tool_result")]
    output = result["output"][0]["text"]
    assert output.startswith("InvalidArgumentsError: Invalid arguments for 'echo'")
    assert f"nested deeper than {MAX_TOOL_INPUT_DEPTH} levels" in output
    (kept,) = [b for m in msgs for b in m.get_content_blocks("tool_use")]
    assert kept["input"] == {}
    session = JSONSession(str(tmp_path))
    await session.save_session_state("s", agent=agent)
    fresh = make_agent(ScriptedChatModel([]), Toolkit())
    await session.load_session_state("s", agent=fresh)
    assert len(await fresh.memory.get_memory()) == len(msgs)


async def test_a_call_within_the_rule_is_made_and_saved(tmp_path: Path) -> None:
    deepest = nested(MAX_TOOL_INPUT_DEPTH)
    agent, calls = _echo_agent(deepest)
    await agent(Msg("user", "go", "user"))
    assert calls == [deepest["a"]]
    await JSONSession(str(tmp_path)).save_session_state("s", agent=agent)


async def test_copying_or_storing_a_message_too_deep_to_copy_is_a_clear_error() -> None:
    msg = Msg("friday", [ToolUseBlock("c1", "echo", nested(5000))], "assistant")
    with pytest.raises(MessageFormatError, match="nested too deeply"):
        msg.copy()
    memory = InMemoryMemory()
    with pytest.raises(MessageFormatError, match="cannot be added to memory"):
        await memory.add(msg)
    assert await memory.size() == 0
    deep_metadata = Msg("user", "hi", "user", metadata=nested(5000))
    with pytest.raises(MessageFormatError, match="nested too deeply"):
        deep_metadata.copy()
