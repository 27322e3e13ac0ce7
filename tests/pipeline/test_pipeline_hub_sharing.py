"""A broadcast is held once by its observers' memories, and copy semantics stay: the
publisher's message, each memory's messages once handed out, and what a hook changes are each
their own."""

from __future__ import annotations

from typing import Any

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg, TextBlock, is_shared
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.pipeline import MsgHub


def _agents(count: int) -> list[ReActAgent]:
    model, formatter = ScriptedChatModel(["ok"] * 10), OpenAIChatFormatter()
    agents = [ReActAgent(f"a{index}", "sys", model, formatter) for index in range(count)]
    for agent in agents:
        agent.set_console_output_enabled(False)
    return agents


def _stored(agent: ReActAgent) -> list[Msg]:
    memory = agent.memory
    assert isinstance(memory, InMemoryMemory)
    return memory.get_memory_sync(read_only=True)


async def test_ninety_nine_observers_hold_one_message() -> None:
    agents = _agents(100)
    news = Msg("host", [TextBlock(text="the news")], "user")
    async with MsgHub(agents, enable_auto_broadcast=False) as hub:
        await hub.broadcast(news)
    held = {id(_stored(agent)[0]) for agent in agents}
    assert len(held) == 1
    message = _stored(agents[0])[0]
    assert is_shared(message) and message is not news and message == news


async def test_a_speakers_reply_reaches_its_hub_once() -> None:
    agents = _agents(5)
    async with MsgHub(agents):
        reply = await agents[0](Msg("user", "go", "user"))
    heard = [_stored(agent)[-1] for agent in agents[1:]]
    assert all(msg is heard[0] for msg in heard) and heard[0] == reply
    assert heard[0] is not reply


async def test_changing_the_published_message_afterwards_reaches_no_memory() -> None:
    agents = _agents(3)
    news = Msg("host", [TextBlock(text="before")], "user")
    async with MsgHub(agents, enable_auto_broadcast=False) as hub:
        await hub.broadcast(news)
    news.content[0].text = "after"  # type: ignore[union-attr]
    news.metadata["k"] = 1
    for agent in agents:
        (held,) = _stored(agent)
        assert held.get_text_content() == "before" and held.metadata == {}


async def test_a_message_handed_out_by_one_memory_is_that_memorys_own() -> None:
    first, second = _agents(2)
    async with MsgHub([first, second], enable_auto_broadcast=False) as hub:
        await hub.broadcast(Msg("host", [TextBlock(text="shared")], "user"))
    (mine,) = await first.memory.get_memory()
    assert not is_shared(mine)
    mine.content[0].text = "changed by the first"  # type: ignore[union-attr]
    # The first memory keeps the change (its own message, as in AgentScope) ...
    assert (await first.memory.get_memory())[0].get_text_content() == "changed by the first"
    # ... and the second memory does not see it, through either way of reading.
    assert _stored(second)[0].get_text_content() == "shared"
    (theirs,) = second.memory.content[0][:1]
    assert theirs.get_text_content() == "shared" and not is_shared(theirs)


async def test_a_hook_that_changes_the_message_changes_its_own_copy_only() -> None:
    agents = _agents(3)

    def shout(agent: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        msg = kwargs["msg"]
        msg.content[0].text = msg.content[0].text.upper()
        return kwargs

    agents[1].register_instance_hook("pre_observe", "shout", shout)
    async with MsgHub(agents, enable_auto_broadcast=False) as hub:
        await hub.broadcast(Msg("host", [TextBlock(text="quiet")], "user"))
    texts = [_stored(agent)[0].get_text_content() for agent in agents]
    assert texts == ["quiet", "QUIET", "quiet"]
    assert _stored(agents[0])[0] is _stored(agents[2])[0]


async def test_an_observer_that_copies_before_changing_keeps_its_change_to_itself() -> None:
    class Annotator(ReActAgent):
        async def observe(self, msg: Msg | list[Msg] | None) -> None:
            assert isinstance(msg, Msg)
            mine = msg.copy()
            mine.metadata["seen_by"] = self.name
            await self.memory.add(mine)

    model, formatter = ScriptedChatModel([]), OpenAIChatFormatter()
    annotator = Annotator("ann", "sys", model, formatter)
    others = _agents(2)
    async with MsgHub([annotator, *others], enable_auto_broadcast=False) as hub:
        await hub.broadcast(Msg("host", "hello", "user"))
    assert (await annotator.memory.get_memory())[0].metadata == {"seen_by": "ann"}
    assert all(_stored(agent)[0].metadata == {} for agent in others)


async def test_a_memory_holding_shared_messages_saves_and_loads_them() -> None:
    agents = _agents(2)
    async with MsgHub(agents, enable_auto_broadcast=False) as hub:
        await hub.broadcast(Msg("host", "saved", "user"))
    state = agents[0].memory.state_dict()
    restored = InMemoryMemory()
    restored.load_state_dict(state)
    (msg,) = await restored.get_memory()
    assert msg.get_text_content() == "saved" and not is_shared(msg)
    assert msg == _stored(agents[1])[0]
