"""InMemoryMemory against a plain reference model, for random sequences of operations."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg

MARKS = st.sampled_from(["hint", "compressed", "x"])
IDS = [f"m{i}" for i in range(5)]

_operation = st.one_of(
    st.tuples(
        st.just("add"),
        st.lists(st.sampled_from(IDS), max_size=3),
        st.lists(MARKS, max_size=2),
        st.booleans(),
    ),
    st.tuples(st.just("delete"), st.lists(st.sampled_from(IDS), max_size=3)),
    st.tuples(st.just("delete_by_mark"), st.lists(MARKS, min_size=1, max_size=2)),
    st.tuples(
        st.just("update"),
        st.one_of(st.none(), MARKS),
        st.one_of(st.none(), MARKS),
        st.one_of(st.none(), st.lists(st.sampled_from(IDS), max_size=3)),
    ),
    st.tuples(st.just("clear")),
)


def _apply_reference(
    model: list[tuple[str, list[str]]], op: tuple[Any, ...]
) -> list[tuple[str, list[str]]]:
    kind = op[0]
    if kind == "add":
        _, ids, marks, duplicates = op
        for msg_id in ids:
            if duplicates or all(m != msg_id for m, _ in model):
                model.append((msg_id, list(marks)))
    elif kind == "delete":
        model = [(m, k) for m, k in model if m not in op[1]]
    elif kind == "delete_by_mark":
        model = [(m, k) for m, k in model if not any(x in k for x in op[1])]
    elif kind == "update":
        _, new, old, ids = op
        for m, k in model:
            if (ids is not None and m not in ids) or (old is not None and old not in k):
                continue
            if new is None:
                if old is not None and old in k:
                    k.remove(old)
            else:
                if old is not None:
                    k.remove(old)
                if new not in k:
                    k.append(new)
    else:
        model = []
    return model


@given(st.lists(_operation, max_size=25))
async def test_memory_matches_the_reference(operations: list[tuple[Any, ...]]) -> None:
    memory = InMemoryMemory()
    model: list[tuple[str, list[str]]] = []
    for op in operations:
        kind = op[0]
        if kind == "add":
            await memory.add(
                [Msg("user", i, "user", id=i) for i in op[1]], marks=op[2], allow_duplicates=op[3]
            )
        elif kind == "delete":
            await memory.delete(op[1])
        elif kind == "delete_by_mark":
            await memory.delete_by_mark(op[1])
        elif kind == "update":
            await memory.update_messages_mark(op[1], old_mark=op[2], msg_ids=op[3])
        else:
            await memory.clear()
        model = _apply_reference(model, op)
        assert [(m.id, marks) for m, marks in memory.content] == model
        assert await memory.size() == len(model)
        for mark in ("hint", "compressed", "x"):
            assert [m.id for m in await memory.get_memory(mark=mark)] == [
                m for m, k in model if mark in k
            ]
            assert [m.id for m in await memory.get_memory(exclude_mark=mark)] == [
                m for m, k in model if mark not in k
            ]
