"""ReAct edge cases: interrupts from hooks of the last step, a summary that calls tools, and
tool arguments a shell tool cannot use."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from agentscope_rt.agent import GenerateReason, ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock, ThinkingBlock
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.tool import Toolkit, ToolResponse, execute_shell_command

from ._support import (
    CheckpointingMemory,
    call,
    history,
    make_agent,
    response,
    text,
    texts_of,
    tool_pair_problems,
    user,
)

INTERRUPT_TEXT = "I noticed that you have interrupted me. What can I do for you?"


def add(a: int, b: int) -> ToolResponse:
    """Add two integers.

    Args:
        a: the first number.
        b: the second number.
    """
    return ToolResponse(content=[TextBlock(text=str(a + b))])


def _toolkit(*funcs: Any) -> Toolkit:
    toolkit = Toolkit()
    for func in funcs:
        toolkit.register_tool_function(func)
    return toolkit


def openai_request_problems(messages: Sequence[dict[str, Any]]) -> list[str]:
    """What OpenAI's chat completions API rejects in *messages* about tool calls: an assistant
    message with ``tool_calls`` must be followed by one ``tool`` message per call id (and a
    ``tool`` message must answer a call of the assistant message before it)."""
    problems: list[str] = []
    open_calls: list[str] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                problems.append(f"messages[{index}]: tool message for unknown call {call_id!r}")
            else:
                open_calls.remove(call_id)
            continue
        if open_calls:
            problems.append(f"messages[{index}]: calls {open_calls} have no tool message")
            open_calls = []
        if role == "assistant":
            for tool_call in message.get("tool_calls") or []:
                open_calls.append(tool_call["id"])
                arguments = tool_call["function"]["arguments"]
                assert isinstance(arguments, str)
    if open_calls:
        problems.append(f"end: calls {open_calls} have no tool message")
    return problems


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


# -- item: interrupts from hooks of the last step ---------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("io_memory", [False, True])
async def test_post_reasoning_hook_of_the_final_step_interrupts_the_reply(
    stream: bool, io_memory: bool
) -> None:
    model = ScriptedChatModel(
        [response(call("add", "c1", a=1, b=2)), response(text("three"))], stream=stream
    )
    memory = CheckpointingMemory() if io_memory else None
    agent = make_agent(model, _toolkit(add), memory=memory)
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
    agent = make_agent(model, _toolkit(add))
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
    agent = make_agent(model, _toolkit(add), max_iters=1)

    def on_print(self: ReActAgent, kwargs: dict[str, Any], output: Any) -> None:
        if kwargs["msg"].get_text_content() == "summary of where I am":
            self.interrupt()

    agent.register_instance_hook("post_print", "stop", on_print)
    reply = await agent(user("loop"))
    _assert_interrupted(agent, reply)
    await _memory_is_consistent_and_the_next_call_works(
        agent, model, ["2", "summary of where I am", INTERRUPT_TEXT]
    )


# -- item: the summary at max_iters calls tools anyway ------------------------------------------


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
    agent = make_agent(model, _toolkit(add), max_iters=1)
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
    agent = make_agent(model, _toolkit(add), max_iters=1)
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
    agent = make_agent(model, _toolkit(add), max_iters=1)
    reply = await agent(user("loop"))
    text_content = reply.get_text_content()
    assert text_content is not None and "maximum number of iterations" in text_content


# -- item: a NaN timeout reaches the shell tool through the loop ---------------------------


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
    agent = make_agent(model, _toolkit(execute_shell_command))
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


def test_formatter_is_the_one_the_agent_uses() -> None:
    # The request checks above read what OpenAIChatFormatter produced.
    agent = make_agent(ScriptedChatModel([]))
    assert isinstance(agent.formatter, OpenAIChatFormatter)


async def test_two_calls_with_one_id_in_a_response_each_get_their_own_result() -> None:
    from agentscope_rt.agent import ReActAgent
    from agentscope_rt.formatter import OpenAIChatFormatter
    from agentscope_rt.message import Msg, TextBlock
    from agentscope_rt.model import ScriptedChatModel, reply, tool_call
    from agentscope_rt.tool import Toolkit, ToolResponse

    def echo(text: str) -> ToolResponse:
        """Echo the text.

        Args:
            text: The text.
        """
        return ToolResponse(content=[TextBlock(text=text)])

    toolkit = Toolkit()
    toolkit.register_tool_function(echo)
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
    agent = ReActAgent(
        name="A", sys_prompt="", model=model, formatter=OpenAIChatFormatter(), toolkit=toolkit
    )
    agent.set_console_output_enabled(False)
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
