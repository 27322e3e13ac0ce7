"""Reasoning and acting hooks: their arguments, rewriting tool calls, and stop requests."""

from __future__ import annotations

from typing import Any

from agentscope_rt.agent import GenerateReason, ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock, ToolUseBlock
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.tool import Toolkit, ToolResponse

from ._support import call, history, make_agent, response, text, texts_of, tool_pair_problems, user


def delete_file(path: str) -> ToolResponse:
    """Delete a file.

    Args:
        path: the file to delete.
    """
    return ToolResponse(content=[TextBlock(text=f"deleted {path}")])


def _toolkit() -> Toolkit:
    toolkit = Toolkit()
    toolkit.register_tool_function(delete_file)
    return toolkit


async def test_hooks_fire_with_documented_arguments() -> None:
    seen: list[tuple[str, Any]] = []
    model = ScriptedChatModel(
        [response(call("delete_file", "c1", path="/tmp/a")), response(text("done"))]
    )
    agent = make_agent(model, _toolkit())

    agent.register_instance_hook(
        "pre_reasoning", "p", lambda self, kw: seen.append(("pre_reasoning", kw))
    )
    agent.register_instance_hook(
        "post_reasoning",
        "p",
        lambda self, kw, out: seen.append(("post_reasoning", out.get_content_blocks())),
    )
    agent.register_instance_hook(
        "pre_acting", "p", lambda self, kw: seen.append(("pre_acting", kw))
    )
    agent.register_instance_hook(
        "post_acting", "p", lambda self, kw, out: seen.append(("post_acting", out))
    )
    await agent(user("clean up"))

    kinds = [kind for kind, _ in seen]
    assert kinds == [
        "pre_reasoning",
        "post_reasoning",
        "pre_acting",
        "post_acting",
        "pre_reasoning",
        "post_reasoning",
    ]
    assert seen[0][1] == {"tool_choice": None}
    tool_call = seen[2][1]["tool_call"]
    assert isinstance(tool_call, ToolUseBlock) and tool_call.input == {"path": "/tmp/a"}
    assert seen[3][1] is None  # not the finish function: no structured output
    assert seen[5][1][0].text == "done"


async def test_pre_acting_hook_rewrites_the_tool_call() -> None:
    model = ScriptedChatModel(
        [response(call("delete_file", "c1", path="/etc/passwd")), response(text("done"))]
    )
    agent = make_agent(model, _toolkit())

    def sandbox(self: ReActAgent, kwargs: dict[str, Any]) -> dict[str, Any]:
        tool_call = kwargs["tool_call"]
        tool_call.input["path"] = "/sandbox" + tool_call.input["path"]
        return {"tool_call": tool_call}

    agent.register_instance_hook("pre_acting", "sandbox", sandbox)
    await agent(user("delete it"))
    msgs = await history(agent.memory)
    assert texts_of(msgs[2]) == "deleted /sandbox/etc/passwd"
    assert tool_pair_problems(msgs) == []


async def test_post_reasoning_hook_rewrites_the_calls_and_memory_shows_what_ran() -> None:
    model = ScriptedChatModel(
        [response(call("delete_file", "c1", path="/important")), response(text("done"))]
    )
    agent = make_agent(model, _toolkit())

    def redirect(self: ReActAgent, kwargs: dict[str, Any], output: Msg) -> Msg:
        for block in output.get_content_blocks("tool_use"):
            block.input = {"path": "/tmp/scratch"}
        return output

    agent.register_instance_hook("post_reasoning", "redirect", redirect)
    await agent(user("delete"))
    msgs = await history(agent.memory)
    assert msgs[1].get_content_blocks("tool_use")[0].input == {"path": "/tmp/scratch"}
    assert texts_of(msgs[2]) == "deleted /tmp/scratch"
    assert len(msgs) == 4 and tool_pair_problems(msgs) == []


async def test_stop_after_reasoning_then_resume_runs_the_held_calls() -> None:
    model = ScriptedChatModel(
        [response(call("delete_file", "c1", path="/tmp/x")), response(text("Deleted."))]
    )
    agent = make_agent(model, _toolkit())

    def ask_human(self: ReActAgent, kwargs: dict[str, Any], output: Msg) -> None:
        if output.get_content_blocks("tool_use"):
            self.request_stop()

    agent.register_instance_hook("post_reasoning", "ask_human", ask_human)
    held = await agent(user("delete /tmp/x"))
    assert agent.generate_reason == GenerateReason.REASONING_STOP_REQUESTED
    assert held.metadata == {}
    assert held.get_content_blocks("tool_use")[0].input == {"path": "/tmp/x"}
    msgs = await history(agent.memory)
    assert [m.role for m in msgs] == ["user", "assistant"]  # the call has not run

    agent.remove_instance_hook("post_reasoning", "ask_human")
    done = await agent()
    assert done.get_text_content() == "Deleted."
    assert agent.generate_reason == GenerateReason.MODEL_STOP
    msgs = await history(agent.memory)
    assert [m.role for m in msgs] == ["user", "assistant", "system", "assistant"]
    assert texts_of(msgs[2]) == "deleted /tmp/x"
    assert tool_pair_problems(msgs) == []
    assert len(model.calls) == 2


async def test_a_new_message_instead_of_resuming_skips_the_held_calls() -> None:
    model = ScriptedChatModel(
        [response(call("delete_file", "c1", path="/")), response(text("Understood."))]
    )
    agent = make_agent(model, _toolkit())
    agent.register_instance_hook(
        "post_reasoning", "stop", lambda self, kw, out: self.request_stop()
    )
    await agent(user("delete everything"))
    agent.remove_instance_hook("post_reasoning", "stop")

    reply = await agent(user("No, do not delete anything."))
    assert reply.get_text_content() == "Understood."
    msgs = await history(agent.memory)
    assert [m.role for m in msgs] == ["user", "assistant", "system", "user", "assistant"]
    assert "not executed" in texts_of(msgs[2])
    assert tool_pair_problems(msgs) == []


async def test_stop_after_acting_then_resume_goes_on_reasoning() -> None:
    model = ScriptedChatModel(
        [response(call("delete_file", "c1", path="/tmp/y")), response(text("All done."))]
    )
    agent = make_agent(model, _toolkit())
    agent.register_instance_hook("post_acting", "stop", lambda self, kw, out: self.request_stop())
    paused = await agent(user("delete /tmp/y"))
    assert agent.generate_reason == GenerateReason.ACTING_STOP_REQUESTED
    assert paused.metadata == {}
    msgs = await history(agent.memory)
    assert texts_of(msgs[2]) == "deleted /tmp/y"
    assert tool_pair_problems(msgs) == []

    agent.clear_instance_hooks()
    done = await agent()
    assert done.get_text_content() == "All done."
    assert [m.role for m in await history(agent.memory)] == [
        "user",
        "assistant",
        "system",
        "assistant",
    ]


async def test_class_hook_on_a_subclass_does_not_touch_other_agents() -> None:
    calls: list[str] = []

    class Audited(ReActAgent):
        pass

    Audited.register_class_hook(
        "pre_acting", "audit", lambda self, kw: calls.append(kw["tool_call"].name)
    )
    try:
        model = ScriptedChatModel(
            [response(call("delete_file", "c1", path="p")), response(text("ok"))]
        )
        audited = Audited("A", "p", model, make_agent(model).formatter, toolkit=_toolkit())
        audited.set_console_output_enabled(False)
        await audited(user("x"))
        plain = make_agent(
            ScriptedChatModel(
                [response(call("delete_file", "c2", path="q")), response(text("ok"))]
            ),
            _toolkit(),
        )
        await plain(user("y"))
        assert calls == ["delete_file"]
    finally:
        Audited.clear_class_hooks()


async def test_with_the_console_off_printing_still_reaches_hooks_queues_and_overrides() -> None:
    # With nothing to print to, the agent skips its print calls; each way of listening to
    # them must switch that off again.
    import anyio

    def script() -> ScriptedChatModel:
        return ScriptedChatModel(
            [response(call("delete_file", "1", path="a")), response(text("done"))]
        )

    printed: list[str] = []

    def hook(agent: Any, kwargs: dict[str, Any]) -> None:
        printed.append(kwargs["msg"].role)

    agent = make_agent(script(), _toolkit())
    agent.register_instance_hook("pre_print", "spy", hook)
    await agent(user("go"))
    assert printed == ["assistant", "system", "assistant"]

    printed.clear()
    ReActAgent.register_class_hook("pre_print", "spy", hook)
    try:
        await make_agent(script(), _toolkit())(user("go"))
    finally:
        ReActAgent.clear_class_hooks()
    assert printed == ["assistant", "system", "assistant"]

    send, receive = anyio.create_memory_object_stream[Any](10)
    agent = make_agent(script(), _toolkit())
    agent.set_msg_queue_enabled(True, send)
    await agent(user("go"))
    send.close()
    assert [msg.role async for msg, _, _ in receive] == ["assistant", "system", "assistant"]
    receive.close()

    class Loud(ReActAgent):
        async def print(self, msg: Msg, last: bool = True) -> None:
            printed.append(msg.role)

    printed.clear()
    loud = Loud(
        name="Friday",
        sys_prompt="hi",
        model=script(),
        formatter=OpenAIChatFormatter(),
        toolkit=_toolkit(),
    )
    loud.set_console_output_enabled(False)
    await loud(user("go"))
    assert printed == ["assistant", "system", "assistant"]

    agent = make_agent(script(), _toolkit())
    agent.register_instance_hook("pre_print", "spy", hook)
    agent.remove_instance_hook("pre_print", "spy")
    printed.clear()
    await agent(user("go"))
    assert printed == []


async def test_a_hook_registered_by_a_tool_applies_to_the_next_step_of_the_same_reply() -> None:
    seen: list[str] = []

    def spy(agent: Any, kwargs: dict[str, Any]) -> None:
        seen.append(kwargs["tool_call"].id)

    def register_spy() -> ToolResponse:
        """Register the spy."""
        agent.register_instance_hook("pre_acting", "spy", spy)
        return ToolResponse(content=[TextBlock(text="ok")])

    toolkit = Toolkit()
    toolkit.register_tool_function(register_spy)
    model = ScriptedChatModel(
        [
            response(call("register_spy", "1")),
            response(call("register_spy", "2")),
            response(text("done")),
        ]
    )
    agent = make_agent(model, toolkit)
    await agent(user("go"))
    assert seen == ["2"]


async def test_steps_replaced_on_the_instance_are_the_ones_that_run() -> None:
    agent = make_agent(
        ScriptedChatModel([response(call("delete_file", "1", path="a")), response(text("done"))]),
        _toolkit(),
    )
    ran: list[str] = []
    original_reasoning, original_acting = agent._reasoning, agent._acting

    async def reasoning(tool_choice: str | None = None) -> Msg:
        ran.append("reasoning")
        return await original_reasoning(tool_choice=tool_choice)

    async def acting(tool_call: ToolUseBlock) -> dict[str, Any] | None:
        ran.append("acting")
        return await original_acting(tool_call=tool_call)

    agent._reasoning = reasoning  # type: ignore[method-assign]
    agent._acting = acting  # type: ignore[method-assign]
    await agent(user("go"))
    assert ran == ["reasoning", "acting", "reasoning"]
