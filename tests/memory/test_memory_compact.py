"""A small memory keeps no id index and unmarked messages share one empty marks list: the
same answers as ever, at a few hundred bytes less per agent."""

from __future__ import annotations

import pytest

from agentscope_rt.memory import INDEX_FROM, InMemoryMemory
from agentscope_rt.message import Msg


def _msgs(count: int, start: int = 0) -> list[Msg]:
    return [Msg("user", f"m{i}", "user", id=f"id{i}") for i in range(start, start + count)]


@pytest.mark.parametrize("size", [3, INDEX_FROM - 1, INDEX_FROM, INDEX_FROM * 3])
async def test_duplicates_are_skipped_below_and_above_the_index_threshold(size: int) -> None:
    memory = InMemoryMemory()
    await memory.add(_msgs(size))
    await memory.add(_msgs(size))  # every id again: nothing added
    await memory.add(_msgs(2, start=size - 1))  # one old, one new
    assert await memory.size() == size + 1
    await memory.add(_msgs(1), allow_duplicates=True)
    assert await memory.size() == size + 2
    # Deleting by id removes both copies of the duplicated one, in either mode.
    assert await memory.delete(["id0", "absent"]) == 2
    assert await memory.delete(["absent"]) == 0
    await memory.add(_msgs(1))  # gone, so it may come back
    assert [m.id for m in await memory.get_memory()][-1] == "id0"


async def test_unmarked_messages_share_marks_that_refuse_changes_in_place() -> None:
    memory = InMemoryMemory()
    await memory.add(_msgs(3))
    marks = [entry[1] for entry in memory.content]
    assert marks == [[], [], []] and marks[0] is marks[1]
    with pytest.raises(TypeError, match="update_messages_mark"):
        marks[0].append("x")
    assert await memory.update_messages_mark("x", msg_ids=["id1"]) == 1
    assert [entry[1] for entry in memory.content] == [[], ["x"], []]
    assert [m.id for m in await memory.get_memory(mark="x")] == ["id1"]
    assert [m.id for m in await memory.get_memory(exclude_mark="x")] == ["id0", "id2"]
    assert await memory.update_messages_mark(None, old_mark="x") == 1
    assert [entry[1] for entry in memory.content] == [[], [], []]


async def test_saved_state_keeps_marks_as_lists() -> None:
    memory = InMemoryMemory()
    await memory.add(_msgs(2))
    await memory.add(_msgs(1, start=2), marks="hint")
    state = memory.state_dict()
    assert [entry[1] for entry in state["content"]] == [[], [], ["hint"]]
    restored = InMemoryMemory()
    restored.load_state_dict(state)
    assert [entry[1] for entry in restored.content] == [[], [], ["hint"]]
    await restored.update_messages_mark("seen", msg_ids=["id0"])
    assert [entry[1] for entry in restored.content] == [["seen"], [], ["hint"]]
