"""An interrupt called by a hook of the reply's last step (post_reasoning of the final answer,
post_reply, a print hook of the final print or of the summary) ends the reply as interrupted,
with a memory every provider accepts and an agent whose next call works."""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_rt.agent import GenerateReason, ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel

from ._support import (
    CheckpointingMemory,
    add,
    call,
    history,
    make_agent,
    openai_request_problems,
    response,
    text,
    texts_of,
    tool_pair_problems,
    toolkit_of,
    user,
)

INTERRUPT_TEXT = "I noticed that you have interrupted me. What can I do for you?"


def _assert_interrupted(agent: ReActAgent, reply: Msg) -> None:
    assert reply.get_text_content() == INTERRUPT_TEXT
    assert reply.metadata == {"_is_interrupted": True}
    assert agent.generate_reason is GenerateReason.INTERRUPTED


async def _memory_is_consistent_and_the_next_call_works(
    agent: ReActAgent, model: ScriptedChatModel, expected_tail: list[str]
) -> None:
    msgs = await history(agent.memory)
    assert tool_pair_problems(msgs) == []
    assert [texts_of(m) for m in msgs[-len(expected_tail) :]] == expected_tail
    assert msgs[-1].metadata == {"_is_interrupted": True}
    agent.clear_instance_hooks()
    model.add(response(text("next answer")))
    again = await agent(user("go on"))
    assert again.get_text_content() == "next answer"
    assert again.metadata == {}
    assert agent.generate_reason is GenerateReason.MODEL_STOP
    assert openai_request_problems(model.calls[-1].messages) == []


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("io_memory", [False, True])
async def test_post_reasoning_hook_of_the_final_step_interrupts_the_reply(
    stream: bool, io_memory: bool
) -> None:
    model = ScriptedChatModel(
        [response(call("add", "c1", a=1, b=2)), response(text("three"))], stream=stream
    )
    memory = CheckpointingMemory() if io_memory else None
    agent = make_agent(model, toolkit_of(add), memory=memory)
    steps: list[str] = []

    def on_reasoning(self: ReActAgent, kwargs: dict[str, Any], output: Msg) -> None:
        steps.append(texts_of(output))
        if output.get_text_content() == "three":
            self.interrupt()

    agent.register_instance_hook("post_reasoning", "stop_at_answer", on_reasoning)
    reply = await agent(user("add 1 and 2"))
    assert steps == ["", "three"]
    _assert_interrupted(agent, reply)
    await _memory_is_consistent_and_the_next_call_works(
        agent, model, ["3", "three", INTERRUPT_TEXT]
    )


async def test_post_reasoning_hook_interrupting_a_step_with_tool_calls_closes_them() -> None:
    model = ScriptedChatModel([response(call("add", "c1", a=1, b=2))])
    agent = make_agent(model, toolkit_of(add))
    agent.register_instance_hook(
        "post_reasoning", "stop", lambda self, kwargs, output: self.interrupt()
    )
    reply = await agent(user("add"))
    _assert_interrupted(agent, reply)
    msgs = await history(agent.memory)
    assert tool_pair_problems(msgs) == []
    assert "interrupted" in texts_of(msgs[-2])  # the call was never run
    await _memory_is_consistent_and_the_next_call_works(agent, model, [INTERRUPT_TEXT])


@pytest.mark.parametrize("stream", [False, True])
async def test_post_reply_hook_interrupts_the_reply(stream: bool) -> None:
    model = ScriptedChatModel([response(text("the answer"))], stream=stream)
    agent = make_agent(model)
    agent.register_instance_hook(
        "post_reply", "stop", lambda self, kwargs, output: self.interrupt()
    )
    reply = await agent(user("question"))
    _assert_interrupted(agent, reply)
    await _memory_is_consistent_and_the_next_call_works(
        agent, model, ["question", "the answer", INTERRUPT_TEXT]
    )


@pytest.mark.parametrize("hook_type", ["pre_print", "post_print"])
@pytest.mark.parametrize("stream", [False, True])
async def test_print_hook_of_the_final_print_interrupts_the_reply(
    hook_type: str, stream: bool
) -> None:
    model = ScriptedChatModel([response(text("the answer"))], stream=stream)
    agent = make_agent(model)

    def on_print(self: ReActAgent, kwargs: dict[str, Any], *output: Any) -> None:
        if kwargs["last"] and kwargs["msg"].get_text_content() == "the answer":
            self.interrupt()

    agent.register_instance_hook(hook_type, "stop", on_print)
    reply = await agent(user("question"))
    _assert_interrupted(agent, reply)
    await _memory_is_consistent_and_the_next_call_works(
        agent, model, ["question", "the answer", INTERRUPT_TEXT]
    )


async def test_print_hook_of_the_summary_interrupts_the_reply() -> None:
    model = ScriptedChatModel(
        [response(call("add", "c1", a=1, b=1)), response(text("summary of where I am"))]
    )
    agent = make_agent(model, toolkit_of(add), max_iters=1)

    def on_print(self: ReActAgent, kwargs: dict[str, Any], output: Any) -> None:
        if kwargs["msg"].get_text_content() == "summary of where I am":
            self.interrupt()

    agent.register_instance_hook("post_print", "stop", on_print)
    reply = await agent(user("loop"))
    _assert_interrupted(agent, reply)
    await _memory_is_consistent_and_the_next_call_works(
        agent, model, ["2", "summary of where I am", INTERRUPT_TEXT]
    )


def test_formatter_is_the_one_the_agent_uses() -> None:
    # The request checks here and in test_react_summary_at_max_iters.py read what
    # OpenAIChatFormatter produced.
    agent = make_agent(ScriptedChatModel([]))
    assert isinstance(agent.formatter, OpenAIChatFormatter)
