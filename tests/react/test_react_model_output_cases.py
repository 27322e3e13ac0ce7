"""Inputs the random-model-output property test found, kept as fixed regression cases.

Each used to break the memory invariant or make the agent unsavable: two calls with one id in
a response, a number beyond float range in the arguments (it decoded to ``inf``), and
arguments nested deeper than a message may hold (saving failed) or than the recursion limit
(the JSON decoder raised ``RecursionError``).
"""

from __future__ import annotations

from agentscope_rt.message import ToolUseBlock
from agentscope_rt.model import ChatResponse
from agentscope_rt.model._common import parse_tool_input

from .test_react_random_model_output import (
    _nested,
    check_reply_memory_and_state,
    scripted,
    tools_agent,
)


def call(call_id: str, arguments: str) -> ToolUseBlock:
    tool_input, raw = parse_tool_input(arguments)
    return ToolUseBlock(id=call_id, name="echo", input=tool_input, raw_input=raw)


async def test_a_repeated_tool_call_id_in_one_response() -> None:
    response = ChatResponse(content=[call("x", ""), call("x", "")])
    await check_reply_memory_and_state(tools_agent(scripted([response]), False, 1))


async def test_a_number_beyond_float_range_in_the_arguments() -> None:
    response = ChatResponse(content=[call("c0", '{"a": 1e999, "b": 2}')])
    await check_reply_memory_and_state(tools_agent(scripted([response]), False, 1))


async def test_arguments_nested_deeper_than_state_can_be_saved() -> None:
    response = ChatResponse(content=[call("c0", _nested(300, "object"))])
    await check_reply_memory_and_state(tools_agent(scripted([response]), False, 1))


async def test_arguments_nested_deeper_than_the_recursion_limit() -> None:
    response = ChatResponse(content=[call("c0", _nested(5000, "list"))])
    await check_reply_memory_and_state(tools_agent(scripted([response]), False, 1))
