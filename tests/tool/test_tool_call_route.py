"""Every tool call an agent makes goes through the public ``Toolkit.call_tool_function``: a
subclass that overrides it is honoured whether the agent prints or not, in both the
AgentScope style (an async generator) and this package's (a method returning the stream)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import anyio
import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.message import TextBlock, ToolResultBlock, ToolUseBlock
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.tool import Toolkit, ToolResponse, ToolResponseStream

from ..react._support import call, fast, history, make_agent, response, text, user


class _RecordingToolkit(Toolkit):
    """Returns the real stream, and remembers each call it was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def call_tool_function(self, tool_call: ToolUseBlock) -> ToolResponseStream:
        self.seen.append(tool_call.name)
        return super().call_tool_function(tool_call)


class _ReplacingToolkit(Toolkit):
    """AgentScope style: an async generator that answers every call itself."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    async def call_tool_function(  # type: ignore[override]
        self, tool_call: ToolUseBlock
    ) -> AsyncGenerator[ToolResponse, None]:
        self.seen.append(tool_call.name)
        yield ToolResponse(content=[TextBlock(text="from the override")], is_last=True)


def _agent(toolkit: Toolkit, printing: bool) -> ReActAgent:
    toolkit.register_tool_function(fast)
    model = ScriptedChatModel([response(call("fast", "c1", tag="Paris")), response(text("ok"))])
    agent = make_agent(model, toolkit)
    if printing:
        send, receive = anyio.create_memory_object_stream[Any](1_000)
        agent.set_msg_queue_enabled(True, send)
        agent._test_receive = receive  # type: ignore[attr-defined]  # kept open
    return agent


async def _tool_outputs(agent: ReActAgent) -> list[Any]:
    return [
        block.to_dict()["output"]
        for msg in await history(agent.memory)
        if isinstance(msg.content, list)
        for block in msg.content
        if isinstance(block, ToolResultBlock)
    ]


@pytest.mark.parametrize("printing", [False, True], ids=["quiet", "printing"])
async def test_an_overridden_call_tool_function_is_used_for_every_call(printing: bool) -> None:
    toolkit = _RecordingToolkit()
    agent = _agent(toolkit, printing)
    assert (await agent(user("weather?"))).get_text_content() == "ok"
    assert toolkit.seen == ["fast"]
    assert "Paris" in str(await _tool_outputs(agent))


@pytest.mark.parametrize("printing", [False, True], ids=["quiet", "printing"])
async def test_an_agentscope_style_override_answers_every_call(printing: bool) -> None:
    toolkit = _ReplacingToolkit()
    agent = _agent(toolkit, printing)
    assert (await agent(user("weather?"))).get_text_content() == "ok"
    assert toolkit.seen == ["fast"]
    outputs = await _tool_outputs(agent)
    assert len(outputs) == 1 and "from the override" in str(outputs[0])


async def test_a_single_chunk_call_ends_after_its_chunk() -> None:
    toolkit = Toolkit()
    toolkit.register_tool_function(fast)
    stream = toolkit.call_tool_function(call("fast", "c1", tag="Paris"))
    chunks = [chunk async for chunk in stream]
    assert len(chunks) == 1 and "Paris" in chunks[0].get_text()
    with pytest.raises(StopAsyncIteration):
        await stream.__anext__()
