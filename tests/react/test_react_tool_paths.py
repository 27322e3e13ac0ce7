"""A quiet agent takes a single-chunk tool call back whole, without a stream; an agent that
prints iterates the stream. Both record the same result for every kind of call."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import anyio
import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.message import Msg, TextBlock, ToolResultBlock
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.tool import Toolkit, ToolResponse

from ._support import (
    call,
    fast,
    history,
    make_agent,
    response,
    slow,
    text,
    tool_pair_problems,
    user,
)


async def fails(city: str) -> ToolResponse:
    """Raise.

    Args:
        city: a city.
    """
    raise ValueError(f"no weather for {city}")


async def hands_back_a_stream(city: str) -> AsyncGenerator[ToolResponse, None]:
    """A coroutine that returns a generator of chunks.

    Args:
        city: a city.
    """

    async def chunks() -> AsyncGenerator[ToolResponse, None]:
        yield ToolResponse(content=[TextBlock(text="part 1")])
        yield ToolResponse(content=[TextBlock(text="part 1, part 2")], is_last=True)

    return chunks()


async def streams(city: str) -> AsyncGenerator[ToolResponse, None]:
    """An async generator tool.

    Args:
        city: a city.
    """
    yield ToolResponse(content=[TextBlock(text=f"looking up {city}")])
    yield ToolResponse(content=[TextBlock(text=f"rain in {city}")], is_last=True)


def _toolkit() -> Toolkit:
    toolkit = Toolkit(timeout=0.05)
    for func in (fast, fails, slow, hands_back_a_stream, streams):
        toolkit.register_tool_function(func)
    return toolkit


def _agent(model: ScriptedChatModel, printing: bool) -> ReActAgent:
    agent = make_agent(model, _toolkit())
    if printing:
        send, receive = anyio.create_memory_object_stream[Any](1_000)
        agent.set_msg_queue_enabled(True, send)
        agent._test_receive = receive  # type: ignore[attr-defined]  # kept open
    return agent


async def _tool_outputs(agent: ReActAgent) -> list[Any]:
    msgs = await history(agent.memory)
    assert tool_pair_problems(msgs) == []
    return [
        block.to_dict()["output"]
        for msg in msgs
        if isinstance(msg.content, list)
        for block in msg.content
        if isinstance(block, ToolResultBlock)
    ]


@pytest.mark.parametrize(
    "tool_call",
    [
        call("fast", "c1", tag="Paris"),
        call("fails", "c1", city="Paris"),
        call("slow", "c1", tag="Paris"),
        call("hands_back_a_stream", "c1", city="Paris"),
        call("streams", "c1", city="Paris"),
        call("missing", "c1", city="Paris"),
        call("fast", "c1", town="Paris"),
    ],
    ids=["ok", "fails", "timeout", "coroutine-stream", "generator", "unknown", "bad-arguments"],
)
async def test_quiet_and_printing_agents_record_the_same_result(tool_call: Any) -> None:
    outputs = []
    for printing in (False, True):
        model = ScriptedChatModel([response(tool_call), response(text("done"))])
        agent = _agent(model, printing)
        reply = await agent(user("weather?"))
        assert reply.get_text_content() == "done"
        outputs.append(await _tool_outputs(agent))
    quiet, printing_outputs = outputs
    assert quiet == printing_outputs
    assert len(quiet) == 1 and quiet[0]


async def test_an_interrupt_in_a_tool_is_recorded_alike_on_both_paths() -> None:
    outputs = []
    for printing in (False, True):
        model = ScriptedChatModel(
            [response(call("slow", "c1", tag="Paris")), response(text("next"))]
        )
        agent = _agent(model, printing)
        agent.toolkit.timeout = None  # slow runs until interrupted
        async with anyio.create_task_group() as tg:

            async def interrupt_soon(agent: ReActAgent) -> None:
                await anyio.sleep(0.05)
                agent.interrupt()

            tg.start_soon(interrupt_soon, agent)
            reply = await agent(user("weather?"))
        assert agent.generate_reason == "interrupted"
        assert reply.metadata == {"_is_interrupted": True}
        outputs.append(await _tool_outputs(agent))
        # The conversation goes on normally afterwards.
        assert (await agent(Msg("user", "again", "user"))).get_text_content() == "next"
    assert outputs[0] == outputs[1]
    assert "interrupted" in str(outputs[0])
