"""MemoryBase.synchronous: the agent's plain-function route is offered only while it is the
same as the coroutines, so an override of add/get_memory/delete_by_mark is always seen."""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.memory import InMemoryMemory, MemoryBase
from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel, reply


class Counting(InMemoryMemory):
    """Overrides add: must lose the synchronous route."""

    def __init__(self) -> None:
        super().__init__()
        self.adds = 0

    async def add(
        self, memories: Any, marks: Any = None, allow_duplicates: bool = False, **kwargs: Any
    ) -> None:
        self.adds += 1
        await super().add(memories, marks, allow_duplicates)


class Declared(InMemoryMemory):
    synchronous = True

    async def get_memory(self, *args: Any, **kwargs: Any) -> list[Msg]:
        return await super().get_memory(*args, **kwargs)


def test_flags() -> None:
    assert InMemoryMemory.synchronous and not InMemoryMemory.add_may_wait
    assert not Counting.synchronous and Counting.add_may_wait
    assert Declared.synchronous  # declared by the subclass itself
    assert not MemoryBase.synchronous


async def test_an_add_override_sees_every_record_of_a_reply() -> None:
    memory = Counting()
    agent = ReActAgent(
        name="A",
        sys_prompt="",
        model=ScriptedChatModel([reply("hello")]),
        formatter=OpenAIChatFormatter(),
        memory=memory,
    )
    agent.set_console_output_enabled(False)
    await agent(Msg("user", "hi", "user"))
    assert memory.adds == 2  # the input and the answer
    assert [m.role for m in await memory.get_memory()] == ["user", "assistant"]


async def test_sync_functions_match_the_coroutines() -> None:
    memory = InMemoryMemory()
    msg = Msg("user", "hi", "user")
    memory.add_sync(msg, marks="hint")
    stored = memory.get_memory_sync()
    assert stored == await memory.get_memory() and stored[0] is not msg  # a copy
    owned = Msg("a", "x", "assistant")
    memory.add_sync(owned, copy=False)
    assert memory.get_memory_sync()[-1] is owned
    assert memory.delete_by_mark_sync("hint") == 1
    assert await memory.size() == 1
    with pytest.raises(TypeError):
        memory.add_sync("text")  # type: ignore[arg-type]
