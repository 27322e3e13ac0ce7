"""Port of AgentScope's hooks tutorial: instance and class hooks around ``reply`` and ``print``.

A custom agent written the AgentScope way (subclass ``AgentBase``, implement ``reply``,
``observe`` and ``handle_interrupt``), with pre-hooks that replace the keyword arguments by
returning a dict and post-hooks that replace the output, sync and async, instance hooks before
class hooks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agentscope_rt.agent import AgentBase
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg, TextBlock


class TestAgent(AgentBase):
    """The tutorial's agent: prints and returns what it is given."""

    __test__ = False  # not a pytest test class

    def __init__(self) -> None:
        super().__init__()
        self.name = "TestAgent"
        self.memory = InMemoryMemory()

    async def reply(self, msg: Msg) -> Msg:
        await self.print(msg)
        return msg

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        await self.memory.add(msg)

    async def handle_interrupt(self, *args: Any, **kwargs: Any) -> Msg:
        return Msg(self.name, "Interrupted.", "assistant")


def instance_pre_reply_hook(self: AgentBase, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Append a marker to the input message (returning the new kwargs)."""
    msg = kwargs["msg"]
    msg.content.append(TextBlock(type="text", text="[instance-pre-reply]"))
    return {**kwargs, "msg": msg}


async def class_pre_reply_hook(self: AgentBase, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Runs after the instance hook: sees its marker and adds its own."""
    msg = kwargs["msg"]
    msg.content.append(TextBlock(type="text", text="[class-pre-reply]"))
    return {**kwargs, "msg": msg}


def post_reply_hook(self: AgentBase, kwargs: dict[str, Any], output: Msg) -> Msg:
    """Replace the output by a new message."""
    return Msg(self.name, output.get_text_content() + "[post-reply]", "assistant")


PRINTED: list[str] = []


def pre_print_hook(self: AgentBase, kwargs: dict[str, Any]) -> None:
    """Observe what is printed without changing it (returns None)."""
    PRINTED.append(kwargs["msg"].get_text_content())


@pytest.fixture(autouse=True)
def _class_hooks() -> Iterator[None]:
    TestAgent.register_class_hook("pre_reply", "class_pre_reply", class_pre_reply_hook)
    yield
    TestAgent.clear_class_hooks()
    PRINTED.clear()


async def main() -> Msg:
    agent = TestAgent()
    agent.set_console_output_enabled(False)
    agent.register_instance_hook("pre_reply", "instance_pre_reply", instance_pre_reply_hook)
    agent.register_instance_hook("post_reply", "post_reply", post_reply_hook)
    agent.register_instance_hook("pre_print", "pre_print", pre_print_hook)
    msg = Msg("user", [TextBlock(type="text", text="Hello")], "user")
    return await agent(msg)


async def test_the_hook_tutorial_runs_instance_then_class_hooks() -> None:
    result = await main()

    assert PRINTED == ["Hello\n[instance-pre-reply]\n[class-pre-reply]"]
    assert result.get_text_content() == "Hello\n[instance-pre-reply]\n[class-pre-reply][post-reply]"
