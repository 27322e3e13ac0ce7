"""One contract for every working memory: InMemoryMemory, AsyncSQLAlchemyMemory (SQLite and
PostgreSQL) and RedisMemory answer the same calls the same way.

Each test runs once per memory kind (the ``make_memory`` fixture) and per event loop backend.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.exception import MessageFormatError
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.memory import InMemoryMemory, MemoryBase, MemoryMark
from agentscope_rt.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from agentscope_rt.message.serde import MAX_TOOL_INPUT_DEPTH
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.session import JSONSession

from .conftest import MemoryFactory


def _msg(text: str, role: str = "user") -> Msg:
    return Msg("Friday" if role == "assistant" else role, text, role)  # type: ignore[arg-type]


async def _texts(memory: MemoryBase, **kwargs: object) -> list[str]:
    return [m.get_text_content() or "" for m in await memory.get_memory(**kwargs)]  # type: ignore[arg-type]


async def test_add_keeps_order_and_copies(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    first = Msg("Friday", [TextBlock(text="hi")], "assistant", metadata={"k": [1]})
    second = _msg("there")
    await memory.add([first, second])
    await memory.add(_msg("third"))
    first.content[0].text = "changed"  # type: ignore[union-attr]
    first.metadata["k"].append(2)
    stored = await memory.get_memory()
    assert [m.id for m in stored][:2] == [first.id, second.id]
    assert await _texts(memory) == ["hi", "there", "third"]
    assert stored[0].metadata == {"k": [1]}
    assert await memory.size() == 3


async def test_messages_come_back_whole(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    use = ToolUseBlock(id="call-1", name="get_weather", input={"city": "Paris", "days": [1, 2]})
    result = ToolResultBlock(id="call-1", name="get_weather", output=[TextBlock(text="sunny")])
    msgs = [
        Msg("Friday", [TextBlock(text="let me check"), use], "assistant", metadata={"x": {"y": 1}}),
        Msg("system", [result], "system"),
        Msg("user", "héllo ✓ 你好", "user"),
    ]
    await memory.add(msgs)
    stored = await memory.get_memory()
    assert [m.to_dict() for m in stored] == [m.to_dict() for m in msgs]


async def test_none_is_ignored_and_ids_are_stored_once(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    msg = _msg("once")
    await memory.add(None)
    await memory.add([msg, None, msg])  # type: ignore[list-item]
    await memory.add(msg)
    await memory.add([])
    assert await _texts(memory) == ["once"]
    assert await memory.size() == 1


async def test_bad_input_raises_type_error_and_stores_nothing(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    with pytest.raises(TypeError, match="memories"):
        await memory.add([_msg("ok"), "not a message"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="memories"):
        await memory.add("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="marks"):
        await memory.add(_msg("ok"), marks=[1])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="marks"):
        await memory.add(_msg("ok"), marks=3)  # type: ignore[arg-type]
    assert await memory.size() == 0
    with pytest.raises(TypeError, match="exclude_mark"):
        await memory.get_memory(exclude_mark=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="mark"):
        await memory.get_memory(mark=["a"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="mark"):
        await memory.delete_by_mark(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="new_mark"):
        await memory.update_messages_mark(3)  # type: ignore[arg-type]


async def test_marks_select_and_exclude(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    await memory.add(_msg("plain"))
    await memory.add(_msg("hinted"), marks=MemoryMark.HINT)
    await memory.add([_msg("both1"), _msg("both2")], marks=["hint", "compressed"])
    await memory.add(_msg("folded"), marks="compressed")
    assert await _texts(memory, mark="hint") == ["hinted", "both1", "both2"]
    assert await _texts(memory, exclude_mark="compressed") == ["plain", "hinted"]
    assert await _texts(memory, mark="hint", exclude_mark="compressed") == ["hinted"]
    assert await _texts(memory, mark="unknown") == []
    assert await _texts(memory, exclude_mark="unknown") == [
        "plain",
        "hinted",
        "both1",
        "both2",
        "folded",
    ]


async def test_marked_messages_keep_the_order_they_were_added(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    msgs = [_msg(str(i)) for i in range(4)]
    await memory.add(msgs)
    # Marked in reverse order: reads still follow the order of the conversation.
    for msg in reversed(msgs):
        await memory.update_messages_mark("m", msg_ids=[msg.id])
    assert await _texts(memory, mark="m") == ["0", "1", "2", "3"]


async def test_delete_counts_what_was_really_removed(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    a, b, c = _msg("a"), _msg("b"), _msg("c")
    await memory.add([a, b, c], marks="x")
    assert await memory.delete(["unknown"]) == 0
    assert await memory.delete([]) == 0
    assert await memory.delete([b.id, "unknown", b.id]) == 1
    assert await memory.delete([b.id]) == 0
    assert await _texts(memory) == ["a", "c"]
    assert await _texts(memory, mark="x") == ["a", "c"]
    assert await memory.delete([a.id, c.id]) == 2
    assert await memory.size() == 0


async def test_a_deleted_id_can_be_added_again(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    msg = _msg("again")
    await memory.add(msg, marks="old")
    await memory.delete([msg.id])
    await memory.add(msg)
    assert await _texts(memory) == ["again"]
    assert await _texts(memory, mark="old") == []


async def test_delete_by_mark(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    await memory.add(_msg("keep"))
    await memory.add(_msg("h1"), marks="hint")
    await memory.add(_msg("h2"), marks=["hint", "other"])
    await memory.add(_msg("o"), marks="other")
    await memory.add(_msg("z"), marks="z")
    assert await memory.delete_by_mark("nothing") == 0
    assert await memory.delete_by_mark("hint") == 2
    assert await _texts(memory) == ["keep", "o", "z"]
    assert await _texts(memory, mark="other") == ["o"]
    assert await memory.delete_by_mark(["other", "z"]) == 2
    assert await _texts(memory) == ["keep"]
    assert await memory.delete_by_mark([]) == 0


async def test_update_messages_mark_adds_replaces_and_removes(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    a, b, c = _msg("a"), _msg("b"), _msg("c")
    await memory.add([a, b, c])
    assert await memory.update_messages_mark("x", msg_ids=[a.id, b.id, "unknown"]) == 2
    assert await memory.update_messages_mark("x", msg_ids=[a.id]) == 0  # already there
    assert await memory.update_messages_mark("y") == 3
    assert await _texts(memory, mark="x") == ["a", "b"]
    # Replace x by z on the messages carrying x.
    assert await memory.update_messages_mark("z", old_mark="x") == 2
    assert await _texts(memory, mark="x") == []
    assert await _texts(memory, mark="z") == ["a", "b"]
    # Replacing by a mark a message already carries removes the old one and counts nothing.
    assert await memory.update_messages_mark("y", old_mark="z", msg_ids=[a.id]) == 0
    assert await _texts(memory, mark="z") == ["b"]
    assert await _texts(memory, mark="y") == ["a", "b", "c"]
    # Replacing a mark by itself counts each message and changes nothing.
    assert await memory.update_messages_mark("y", old_mark="y") == 3
    assert await _texts(memory, mark="y") == ["a", "b", "c"]
    # Removing.
    assert await memory.update_messages_mark(None, old_mark="y", msg_ids=[c.id]) == 1
    assert await _texts(memory, mark="y") == ["a", "b"]
    assert await memory.update_messages_mark(None, old_mark="missing") == 0
    assert await memory.update_messages_mark(None) == 0
    assert await memory.update_messages_mark("w", msg_ids=[]) == 0
    assert await _texts(memory, mark="y") == ["a", "b"]
    assert await _texts(memory, mark="w") == []
    assert await memory.size() == 3


async def test_a_mark_removed_from_every_message_selects_nothing(
    make_memory: MemoryFactory,
) -> None:
    memory = make_memory()
    await memory.add([_msg("a"), _msg("b")], marks="gone")
    assert await memory.update_messages_mark(None, old_mark="gone") == 2
    assert await _texts(memory, mark="gone") == []
    assert await memory.delete_by_mark("gone") == 0
    assert await memory.size() == 2


async def test_clear_keeps_the_summary(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    await memory.add([_msg("a"), _msg("b")], marks="m")
    await memory.update_compressed_summary("earlier: greetings")
    await memory.clear()
    assert await memory.size() == 0
    assert await _texts(memory, mark="m", prepend_summary=False) == []
    assert await _texts(memory) == ["earlier: greetings"]
    await memory.add(_msg("after"))
    assert await _texts(memory, mark="m", prepend_summary=False) == []
    assert await _texts(memory) == ["earlier: greetings", "after"]


async def test_the_summary_comes_first_as_a_user_message(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    await memory.add(_msg("question"))
    await memory.add(_msg("hint"), marks="hint")
    await memory.update_compressed_summary("the story so far")
    msgs = await memory.get_memory()
    assert (msgs[0].name, msgs[0].role, msgs[0].get_text_content()) == (
        "user",
        "user",
        "the story so far",
    )
    assert await _texts(memory, mark="hint") == ["the story so far", "hint"]
    assert await _texts(memory, prepend_summary=False) == ["question", "hint"]
    assert await memory.size() == 2
    with pytest.raises(TypeError, match="summary"):
        await memory.update_compressed_summary(3)  # type: ignore[arg-type]
    await memory.update_compressed_summary("")
    assert await _texts(memory) == ["question", "hint"]


async def test_the_summary_is_saved_in_the_state(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    await memory.update_compressed_summary("so far")
    state = memory.state_dict()
    assert state["_compressed_summary"] == "so far"
    other = make_memory(session_id="s2")
    other.load_state_dict(state, strict=False)
    assert await _texts(other) == ["so far"]


async def test_the_hint_step_of_an_agent(make_memory: MemoryFactory) -> None:
    # What ReActAgent does around each reasoning step: add a hint, read, drop the hint.
    memory = make_memory()
    await memory.add(_msg("question"))
    for step in range(3):
        await memory.add(_msg(f"hint {step}"), marks=MemoryMark.HINT)
        assert (await _texts(memory))[-1] == f"hint {step}"
        assert await memory.delete_by_mark(MemoryMark.HINT) == 1
        await memory.add(_msg(f"answer {step}", "assistant"))
    assert await _texts(memory) == ["question", "answer 0", "answer 1", "answer 2"]


async def test_concurrent_writers_lose_nothing(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    msgs = [_msg(f"m{i}") for i in range(30)]

    async def add(index: int) -> None:
        await memory.add(msgs[index], marks="even" if index % 2 == 0 else None)
        await memory.get_memory()

    async with anyio.create_task_group() as tg:
        for index in range(len(msgs)):
            tg.start_soon(add, index)
    stored = await memory.get_memory()
    assert sorted(m.id for m in stored) == sorted(m.id for m in msgs)
    assert len(await memory.get_memory(mark="even")) == 15
    async with anyio.create_task_group() as tg:
        tg.start_soon(memory.delete_by_mark, "even")
        tg.start_soon(memory.update_messages_mark, "seen")
    assert await memory.size() == 15
    # Either order leaves the 15 odd messages, each marked "seen".
    assert len(await memory.get_memory(mark="seen")) == 15


def _nested(levels: int) -> dict[str, object]:
    """A JSON object nested *levels* levels deep (itself counting as one)."""
    value: dict[str, object] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


async def test_a_message_a_saved_memory_could_not_hold_is_refused(
    make_memory: MemoryFactory,
) -> None:
    memory = make_memory()
    ok = _msg("ok")
    deep_call = Msg("assistant", [ToolUseBlock(id="c1", name="t", input=_nested(250))], "assistant")
    deep_metadata = Msg("assistant", "x", "assistant", metadata=_nested(150))
    for bad in (deep_call, deep_metadata):
        with pytest.raises(MessageFormatError, match=r"cannot be added to memory.*100 levels"):
            await memory.add([ok, bad])
    assert await memory.size() == 0  # checked before anything was stored
    at_limit = Msg("assistant", [ToolUseBlock(id="c2", name="t", input=_nested(100))], "assistant")
    await memory.add(at_limit)
    assert await memory.size() == 1


def test_add_sync_checks_unless_the_caller_built_the_messages_to_the_rule() -> None:
    # check=False is for a caller that built its messages to check_storable's rule (the ReAct
    # agent's own steps); everything else is checked, copied or not.
    deep_call = Msg("assistant", [ToolUseBlock(id="c1", name="t", input=_nested(250))], "assistant")
    memory = InMemoryMemory()
    for copy in (True, False):
        with pytest.raises(MessageFormatError, match="cannot be added to memory"):
            memory.add_sync(deep_call, copy=copy)
    assert memory.get_memory_sync() == []
    memory.add_sync(deep_call, copy=False, check=False)
    assert memory.get_memory_sync() == [deep_call]


async def test_what_memory_accepts_can_be_saved_in_a_session(tmp_path: Path) -> None:
    agent = ReActAgent("Friday", "You are Friday.", ScriptedChatModel([]), OpenAIChatFormatter())
    deepest = Msg(
        "assistant",
        [ToolUseBlock(id="c1", name="t", input=_nested(MAX_TOOL_INPUT_DEPTH))],
        "assistant",
        metadata=_nested(MAX_TOOL_INPUT_DEPTH),
    )
    await agent.memory.add(deepest)
    with pytest.raises(MessageFormatError):
        await agent.memory.add(
            Msg("assistant", [ToolUseBlock(id="c3", name="t", input=_nested(250))], "assistant")
        )
    session = JSONSession(save_dir=str(tmp_path))
    await session.save_session_state("s", friday=agent)
    again = ReActAgent("Friday", "You are Friday.", ScriptedChatModel([]), OpenAIChatFormatter())
    await session.load_session_state("s", friday=again)
    assert [m.id for m in await again.memory.get_memory()] == [deepest.id]
