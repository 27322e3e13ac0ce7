"""The reasoning-acting loop: tool conversations, parallel calls, max_iters, usage, meta tool."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import anyio
import pytest

from agentscope_rt.agent import GenerateReason, ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.tool import Toolkit, ToolResponse

from .._timing import InFlight, hang_limit, takes_about, takes_at_least
from ._support import (
    call,
    history,
    make_agent,
    prompt_text,
    response,
    text,
    texts_of,
    tool_pair_problems,
    user,
)


def add(a: int, b: int) -> ToolResponse:
    """Add two integers.

    Args:
        a: the first number.
        b: the second number.
    """
    return ToolResponse(content=[TextBlock(text=str(a + b))])


async def multiply(a: int, b: int) -> ToolResponse:
    """Multiply two integers.

    Args:
        a: the first number.
        b: the second number.
    """
    return ToolResponse(content=[TextBlock(text=str(a * b))])


def _toolkit(*funcs: object) -> Toolkit:
    toolkit = Toolkit()
    for func in funcs:
        toolkit.register_tool_function(func)  # type: ignore[arg-type]
    return toolkit


async def test_multi_step_tool_conversation() -> None:
    model = ScriptedChatModel(
        [
            response(text("First the sum."), call("add", "c1", a=2, b=3)),
            response(call("multiply", "c2", a=5, b=4)),
            response(text("(2 + 3) * 4 = 20")),
        ]
    )
    agent = make_agent(model, _toolkit(add, multiply))
    question = user("What is (2 + 3) * 4?")
    reply = await agent(question)

    assert reply.get_text_content() == "(2 + 3) * 4 = 20"
    assert agent.generate_reason == GenerateReason.MODEL_STOP
    # Three model calls of (10 in, 5 out) each.
    assert agent.usage is not None
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (30, 15)
    # The reply carries AgentScope's metadata: none without a structured model.
    assert reply.metadata == {}
    assert reply.to_dict()["metadata"] == {}
    assert reply.invocation_id is not None

    msgs = await history(agent.memory)
    assert [m.role for m in msgs] == [
        "user",
        "assistant",
        "system",
        "assistant",
        "system",
        "assistant",
    ]
    assert msgs[0].id == question.id
    assert texts_of(msgs[2]) == "5" and texts_of(msgs[4]) == "20"
    assert msgs[-1].id == reply.id
    assert tool_pair_problems(msgs) == []

    # The model saw the system prompt, the question, and each tool result before the next call.
    assert model.calls[0].messages[0] == {
        "role": "system",
        "content": "You are a helpful assistant.",
    } or (model.calls[0].messages[0]["role"] == "system")
    assert "What is (2 + 3) * 4?" in prompt_text(model.calls[0])
    assert "5" in prompt_text(model.calls[1]) and "20" in prompt_text(model.calls[2])
    assert model.calls[0].tool_names == ["add", "multiply"]
    assert model.calls[0].tool_choice is None


async def test_plain_answer_without_tools_ends_after_one_call() -> None:
    model = ScriptedChatModel([response(text("Hello!"))])
    agent = make_agent(model)
    reply = await agent(user("hi"))
    assert reply.get_text_content() == "Hello!"
    assert len(model.calls) == 1
    assert model.calls[0].tools is None  # an empty toolkit sends no tools
    assert [m.role for m in await history(agent.memory)] == ["user", "assistant"]


async def test_failing_and_unknown_tools_become_results_and_the_loop_goes_on() -> None:
    def broken(x: int) -> ToolResponse:
        """Always fails.

        Args:
            x: anything.
        """
        raise RuntimeError("disk on fire")

    model = ScriptedChatModel(
        [
            response(call("broken", "c1", x=1), call("missing", "c2")),
            response(text("Both failed.")),
        ]
    )
    agent = make_agent(model, _toolkit(broken))
    reply = await agent(user("go"))
    assert reply.get_text_content() == "Both failed."
    msgs = await history(agent.memory)
    assert "disk on fire" in texts_of(msgs[2])
    assert "FunctionNotFoundError" in texts_of(msgs[3])
    assert tool_pair_problems(msgs) == []


async def test_a_toolkit_may_return_any_async_iterator_of_chunks() -> None:
    class Streaming(Toolkit):
        """Answers every call with two cumulative chunks from a plain async generator."""

        def call_tool_function(self, tool_call: Any) -> Any:
            async def chunks() -> AsyncGenerator[ToolResponse, None]:
                yield ToolResponse(content=[text("one")], stream=True, is_last=False)
                yield ToolResponse(content=[text("one"), text("two")], stream=True)

            return chunks()

    toolkit = Streaming()
    toolkit.register_tool_function(add)
    model = ScriptedChatModel([response(call("add", "c1", a=1, b=2)), response(text("Done."))])
    agent = make_agent(model, toolkit)
    assert (await agent(user("go"))).get_text_content() == "Done."
    msgs = await history(agent.memory)
    assert texts_of(msgs[2]) == "one\ntwo"  # the last chunk is the result
    assert tool_pair_problems(msgs) == []


async def test_parallel_tool_calls_overlap_and_are_recorded_in_call_order() -> None:
    finished: list[str] = []
    done: dict[str, anyio.Event] = {}
    flight = InFlight(together=2)

    async def slow(tag: str, seconds: float = 0.0, after: str = "") -> ToolResponse:
        """Sleep, wait for another call to finish if told to, then report.

        Args:
            tag: a label.
            seconds: how long to sleep.
            after: the label of a call to wait for.
        """
        async with flight.call():
            await anyio.sleep(seconds)
            if after:
                with anyio.fail_after(hang_limit()):
                    await done.setdefault(after, anyio.Event()).wait()
            finished.append(tag)
            done.setdefault(tag, anyio.Event()).set()
        return ToolResponse(content=[TextBlock(text=f"done {tag}")])

    # Both calls are in flight at once, and the first ends only after the second: run one
    # after the other, the first would never end.
    script = [
        response(
            call("slow", "c1", tag="first", after="second"),
            call("slow", "c2", tag="second"),
        ),
        response(text("both done")),
    ]
    agent = make_agent(ScriptedChatModel(script), _toolkit(slow), parallel_tool_calls=True)
    await agent(user("run both"))
    assert flight.peak == 2
    assert finished == ["second", "first"]  # the second finished first...
    msgs = await history(agent.memory)
    # ...but results are recorded in call order.
    assert [texts_of(m) for m in msgs[2:4]] == ["done first", "done second"]
    assert tool_pair_problems(msgs) == []

    # Sequentially the calls run one at a time and take the sum of their times.
    finished.clear()
    flight = InFlight()
    script = [
        response(
            call("slow", "c1", tag="first", seconds=0.2),
            call("slow", "c2", tag="second", seconds=0.15),
        ),
        response(text("both done")),
    ]
    agent = make_agent(ScriptedChatModel(script), _toolkit(slow), parallel_tool_calls=False)
    async with takes_at_least(0.35):
        await agent(user("run both"))
    assert flight.peak == 1
    assert finished == ["first", "second"]


async def test_two_parallel_tools_of_0_2_seconds_run_at_once_in_about_0_2_seconds() -> None:
    flight = InFlight(together=2)

    async def wait(seconds: float) -> ToolResponse:
        """Wait.

        Args:
            seconds: how long.
        """
        async with flight.call():
            await anyio.sleep(seconds)
        return ToolResponse(content=[TextBlock(text="ok")])

    model = ScriptedChatModel(
        [
            response(call("wait", "a", seconds=0.2), call("wait", "b", seconds=0.2)),
            response(text("done")),
        ]
    )
    agent = make_agent(model, _toolkit(wait), parallel_tool_calls=True)
    async with takes_about(0.2):
        await agent(user("wait twice"))
    assert flight.peak == 2


async def test_max_iters_ends_with_one_summarising_call_without_tools() -> None:
    steps = [response(call("add", f"c{i}", a=i, b=i)) for i in range(3)]
    steps.append(response(text("I could not finish; here is where I am.")))
    model = ScriptedChatModel(steps)
    agent = make_agent(model, _toolkit(add), max_iters=3)
    reply = await agent(user("loop forever"))

    assert len(model.calls) == 4
    last = model.calls[-1]
    assert last.tools is None and last.tool_choice is None
    assert last.messages[-1]["content"] == (
        "You have failed to generate response within the maximum iterations. Now respond "
        "directly by summarizing the current situation."
    ) or "You have failed to generate response within the maximum iterations" in prompt_text(last)
    assert agent.generate_reason == GenerateReason.MAX_ITERATIONS
    assert agent.usage is not None and agent.usage.input_tokens == 40
    assert reply.metadata == {}
    msgs = await history(agent.memory)
    assert msgs[-1].id == reply.id  # the summary is saved
    assert len(msgs) == 1 + 3 * 2 + 1
    assert tool_pair_problems(msgs) == []
    # The summarising hint itself is not kept.
    assert all("maximum iterations" not in texts_of(m) for m in msgs)


async def test_streaming_reasoning_prints_chunks_with_one_id() -> None:
    model = ScriptedChatModel([response(text("Streaming answer here"))], stream=True)
    agent = make_agent(model)
    send, receive = anyio.create_memory_object_stream[Any](100)
    agent.set_msg_queue_enabled(True, send)
    reply = await agent(user("stream please"))
    printed = []
    while True:
        try:
            printed.append(receive.receive_nowait())
        except anyio.WouldBlock:
            break
    send.close()
    receive.close()
    assert len(printed) >= 3
    assert {m.id for m, _, _ in printed} == {reply.id}
    assert [last for _, last, _ in printed][-1] is True
    assert not any(last for _, last, _ in printed[:-1])
    assert all(speech is None for _, _, speech in printed)  # a text model says nothing
    assert printed[-1][0].get_text_content() == "Streaming answer here"
    assert len(printed[0][0].get_text_content() or "") < len("Streaming answer here")


async def test_meta_tool_lets_the_model_activate_a_group() -> None:
    def search(query: str) -> ToolResponse:
        """Search the web.

        Args:
            query: what to look for.
        """
        return ToolResponse(content=[TextBlock(text=f"results for {query}")])

    toolkit = Toolkit()
    toolkit.create_tool_group("browsing", "Tools to browse the web.", notes="Cite your sources.")
    toolkit.register_tool_function(search, group_name="browsing")
    model = ScriptedChatModel(
        [
            response(call("reset_equipped_tools", "m1", browsing=True)),
            response(call("search", "s1", query="anyio")),
            response(text("Found it.")),
        ]
    )
    agent = make_agent(model, toolkit, enable_meta_tool=True)
    reply = await agent(user("look up anyio"))
    assert reply.get_text_content() == "Found it."
    assert model.calls[0].tool_names == ["reset_equipped_tools"]
    assert "browsing" in str(model.calls[0].tools)
    assert set(model.calls[1].tool_names) == {"reset_equipped_tools", "search"}
    msgs = await history(agent.memory)
    assert "Cite your sources." in texts_of(msgs[2])
    assert texts_of(msgs[4]) == "results for anyio"


async def test_observe_records_without_replying() -> None:
    model = ScriptedChatModel([])
    agent = make_agent(model)
    await agent.observe(Msg("Bob", "I am Bob", "assistant"))
    assert [m.name for m in await history(agent.memory)] == ["Bob"]
    assert model.calls == []


async def test_state_holds_memory_toolkit_name_and_prompt() -> None:
    agent = make_agent(ScriptedChatModel([response(text("hi"))]), _toolkit(add))
    await agent(user("hello"))
    state = agent.state_dict()
    assert {"memory", "toolkit", "name", "_sys_prompt"} <= set(state)
    assert state["name"] == "Friday" and state["_sys_prompt"] == "You are a helpful assistant."
    other = make_agent(ScriptedChatModel([]), _toolkit(add))
    other.memory.load_state_dict(state["memory"])
    assert [m.get_text_content() for m in await history(other.memory)] == ["hello", "hi"]


def test_constructor_rejects_bad_arguments() -> None:
    model = ScriptedChatModel([])
    formatter = OpenAIChatFormatter()
    with pytest.raises(ValueError, match="long_term_memory_mode"):
        ReActAgent("a", "p", model, formatter, long_term_memory_mode="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_iters"):
        ReActAgent("a", "p", model, formatter, max_iters=0)
    with pytest.raises(TypeError, match="model must be a ChatModelBase"):
        ReActAgent("a", "p", "gpt-4o", formatter)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="formatter"):
        ReActAgent("a", "p", model, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="toolkit"):
        ReActAgent("a", "p", model, formatter, toolkit=[add])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"knowledge\[0\]"):
        ReActAgent("a", "p", model, formatter, knowledge=["docs"])  # type: ignore[list-item]


async def test_reply_rejects_bad_input() -> None:
    agent = make_agent(ScriptedChatModel([]))
    with pytest.raises(TypeError, match="Msg"):
        await agent("hello")
    with pytest.raises(TypeError, match="structured_model"):
        await agent(user("x"), structured_model=42)
    assert await agent.memory.size() == 0


async def test_reply_metadata_is_agentscopes_and_the_outcome_is_on_the_agent() -> None:
    # AgentScope's reply carries no metadata without a structured model; why the reply ended
    # and what it cost are read from the agent instead, so nothing extra is printed or saved.
    model = ScriptedChatModel([response(call("add", "c1", a=1, b=2)), response(text("3"))])
    agent = make_agent(model, _toolkit(add))
    assert agent.generate_reason is None and agent.usage is None
    seen_in_hook: list[Any] = []
    agent.register_instance_hook(
        "post_reply", "outcome", lambda self, kw, out: seen_in_hook.append(self.generate_reason)
    )
    reply = await agent(user("1 + 2?"))
    assert reply.metadata == {}
    assert reply.to_dict()["metadata"] == {}
    assert "generate_reason" not in repr(reply) and "usage" not in repr(reply)
    saved = repr(agent.state_dict()) + repr([m.to_dict() for m in await history(agent.memory)])
    assert "generate_reason" not in saved and "input_tokens" not in saved
    assert agent.generate_reason == GenerateReason.MODEL_STOP == "model_stop"
    assert seen_in_hook == [GenerateReason.MODEL_STOP]
    assert agent.usage is not None
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (20, 10)
    # Reset when the next call starts.
    agent.model = ScriptedChatModel([response(text("again"))])
    agent.register_instance_hook(
        "pre_reply", "during", lambda self, kw: seen_in_hook.append(self.generate_reason)
    )
    await agent(user("again"))
    assert seen_in_hook == [GenerateReason.MODEL_STOP, None, GenerateReason.MODEL_STOP]
    assert (agent.usage.input_tokens, agent.usage.output_tokens) == (10, 5)
