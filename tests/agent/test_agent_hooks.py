"""Hooks: order, rewriting, copies, subclass isolation, the super() guard, errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentscope_rt.agent import AgentBase, ReActAgentBase
from agentscope_rt.message import Msg, TextBlock, ToolUseBlock

from ._support import EchoAgent


def user(text: str = "hi") -> Msg:
    return Msg("user", text, "user")


@pytest.fixture
def classes() -> Iterator[dict[str, type[EchoAgent]]]:
    """Fresh agent classes per test, so class hooks never leak between tests."""

    class Base(EchoAgent):
        pass

    class Sub(Base):
        pass

    class SubSub(Sub):
        pass

    class Sibling(Base):
        pass

    made = {"Base": Base, "Sub": Sub, "SubSub": SubSub, "Sibling": Sibling}
    yield made
    for cls in made.values():
        cls.clear_class_hooks()


async def test_order_instance_then_class_each_in_registration_order(
    classes: dict[str, type[EchoAgent]],
) -> None:
    calls: list[str] = []

    def record(tag: str) -> Any:
        return lambda self, kwargs: calls.append(tag)

    base, sub = classes["Base"], classes["Sub"]
    base.register_class_hook("pre_reply", "c1", record("class-base-1"))
    sub.register_class_hook("pre_reply", "c2", record("class-sub-2"))
    base.register_class_hook("pre_reply", "c3", record("class-base-3"))
    agent = sub()
    agent.register_instance_hook("pre_reply", "i1", record("inst-1"))
    agent.register_instance_hook("pre_reply", "i2", record("inst-2"))
    await agent(user())
    assert calls == ["inst-1", "inst-2", "class-base-1", "class-sub-2", "class-base-3"]

    # Same name replaces in place.
    calls.clear()
    agent.register_instance_hook("pre_reply", "i1", record("inst-1-new"))
    base.register_class_hook("pre_reply", "c1", record("class-base-1-new"))
    await agent(user())
    assert calls == ["inst-1-new", "inst-2", "class-base-1-new", "class-sub-2", "class-base-3"]


async def test_class_hooks_isolated_to_subclass_and_descendants(
    classes: dict[str, type[EchoAgent]],
) -> None:
    hit: list[str] = []
    classes["Sub"].register_class_hook("pre_reply", "h", lambda self, kw: hit.append(self.name))
    for name, cls in classes.items():
        await cls(name)(user())
    assert hit == ["Sub", "SubSub"]
    assert EchoAgent("plain").received == []
    await EchoAgent("plain")(user())
    assert hit == ["Sub", "SubSub"]

    classes["Sub"].remove_class_hook("pre_reply", "h")
    await classes["SubSub"]("again")(user())
    assert hit == ["Sub", "SubSub"]


async def test_pre_hook_rewrites_arguments_however_passed() -> None:
    def rewrite(self: EchoAgent, kwargs: dict[str, Any]) -> dict[str, Any]:
        assert set(kwargs) == {"msg", "suffix"}
        return {**kwargs, "msg": user("rewritten"), "suffix": "!"}

    agent = EchoAgent()
    agent.register_instance_hook("pre_reply", "rw", rewrite)
    assert (await agent(user("a"))).get_text_content() == "rewritten!"
    assert (await agent(msg=user("b"))).get_text_content() == "rewritten!"
    assert (await agent(user("c"), "?")).get_text_content() == "rewritten!"


async def test_hooks_cannot_corrupt_caller_objects() -> None:
    def vandal(self: EchoAgent, kwargs: dict[str, Any]) -> None:
        kwargs["msg"].content = "vandalised"
        kwargs["msg"].metadata["x"] = 1
        kwargs["suffix"] = "vandalised"

    def post_vandal(self: EchoAgent, kwargs: dict[str, Any], output: Msg) -> None:
        output.content = "vandalised"

    agent = EchoAgent()
    agent.register_instance_hook("pre_reply", "v", vandal)
    agent.register_instance_hook("post_reply", "v", post_vandal)
    msg = user("original")
    reply = await agent(msg)
    assert msg.content == "original" and msg.metadata == {}
    assert agent.received[0] is msg  # nothing returned: the caller's own arguments are used
    assert reply.get_text_content() == "original"


async def test_no_hooks_passes_caller_objects_through_untouched() -> None:
    agent = EchoAgent()
    msg = user()
    await agent(msg)
    assert agent.received[0] is msg


async def test_post_hook_rewrites_output_and_chains() -> None:
    agent = EchoAgent()
    agent.register_instance_hook(
        "post_reply", "a", lambda self, kw, out: Msg(out.name, out.content + "-a", "assistant")
    )

    async def async_post(self: EchoAgent, kwargs: dict[str, Any], out: Msg) -> Msg:
        await anyio.lowlevel.checkpoint()
        return Msg(out.name, out.content + "-b", "assistant")

    agent.register_instance_hook("post_reply", "b", async_post)
    reply = await agent(user("x"))
    assert reply.content == "x-a-b"
    assert reply.invocation_id == agent._reply_id


async def test_async_pre_hook_and_callable_object() -> None:
    class Hook:
        def __init__(self) -> None:
            self.seen: list[str] = []

        async def __call__(self, agent: EchoAgent, kwargs: dict[str, Any]) -> dict[str, Any]:
            await anyio.lowlevel.checkpoint()
            self.seen.append(kwargs["msg"].content)
            return {**kwargs, "suffix": "+"}

    hook = Hook()
    agent = EchoAgent()
    agent.register_instance_hook("pre_reply", "obj", hook)
    assert (await agent(user("q"))).content == "q+"
    assert hook.seen == ["q"]


async def test_super_reply_fires_hooks_once() -> None:
    class Outer(EchoAgent):
        async def reply(self, msg: Msg | None = None, suffix: str = "", extra: int = 0) -> Msg:
            inner = await super().reply(msg, suffix)
            return Msg(self.name, f"{inner.content}/{extra}", "assistant")

    pre: list[dict[str, Any]] = []
    post: list[Msg] = []
    agent = Outer()
    agent.register_instance_hook("pre_reply", "p", lambda self, kw: pre.append(kw))
    agent.register_instance_hook("post_reply", "p", lambda self, kw, out: post.append(out))
    reply = await agent(user("z"), extra=3)
    assert reply.content == "z/3"
    assert len(pre) == 1 and set(pre[0]) == {"msg", "suffix", "extra"}
    assert [m.content for m in post] == ["z/3"]


async def test_varargs_are_normalised_as_agentscope_does() -> None:
    class Varargs(EchoAgent):
        async def reply(self, *args: Any, **kwargs: Any) -> Msg:  # type: ignore[override]
            return Msg(self.name, f"{len(args)}:{sorted(kwargs)}", "assistant")

    seen: list[dict[str, Any]] = []
    agent = Varargs()
    agent.register_instance_hook("pre_reply", "s", lambda self, kw: seen.append(kw))
    reply = await agent(user(), user(), flag=True)
    assert reply.content == "2:['flag']"
    assert list(seen[0]) == ["args", "kwargs"]
    assert len(seen[0]["args"]) == 2 and seen[0]["kwargs"] == {"flag": True}


async def test_hook_exception_propagates_and_nothing_is_broadcast() -> None:
    agent = EchoAgent()
    listener = EchoAgent("listener")
    agent.reset_subscribers("hub", [listener])

    def boom(self: EchoAgent, kwargs: dict[str, Any], out: Msg) -> None:
        raise RuntimeError("hook failed")

    agent.register_instance_hook("post_reply", "boom", boom)
    with pytest.raises(RuntimeError, match="hook failed"):
        await agent(user())
    assert listener.observed == []
    agent.remove_instance_hook("post_reply", "boom")
    await agent(user())
    assert len(listener.observed) == 1


async def test_observe_and_print_hooks() -> None:
    agent = EchoAgent()
    agent.register_instance_hook(
        "pre_observe", "tag", lambda self, kw: {"msg": Msg("x", "tagged", "user")}
    )
    await agent.observe(user("raw"))
    assert agent.observed[0].content == "tagged"  # type: ignore[union-attr]

    printed: list[tuple[str, bool]] = []
    agent.register_instance_hook(
        "post_print", "rec", lambda self, kw, out: printed.append((kw["msg"].content, kw["last"]))
    )
    await agent.print(user("shown"), last=False)
    assert printed == [("shown", False)]


async def test_react_reasoning_and_acting_hooks() -> None:
    class Stepper(ReActAgentBase):
        def __init__(self) -> None:
            super().__init__()
            self.name = "stepper"

        async def reply(self, msg: Msg | None = None) -> Msg:
            thought = await self._reasoning(tool_choice="auto")
            result = await self._acting(ToolUseBlock(id="1", name="t", input={}))
            return Msg(self.name, f"{thought.content}|{result}", "assistant")

        async def observe(self, msg: Msg | list[Msg] | None) -> None:
            return None

        async def _reasoning(self, tool_choice: str | None = None) -> Msg:
            return Msg(self.name, f"think({tool_choice})", "assistant")

        async def _acting(self, tool_call: ToolUseBlock) -> str:
            return f"act({tool_call.name})"

    agent = Stepper()
    original_block: list[Any] = []

    def pre_acting(self: Stepper, kw: dict[str, Any]) -> dict[str, Any]:
        original_block.append(kw["tool_call"])
        kw["tool_call"].name = "renamed"
        return kw

    agent.register_instance_hook("pre_reasoning", "r", lambda s, kw: {"tool_choice": "none"})
    agent.register_instance_hook("pre_acting", "a", pre_acting)
    agent.register_instance_hook("post_acting", "a", lambda s, kw, out: out.upper())
    reply = await agent(user())
    assert reply.content == "think(none)|ACT(RENAMED)"
    assert isinstance(original_block[0], ToolUseBlock)
    with pytest.raises(ValueError, match="unknown hook type 'pre_reasoning'"):
        EchoAgent().register_instance_hook("pre_reasoning", "x", lambda s, kw: None)


async def test_clear_hooks(classes: dict[str, type[EchoAgent]]) -> None:
    calls: list[str] = []
    base, sub = classes["Base"], classes["Sub"]
    base.register_class_hook("pre_reply", "b", lambda s, kw: calls.append("base"))
    sub.register_class_hook("pre_reply", "s", lambda s, kw: calls.append("sub"))
    sub.register_class_hook("post_reply", "s", lambda s, kw, o: calls.append("sub-post"))
    agent = sub()
    agent.register_instance_hook("pre_reply", "i", lambda s, kw: calls.append("inst"))
    agent.register_instance_hook("pre_observe", "i", lambda s, kw: calls.append("obs"))
    agent.clear_instance_hooks("pre_reply")
    await agent.observe(None)
    agent.clear_instance_hooks()
    sub.clear_class_hooks("pre_reply")
    await agent(user())
    assert calls == ["obs", "base", "sub-post"]
    sub.clear_class_hooks()
    calls.clear()
    await agent(user())
    assert calls == ["base"]


def test_registration_errors(classes: dict[str, type[EchoAgent]]) -> None:
    agent = EchoAgent()
    with pytest.raises(ValueError, match="unknown hook type 'pre_talk'"):
        agent.register_instance_hook("pre_talk", "x", lambda s, kw: None)
    with pytest.raises(ValueError, match="unknown hook type"):
        EchoAgent.register_class_hook("post_talk", "x", lambda s, kw, o: None)
    with pytest.raises(TypeError, match="must be callable"):
        agent.register_instance_hook("pre_reply", "x", "not a function")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be callable"):
        EchoAgent.register_class_hook("pre_reply", "x", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="hook_name must be a str"):
        agent.register_instance_hook("pre_reply", 3, lambda s, kw: None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no 'pre_reply' instance hook named 'ghost'"):
        agent.remove_instance_hook("pre_reply", "ghost")
    with pytest.raises(ValueError, match="unknown hook type"):
        agent.remove_instance_hook("nope", "ghost")
    with pytest.raises(ValueError, match="unknown hook type"):
        agent.clear_instance_hooks("nope")
    with pytest.raises(ValueError, match="unknown hook type"):
        EchoAgent.clear_class_hooks("nope")
    classes["Base"].register_class_hook("pre_reply", "mine", lambda s, kw: None)
    with pytest.raises(ValueError, match="registered on Base"):
        classes["Sub"].remove_class_hook("pre_reply", "mine")
    with pytest.raises(ValueError, match="no 'pre_reply' class hook named 'ghost'"):
        classes["Base"].remove_class_hook("pre_reply", "ghost")


async def test_bad_hook_results_raise_clear_errors() -> None:
    agent = EchoAgent()
    agent.register_instance_hook("pre_reply", "bad", lambda s, kw: "oops")
    with pytest.raises(TypeError, match=r"pre hook .bad. of EchoAgent\.reply"):
        await agent(user())
    agent.register_instance_hook("pre_reply", "bad", lambda s, kw: {**kw, "colour": "red"})
    with pytest.raises(TypeError, match="unknown argument 'colour'"):
        await agent(user())
    agent.clear_instance_hooks()
    agent.register_instance_hook("post_reply", "x", lambda s, kw, o: None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        await agent(user(), colour="red")


def test_hooked_methods_must_be_async() -> None:
    with pytest.raises(TypeError, match=r"Sync\.reply must be an async def"):

        class Sync(EchoAgent):
            def reply(self, msg: Msg | None = None) -> Msg:  # type: ignore[override]
                return user()


async def test_missing_super_init_is_reported() -> None:
    from agentscope_rt.exception import AgentError

    class Forgetful(EchoAgent):
        def __init__(self) -> None:
            object.__setattr__(self, "name", "f")

    with pytest.raises(AgentError, match="must call super"):
        await Forgetful()(user())
    with pytest.raises(AgentError, match="must call super"):
        Forgetful().register_instance_hook("pre_reply", "h", lambda agent, kwargs: None)


def test_agent_base_is_abstract() -> None:
    with pytest.raises(TypeError, match="abstract"):
        AgentBase()  # type: ignore[abstract]


def test_block_arguments_are_copied_for_hooks() -> None:
    from agentscope_rt.agent._hooks import copy_hook_value

    block = TextBlock(text="a")
    msg = user()
    copied = copy_hook_value({"b": block, "m": [msg], "t": (msg,), "n": 1, "cls": Msg})
    assert copied["b"] == block and copied["b"] is not block
    assert copied["m"][0] is not msg and copied["m"][0].id == msg.id
    assert copied["t"][0] is not msg
    assert copied["cls"] is Msg and copied["n"] == 1
