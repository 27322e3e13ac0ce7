"""InMemoryMemory: AgentScope 1.0's memory API, marks, summary and state compatibility."""

from __future__ import annotations

import json
import pathlib

import pytest

from agentscope_rt.exception import StateError
from agentscope_rt.memory import InMemoryMemory, MemoryBase, MemoryMark
from agentscope_rt.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock

DATA = pathlib.Path(__file__).parent / "data"


def _msg(text: str, role: str = "user") -> Msg:
    return Msg(role if role != "assistant" else "Friday", text, role)  # type: ignore[arg-type]


async def test_add_stores_copies_in_order() -> None:
    memory = InMemoryMemory()
    first = Msg("Friday", [TextBlock(text="hi")], "assistant", metadata={"k": [1]})
    second = _msg("there")
    await memory.add([first, second])
    stored = await memory.get_memory()
    assert [m.id for m in stored] == [first.id, second.id]
    assert stored[0] is not first
    first.content[0].text = "changed"  # type: ignore[union-attr]
    first.metadata["k"].append(2)
    assert stored[0].get_text_content() == "hi"
    assert stored[0].metadata == {"k": [1]}
    assert await memory.size() == 2


async def test_add_ignores_none_and_deduplicates_by_id() -> None:
    memory = InMemoryMemory()
    msg = _msg("once")
    await memory.add(None)
    await memory.add([msg, None, msg])  # type: ignore[list-item]
    await memory.add(msg)
    assert await memory.size() == 1
    await memory.add(msg, allow_duplicates=True)
    assert [m.id for m in await memory.get_memory()] == [msg.id, msg.id]
    # Deleting by id removes every copy, and the id can be added again afterwards.
    assert await memory.delete([msg.id]) == 2
    await memory.add(msg)
    assert await memory.size() == 1


async def test_add_rejects_bad_input_and_keeps_memory_unchanged() -> None:
    memory = InMemoryMemory()
    with pytest.raises(TypeError, match="memories must be a Msg"):
        await memory.add("hello")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"memories\[1\] must be a Msg"):
        await memory.add([_msg("a"), {"role": "user"}])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="marks must be"):
        await memory.add(_msg("a"), marks=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list of strings"):
        await memory.add(_msg("a"), marks=["ok", 3])  # type: ignore[list-item]
    assert await memory.size() == 0  # not even the valid message before the bad one


async def test_marks_filter_and_exclude() -> None:
    memory = InMemoryMemory()
    plain, hint, both = _msg("plain"), _msg("hint"), _msg("both")
    await memory.add(plain)
    await memory.add(hint, marks=MemoryMark.HINT)
    await memory.add(both, marks=["hint", "compressed"])
    assert [m.id for m in await memory.get_memory(mark="hint")] == [hint.id, both.id]
    assert [m.id for m in await memory.get_memory(exclude_mark=MemoryMark.COMPRESSED)] == [
        plain.id,
        hint.id,
    ]
    assert [m.id for m in await memory.get_memory(mark="hint", exclude_mark="compressed")] == [
        hint.id
    ]
    # Marks are stored as plain strings, whatever form they were given in.
    assert all(type(mark) is str for _, marks in memory.content for mark in marks)
    with pytest.raises(TypeError, match="mark must be a string or None"):
        await memory.get_memory(mark=["hint"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="exclude_mark must be a string or None"):
        await memory.get_memory(exclude_mark=1)  # type: ignore[arg-type]


async def test_each_message_gets_its_own_marks_list() -> None:
    memory = InMemoryMemory()
    marks = ["a"]
    one, two = _msg("1"), _msg("2")
    await memory.add([one, two], marks=marks)
    await memory.update_messages_mark("b", msg_ids=[one.id])
    assert memory.content[0][1] == ["a", "b"]
    assert memory.content[1][1] == ["a"]
    assert marks == ["a"]


async def test_delete_by_mark() -> None:
    memory = InMemoryMemory()
    keep, h1, h2, c = _msg("keep"), _msg("h1"), _msg("h2"), _msg("c")
    await memory.add(keep)
    await memory.add([h1, h2], marks="hint")
    await memory.add(c, marks="compressed")
    assert await memory.delete_by_mark("nothing") == 0
    assert await memory.delete_by_mark(MemoryMark.HINT) == 2
    assert [m.id for m in await memory.get_memory()] == [keep.id, c.id]
    assert await memory.delete_by_mark(["compressed", "other"]) == 1
    assert [m.id for m in await memory.get_memory()] == [keep.id]
    with pytest.raises(TypeError, match="list of strings"):
        await memory.delete_by_mark([1])  # type: ignore[list-item]
    # A deleted message can be added again (the id index follows deletions).
    await memory.add(h1)
    assert await memory.size() == 2


async def test_delete_by_ids_returns_count() -> None:
    memory = InMemoryMemory()
    msgs = [_msg(str(i)) for i in range(4)]
    await memory.add(msgs)
    assert await memory.delete(["unknown"]) == 0
    assert await memory.delete([msgs[1].id, msgs[3].id, "unknown"]) == 2
    assert [m.get_text_content() for m in await memory.get_memory()] == ["0", "2"]


async def test_update_messages_mark_add_replace_remove() -> None:
    memory = InMemoryMemory()
    a, b, c = _msg("a"), _msg("b"), _msg("c")
    await memory.add([a, b])
    await memory.add(c, marks="old")
    # add to the selected ids
    assert await memory.update_messages_mark("x", msg_ids=[a.id, b.id]) == 2
    assert await memory.update_messages_mark("x", msg_ids=[a.id]) == 0  # already there
    # replace old -> new only where old is present
    assert await memory.update_messages_mark("new", old_mark="old") == 1
    assert memory.content[2][1] == ["new"]
    # remove
    assert await memory.update_messages_mark(None, old_mark="x") == 2
    assert [marks for _, marks in memory.content] == [[], [], ["new"]]
    # add to every message
    assert await memory.update_messages_mark(MemoryMark.COMPRESSED) == 3
    assert [m.id for m in await memory.get_memory(mark="compressed")] == [a.id, b.id, c.id]
    with pytest.raises(TypeError, match="new_mark"):
        await memory.update_messages_mark(5)  # type: ignore[arg-type]


async def test_compressed_summary_comes_first_as_user_message() -> None:
    memory = InMemoryMemory()
    msg = _msg("question")
    await memory.add(msg)
    await memory.update_compressed_summary("the summary")
    got = await memory.get_memory()
    assert len(got) == 2
    assert (got[0].role, got[0].name, got[0].content) == ("user", "user", "the summary")
    assert got[1].id == msg.id
    assert [m.id for m in await memory.get_memory(prepend_summary=False)] == [msg.id]
    await memory.clear()
    assert await memory.size() == 0
    assert [m.content for m in await memory.get_memory()] == ["the summary"]
    with pytest.raises(TypeError, match="compressed summary must be a str"):
        await memory.update_compressed_summary(None)  # type: ignore[arg-type]


async def test_state_round_trip_through_json() -> None:
    memory = InMemoryMemory()
    tool_use = ToolUseBlock(id="c1", name="add", input={"a": 1})
    await memory.add(_msg("hi"))
    await memory.add(Msg("Friday", [tool_use], "assistant"), marks=["compressed"])
    await memory.add(
        Msg("system", [ToolResultBlock(id="c1", name="add", output="2")], "system"),
        marks=["compressed", "x"],
    )
    await memory.update_compressed_summary("sum")
    state = json.loads(json.dumps(memory.state_dict()))
    assert set(state) == {"_compressed_summary", "content"}
    assert state["_compressed_summary"] == "sum"
    assert [marks for _, marks in state["content"]] == [[], ["compressed"], ["compressed", "x"]]
    assert state["content"][1][0]["content"][0] == {
        "type": "tool_use",
        "id": "c1",
        "name": "add",
        "input": {"a": 1},
    }

    loaded = InMemoryMemory()
    loaded.load_state_dict(state)
    assert loaded.state_dict() == state
    assert [m.to_dict() for m in await loaded.get_memory(prepend_summary=False)] == [
        m.to_dict() for m in await memory.get_memory(prepend_summary=False)
    ]
    # The id index follows a load: re-adding a loaded message is a no-op.
    await loaded.add(await memory.get_memory(prepend_summary=False))
    assert await loaded.size() == 3


async def test_loads_a_memory_saved_by_agentscope() -> None:
    state = json.loads((DATA / "agentscope_1_0_21_memory.json").read_text())
    memory = InMemoryMemory()
    memory.load_state_dict(state)
    msgs = await memory.get_memory(exclude_mark="compressed")
    assert msgs[0].content == "<system-info>summary so far</system-info>"
    assert [m.get_text_content() for m in msgs[1:]] == ["What is 2+2?", "2+2 is 4."]
    compressed = await memory.get_memory(mark="compressed", prepend_summary=False)
    assert compressed[0].get_content_blocks("tool_use")[0].input == {"a": 2, "b": 2}
    assert compressed[1].get_content_blocks("tool_result")[0].name == "add"
    assert memory.content[2][1] == ["compressed", "custom"]
    # And what we write back is what AgentScope wrote.
    assert memory.state_dict() == state


async def test_bad_state_is_refused_and_changes_nothing() -> None:
    memory = InMemoryMemory()
    await memory.add(_msg("kept"))
    before = memory.state_dict()
    bad = {"_compressed_summary": "", "content": [[{"id": "x", "name": "u"}, []]]}
    with pytest.raises(StateError, match="content"):
        memory.load_state_dict(bad)
    with pytest.raises(StateError):
        memory.load_state_dict({"_compressed_summary": 3, "content": []})
    with pytest.raises(StateError, match="missing keys"):
        memory.load_state_dict({"content": []})
    assert memory.state_dict() == before


def test_memory_base_is_abstract() -> None:
    with pytest.raises(TypeError):
        MemoryBase()  # type: ignore[abstract]
    assert MemoryMark.HINT == "hint" and MemoryMark.COMPRESSED == "compressed"
    assert {MemoryMark.HINT: 1}["hint"] == 1


async def test_content_assignment_is_validated_and_reindexed() -> None:
    memory = InMemoryMemory()
    msg = _msg("x")
    memory.content = [(msg, ["a"])]
    await memory.add(msg)
    assert await memory.size() == 1
    with pytest.raises(TypeError, match=r"content\[0\]"):
        memory.content = [msg]  # type: ignore[list-item]
