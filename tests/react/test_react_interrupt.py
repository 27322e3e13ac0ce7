"""Interrupting a reply in each phase leaves a consistent memory and a working agent."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentscope_rt.agent import GenerateReason, ReActAgent
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import FunctionChatModel, ScriptedChatModel
from agentscope_rt.tool import INTERRUPTED_TEXT, Toolkit, ToolResponse

from ._support import (
    call,
    fast,
    history,
    make_agent,
    response,
    slow,
    text,
    texts_of,
    tool_pair_problems,
    user,
)

INTERRUPT_REPLY = "I noticed that you have interrupted me. What can I do for you?"


async def streaming(tag: str) -> AsyncGenerator[ToolResponse, None]:
    """Report progress, then hang.

    Args:
        tag: a label.
    """
    yield ToolResponse(content=[TextBlock(text=f"progress {tag}")], stream=True, is_last=False)
    await anyio.sleep(30)
    yield ToolResponse(content=[TextBlock(text="never")], stream=True)


def _toolkit() -> Toolkit:
    toolkit = Toolkit()
    for func in (fast, slow, streaming):
        toolkit.register_tool_function(func)
    return toolkit


async def _interrupt_soon(agent: ReActAgent, delay: float = 0.1) -> Msg:
    async with anyio.create_task_group() as tg:

        async def later() -> None:
            await anyio.sleep(delay)
            agent.interrupt()

        tg.start_soon(later)
        return await agent(user("do it"))


def _is_interrupt_reply(msg: Msg) -> bool:
    return msg.get_text_content() == INTERRUPT_REPLY and msg.metadata.get("_is_interrupted") is True


async def test_interrupt_during_the_model_call() -> None:
    async def thinking_forever(messages: list[dict[str, Any]], tools: Any) -> Any:
        await anyio.sleep(30)
        return "never"

    agent = make_agent(FunctionChatModel(thinking_forever), _toolkit())
    with anyio.fail_after(5):
        reply = await _interrupt_soon(agent)
    assert _is_interrupt_reply(reply)
    assert agent.generate_reason == GenerateReason.INTERRUPTED
    assert reply.metadata == {"_is_interrupted": True}  # exactly AgentScope's
    msgs = await history(agent.memory)
    assert [m.role for m in msgs] == ["user", "assistant"]
    assert _is_interrupt_reply(msgs[1])


async def test_interrupt_while_streaming_keeps_the_partial_answer_and_closes_its_calls() -> None:
    model = ScriptedChatModel(
        [
            response(text("Let me call a tool for this."), call("slow", "c1", tag="x")),
            response(text("Hello again.")),
        ],
        stream=True,
    )
    agent = make_agent(model, _toolkit())

    async def interrupt_on_tool_call(self: ReActAgent, kwargs: dict[str, Any]) -> None:
        msg = kwargs["msg"]
        if msg.role == "assistant" and msg.get_content_blocks("tool_use") and not kwargs["last"]:
            self.interrupt()
            await anyio.lowlevel.checkpoint()

    agent.register_instance_hook("pre_print", "interrupt", interrupt_on_tool_call)
    reply = await agent(user("stream"))
    assert _is_interrupt_reply(reply)
    msgs = await history(agent.memory)
    assert [m.role for m in msgs] == ["user", "assistant", "system", "assistant"]
    assert msgs[1].get_text_content() == "Let me call a tool for this."
    assert texts_of(msgs[2]) == "The tool call has been interrupted by the user."
    assert tool_pair_problems(msgs) == []

    agent.remove_instance_hook("pre_print", "interrupt")
    again = await agent(user("hi"))
    assert again.get_text_content() == "Hello again."
    assert tool_pair_problems(await history(agent.memory)) == []


async def test_interrupt_during_sequential_tools() -> None:
    model = ScriptedChatModel(
        [
            response(
                call("fast", "c1", tag="a"),
                call("slow", "c2", tag="b"),
                call("fast", "c3", tag="c"),
            ),
            response(text("Starting over.")),
        ]
    )
    agent = make_agent(model, _toolkit())
    with anyio.fail_after(5):
        reply = await _interrupt_soon(agent)
    assert _is_interrupt_reply(reply)
    msgs = await history(agent.memory)
    assert [m.role for m in msgs] == [
        "user",
        "assistant",
        "system",
        "system",
        "system",
        "assistant",
    ]
    assert texts_of(msgs[2]) == "fast a"
    assert texts_of(msgs[3]) == INTERRUPTED_TEXT
    assert texts_of(msgs[4]) == INTERRUPTED_TEXT  # never started, still answered
    assert [m.get_content_blocks("tool_result")[0].id for m in msgs[2:5]] == ["c1", "c2", "c3"]
    assert tool_pair_problems(msgs) == []

    again = await agent(user("again"))
    assert again.get_text_content() == "Starting over."
    assert agent.generate_reason == "model_stop"
    assert again.metadata == {}


async def test_interrupt_during_parallel_tools() -> None:
    model = ScriptedChatModel(
        [
            response(
                call("slow", "c1", tag="a"),
                call("fast", "c2", tag="b"),
                call("streaming", "c3", tag="c"),
            ),
            response(text("ok")),
        ]
    )
    agent = make_agent(model, _toolkit(), parallel_tool_calls=True)
    with anyio.fail_after(5):
        reply = await _interrupt_soon(agent)
    assert _is_interrupt_reply(reply)
    msgs = await history(agent.memory)
    assert [m.role for m in msgs] == [
        "user",
        "assistant",
        "system",
        "system",
        "system",
        "assistant",
    ]
    assert [m.get_content_blocks("tool_result")[0].id for m in msgs[2:5]] == ["c1", "c2", "c3"]
    assert texts_of(msgs[2]) == INTERRUPTED_TEXT
    assert texts_of(msgs[3]) == "fast b"
    assert texts_of(msgs[4]) == f"progress c\n{INTERRUPTED_TEXT}"
    assert tool_pair_problems(msgs) == []
    assert (await agent(user("next"))).get_text_content() == "ok"


async def test_outer_cancellation_is_not_an_interrupt_but_memory_stays_consistent() -> None:
    model = ScriptedChatModel([response(call("slow", "c1", tag="a"))])
    agent = make_agent(model, _toolkit())
    with pytest.raises(TimeoutError):
        with anyio.fail_after(0.2):
            await agent(user("hang"))
    msgs = await history(agent.memory)
    assert [m.role for m in msgs] == ["user", "assistant", "system"]
    assert not any(_is_interrupt_reply(m) for m in msgs)
    assert tool_pair_problems(msgs) == []


async def test_a_tool_reporting_an_interrupt_interrupts_the_reply() -> None:
    async def gives_up() -> ToolResponse:
        """Stop everything."""
        return ToolResponse(
            content=[TextBlock(text="stopped by the operator")], is_interrupted=True
        )

    toolkit = Toolkit()
    toolkit.register_tool_function(gives_up)
    agent = make_agent(ScriptedChatModel([response(call("gives_up", "c1"))]), toolkit)
    reply = await agent(user("try"))
    assert _is_interrupt_reply(reply)
    msgs = await history(agent.memory)
    assert texts_of(msgs[2]) == "stopped by the operator"
    assert tool_pair_problems(msgs) == []


async def test_handle_interrupt_can_be_overridden() -> None:
    class Polite(ReActAgent):
        async def handle_interrupt(self, msg: Any = None, structured_model: Any = None) -> Msg:
            answer = Msg(self.name, "Stopped. Shall I go on?", "assistant")
            await self.memory.add(answer)
            return answer

    async def slow_model(messages: Any, tools: Any) -> Any:
        await anyio.sleep(30)

    agent = Polite(
        "Friday", "p", FunctionChatModel(slow_model), make_agent(ScriptedChatModel([])).formatter
    )
    agent.set_console_output_enabled(False)
    with anyio.fail_after(5):
        reply = await _interrupt_soon(agent)
    assert reply.get_text_content() == "Stopped. Shall I go on?"
    assert agent.generate_reason == "interrupted"


async def test_interrupt_with_a_msg_answers_as_agentscope_does() -> None:
    # AgentScope's interrupt(msg) only names the cancellation; ReActAgent.handle_interrupt gets
    # the interrupted call's arguments and answers the same way whatever the msg says.
    model = ScriptedChatModel([response(call("slow", "c1", tag="x")), response(text("later"))])
    agent = make_agent(model, _toolkit())
    send, receive = anyio.create_memory_object_stream[Any](100)
    agent.set_msg_queue_enabled(True, send)
    why = Msg("user", "Stop: I changed my mind.", "user")
    async with anyio.create_task_group() as tg:

        async def later() -> None:
            await anyio.sleep(0.1)
            await agent.interrupt(why)

        tg.start_soon(later)
        reply = await agent(user("do it"))
    send.close()
    assert reply.get_text_content() == INTERRUPT_REPLY
    assert reply.metadata == {"_is_interrupted": True}
    assert reply.to_dict()["metadata"] == {"_is_interrupted": True}
    assert agent.interrupt_msg is why
    assert agent.generate_reason == GenerateReason.INTERRUPTED
    msgs = await history(agent.memory)
    assert [m.role for m in msgs] == ["user", "assistant", "system", "assistant"]
    assert texts_of(msgs[2]) == INTERRUPTED_TEXT
    assert _is_interrupt_reply(msgs[3])
    assert all("changed my mind" not in texts_of(m) for m in msgs)  # not recorded
    printed = [(m.get_text_content(), last) async for m, last, _ in receive]
    assert printed[-1] == (INTERRUPT_REPLY, True)
    receive.close()
