"""An interrupt requested before the reply returns ends it as interrupted, wherever it came from.

A hook that runs on the last step of a reply (``post_reply``, or a print hook on the final
print) may call ``interrupt()`` with no checkpoint left before the reply's scope closes: the
scope then never raises the cancellation, and the call must still answer with
``handle_interrupt``'s message.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentscope_rt.agent import AgentBase, GenerateReason
from agentscope_rt.message import Msg

INTERRUPT_TEXT = "I noticed that you have interrupted me. What can I do for you?"


def user(text: str = "hi") -> Msg:
    return Msg("user", text, "user")


class PlainAgent(AgentBase):
    """Replies without any checkpoint (and prints its answer when *print_reply*), with the
    default ``handle_interrupt``."""

    def __init__(self, print_reply: bool = False, interrupt_in_reply: bool = False) -> None:
        super().__init__()
        self.name = "plain"
        self.print_reply = print_reply
        self.interrupt_in_reply = interrupt_in_reply
        self.replies = 0
        self.set_console_output_enabled(False)

    async def reply(self, msg: Msg | None = None) -> Msg:
        self.replies += 1
        answer = Msg(self.name, f"answer {self.replies}", "assistant")
        if self.print_reply:
            await self.print(answer, True)
        if self.interrupt_in_reply:
            self.interrupt()
        return answer

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        return None


@pytest.fixture
def agent_class() -> Iterator[type[PlainAgent]]:
    """A fresh subclass per test, so class hooks never leak between tests."""

    class Fresh(PlainAgent):
        pass

    yield Fresh
    Fresh.clear_class_hooks()


def _assert_interrupted(agent: AgentBase, reply: Msg) -> None:
    assert reply.get_text_content() == INTERRUPT_TEXT
    assert reply.metadata == {"_is_interrupted": True}
    assert agent.generate_reason is GenerateReason.INTERRUPTED
    assert reply.invocation_id == agent._reply_id
    assert not agent.is_replying


async def _next_call_is_normal(agent: PlainAgent) -> None:
    agent.clear_instance_hooks()
    type(agent).clear_class_hooks()
    agent.interrupt_in_reply = False
    again = await agent(user("again"))
    assert again.get_text_content() == f"answer {agent.replies}"
    assert again.metadata == {}
    assert agent.generate_reason is None


@pytest.mark.parametrize("is_async", [False, True])
async def test_post_reply_instance_hook_interrupting_ends_the_call_interrupted(
    agent_class: type[PlainAgent], is_async: bool
) -> None:
    agent = agent_class()
    seen: list[Any] = []

    def interrupting(self: AgentBase, kwargs: dict[str, Any], output: Msg) -> None:
        seen.append(output.get_text_content())
        self.interrupt()

    async def interrupting_async(self: AgentBase, kwargs: dict[str, Any], output: Msg) -> None:
        interrupting(self, kwargs, output)

    agent.register_instance_hook(
        "post_reply", "stop", interrupting_async if is_async else interrupting
    )
    reply = await agent(user())
    assert seen == ["answer 1"]
    _assert_interrupted(agent, reply)
    await _next_call_is_normal(agent)


async def test_post_reply_class_hook_interrupting_ends_the_call_interrupted(
    agent_class: type[PlainAgent],
) -> None:
    agent_class.register_class_hook(
        "post_reply", "stop", lambda self, kwargs, output: self.interrupt()
    )
    agent = agent_class()
    _assert_interrupted(agent, await agent(user()))
    await _next_call_is_normal(agent)


@pytest.mark.parametrize("hook_type", ["pre_print", "post_print"])
async def test_print_hook_interrupting_the_final_print_ends_the_call_interrupted(
    agent_class: type[PlainAgent], hook_type: str
) -> None:
    agent = agent_class(print_reply=True)
    printed: list[str | None] = []

    def interrupting(self: AgentBase, kwargs: dict[str, Any], *output: Any) -> None:
        printed.append(kwargs["msg"].get_text_content())
        self.interrupt()

    agent.register_instance_hook(hook_type, "stop", interrupting)
    reply = await agent(user())
    assert printed == ["answer 1"]
    _assert_interrupted(agent, reply)
    await _next_call_is_normal(agent)


async def test_interrupt_called_by_the_reply_itself_just_before_returning(
    agent_class: type[PlainAgent],
) -> None:
    agent = agent_class(interrupt_in_reply=True)
    _assert_interrupted(agent, await agent(user()))
    await _next_call_is_normal(agent)


async def test_an_interrupt_after_the_reply_returned_changes_nothing(
    agent_class: type[PlainAgent],
) -> None:
    agent = agent_class()
    reply = await agent(user())
    agent.interrupt()  # idle: a no-op
    assert reply.get_text_content() == "answer 1"
    assert agent.generate_reason is None
    again = await agent(user())
    assert again.get_text_content() == "answer 2"
    assert again.metadata == {}


async def test_outer_cancel_with_a_hook_interrupt_propagates_without_handle_interrupt(
    agent_class: type[PlainAgent],
) -> None:
    handled: list[bool] = []

    class Tracking(agent_class):  # type: ignore[valid-type,misc]
        async def handle_interrupt(self, *args: Any, **kwargs: Any) -> Msg:
            handled.append(True)
            return await super().handle_interrupt(*args, **kwargs)

    agent = Tracking()
    reached_end = False
    with anyio.CancelScope() as outer:

        def both(self: AgentBase, kwargs: dict[str, Any], output: Msg) -> None:
            outer.cancel()
            self.interrupt()

        agent.register_instance_hook("post_reply", "both", both)
        await agent(user())
        reached_end = True
    assert outer.cancelled_caught
    assert not reached_end
    assert handled == []
    assert not agent.is_replying
    await _next_call_is_normal(agent)


async def test_a_subscriber_interrupting_the_sender_after_its_reply_changes_nothing(
    agent_class: type[PlainAgent],
) -> None:
    sender = agent_class()

    class Listener(AgentBase):
        async def reply(self, *args: Any, **kwargs: Any) -> Msg:
            return Msg("listener", "", "assistant")

        async def observe(self, msg: Msg | list[Msg] | None) -> None:
            sender.interrupt()  # the reply is over: nothing to interrupt
            await anyio.lowlevel.checkpoint()

    sender.reset_subscribers("hub", [Listener()])
    reply = await sender(user())
    assert reply.get_text_content() == "answer 1"
    assert sender.generate_reason is None
