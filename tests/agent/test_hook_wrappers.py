"""The generated hook wrappers: same signature as the method, one route with or without hooks."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from agentscope_rt.agent import AgentBase
from agentscope_rt.exception import AgentError
from agentscope_rt.message import Msg


class Odd(AgentBase):
    """Hooked methods with every kind of parameter."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Any] = []

    async def reply(
        self, first: Any, /, second: int = 2, *rest: Any, key: str = "k", **extra: Any
    ) -> Msg:
        self.seen.append((first, second, rest, key, extra))
        return Msg("odd", "ok", "assistant")

    async def observe(self, *args: Any, **kwargs: Any) -> None:
        self.seen.append(("observe", args, kwargs))

    async def print(self, msg: Msg, last: bool = True) -> None:  # no speech parameter
        self.seen.append(("print", msg.id, last))


def test_wrapper_keeps_signature_and_is_a_coroutine_function() -> None:
    assert inspect.iscoroutinefunction(Odd.reply)
    assert inspect.iscoroutinefunction(Odd().observe)
    assert str(inspect.signature(Odd.reply)) == str(
        inspect.signature(Odd.reply.__wrapped__)  # type: ignore[attr-defined]
    )
    assert Odd.reply.__name__ == "reply"


async def test_every_parameter_kind_reaches_the_method_without_and_with_hooks() -> None:
    agent = Odd()
    await agent(1, 3, 4, 5, key="x", more=6)
    assert agent.seen[-1] == (1, 3, (4, 5), "x", {"more": 6})
    seen_by_hook: list[dict[str, Any]] = []

    def pre(self: AgentBase, kwargs: dict[str, Any]) -> None:
        seen_by_hook.append(kwargs)

    agent.register_instance_hook("pre_reply", "spy", pre)
    await agent(1, 3, 4, 5, key="x", more=6)
    assert agent.seen[-1] == (1, 3, (4, 5), "x", {"more": 6})
    assert seen_by_hook == [
        {"first": 1, "second": 3, "rest": (4, 5), "key": "x", "extra": {"more": 6}}
    ]
    agent.remove_instance_hook("pre_reply", "spy")
    assert agent._instance_hooks == {}  # no empty bucket left behind
    await agent(7)
    assert agent.seen[-1] == (7, 2, (), "k", {})


async def test_a_bad_call_fails_as_a_call_of_the_method_would() -> None:
    agent = Odd()
    with pytest.raises(TypeError):
        await agent.reply()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        await agent.reply(1, 2, second=3)  # type: ignore[misc]


async def test_input_checks_find_msg_in_star_args_and_print_without_speech() -> None:
    agent = Odd()
    msg = Msg("u", "hi", "user")
    await agent.observe(msg)
    await agent.observe(msg=msg)
    with pytest.raises(TypeError, match=r"Odd\.observe"):
        await agent.observe("plain text")
    with pytest.raises(TypeError, match=r"Odd\.observe"):
        await agent.observe(msg="plain text")
    await agent.print(msg, False)
    assert agent.seen[-1] == ("print", msg.id, False)
    with pytest.raises(TypeError, match=r"Odd\.print"):
        await agent.print("plain text")  # type: ignore[arg-type]


async def test_missing_super_init_is_named() -> None:
    class NoInit(AgentBase):
        def __init__(self) -> None:  # forgets super().__init__()
            pass

        async def reply(self, msg: Msg | None = None) -> Msg:
            return Msg("n", "x", "assistant")

        async def observe(self, msg: Msg | None) -> None:
            return None

    with pytest.raises(AgentError, match=r"super\(\).__init__"):
        await NoInit()()
    agent = NoInit()
    with pytest.raises(AgentError, match=r"super\(\).__init__"):
        agent.register_instance_hook("pre_reply", "h", lambda self, kwargs: None)


async def test_a_class_hook_reaches_a_call_made_from_the_agents_own_loop() -> None:
    calls: list[str] = []

    class Sub(Odd):
        pass

    def post(self: AgentBase, kwargs: dict[str, Any], output: Any) -> None:
        calls.append(type(self).__name__)

    Sub.register_class_hook("post_reply", "count", post)
    try:
        await Sub()(1)
        await Odd()(1)  # a base class does not see a subclass's hook
    finally:
        Sub.clear_class_hooks()
    assert calls == ["Sub"]
