"""The summary a ReAct agent asks for at ``max_iters`` keeps only its text: tool calls in it
are dropped (never left unanswered in memory), and a summary without text says the agent
stopped at the maximum number of iterations."""

from __future__ import annotations

import pytest

from agentscope_rt.agent import GenerateReason
from agentscope_rt.message import Msg, ThinkingBlock
from agentscope_rt.model import ScriptedChatModel

from ._support import (
    add,
    call,
    history,
    make_agent,
    openai_request_problems,
    response,
    text,
    tool_pair_problems,
    toolkit_of,
    user,
)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_summary_with_text_and_tool_calls_keeps_only_the_text(stream: bool) -> None:
    model = ScriptedChatModel(
        [
            response(call("add", "c1", a=1, b=1)),
            response(
                ThinkingBlock(thinking="one more call would do"),
                text("Here is where I am."),
                call("add", "c2", a=2, b=2),
                call("add", "c3", a=3, b=3),
            ),
        ],
        stream=stream,
    )
    agent = make_agent(model, toolkit_of(add), max_iters=1)
    reply = await agent(user("loop"))
    assert agent.generate_reason is GenerateReason.MAX_ITERATIONS
    assert [b.type for b in reply.get_content_blocks()] == ["thinking", "text"]
    assert reply.get_text_content() == "Here is where I am."
    msgs = await history(agent.memory)
    assert msgs[-1].id == reply.id
    assert not msgs[-1].has_content_blocks("tool_use")
    assert tool_pair_problems(msgs) == []

    model.add(response(text("fine")))
    assert (await agent(user("and now?"))).get_text_content() == "fine"
    messages = model.calls[-1].messages
    assert openai_request_problems(messages) == []
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == ["c1"]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_summary_of_tool_calls_only_says_the_agent_stopped(stream: bool) -> None:
    model = ScriptedChatModel(
        [response(call("add", "c1", a=1, b=1)), response(call("add", "c2", a=2, b=2))],
        stream=stream,
    )
    agent = make_agent(model, toolkit_of(add), max_iters=1)
    send_printed: list[Msg] = []
    agent.register_instance_hook(
        "post_print", "record", lambda self, kwargs, output: send_printed.append(kwargs["msg"])
    )
    reply = await agent(user("loop"))
    text_content = reply.get_text_content()
    assert text_content is not None and "maximum number of iterations (1)" in text_content
    assert [b.type for b in reply.get_content_blocks()] == ["text"]
    # What was printed last is what was kept.
    assert send_printed[-1].id == reply.id
    assert send_printed[-1].get_content_blocks() == reply.get_content_blocks()
    assert all(not m.has_content_blocks("tool_use") for m in send_printed if m.id == reply.id)
    msgs = await history(agent.memory)
    assert tool_pair_problems(msgs) == []

    model.add(response(text("fine")))
    await agent(user("and now?"))
    assert openai_request_problems(model.calls[-1].messages) == []


async def test_an_empty_summary_also_says_the_agent_stopped() -> None:
    model = ScriptedChatModel([response(call("add", "c1", a=1, b=1)), response()])
    agent = make_agent(model, toolkit_of(add), max_iters=1)
    reply = await agent(user("loop"))
    text_content = reply.get_text_content()
    assert text_content is not None and "maximum number of iterations" in text_content
