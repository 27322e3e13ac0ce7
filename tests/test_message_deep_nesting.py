"""Data nested far deeper than Python's recursion limit is refused with the library's own
errors (MessageFormatError, StateError), never a RecursionError, and nothing is changed."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from agentscope_rt.exception import MessageFormatError, StateError
from agentscope_rt.message import Msg
from agentscope_rt.message.serde import MAX_JSON_DEPTH, check_json, structure
from agentscope_rt.module import StateModule

DEEP = 100_000
assert sys.getrecursionlimit() * 50 < DEEP  # far beyond the recursion limit


def nested_lists(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def nested_dicts(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"k": value}
    return value


def mixed(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


DEEP_VALUES = {
    "lists": lambda: nested_lists(DEEP),
    "dicts": lambda: nested_dicts(DEEP),
    "mixed": lambda: mixed(DEEP),
}


def _msg_dict(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "m1",
        "name": "user",
        "role": "user",
        "content": "hi",
        "metadata": {},
        "timestamp": "2025-01-01 00:00:00.000",
    }
    data.update(overrides)
    return data


@pytest.mark.parametrize("kind", sorted(DEEP_VALUES))
def test_from_dict_refuses_deep_metadata(kind: str) -> None:
    data = _msg_dict(metadata={"deep": DEEP_VALUES[kind]()})
    with pytest.raises(MessageFormatError) as caught:
        Msg.from_dict(data)
    message = str(caught.value)
    assert f"nested deeper than {MAX_JSON_DEPTH} levels" in message
    assert caught.value.path is not None and caught.value.path.startswith("metadata.deep")


@pytest.mark.parametrize("kind", sorted(DEEP_VALUES))
def test_from_dict_refuses_a_deep_tool_input(kind: str) -> None:
    block = {"type": "tool_use", "id": "c1", "name": "f", "input": {"a": DEEP_VALUES[kind]()}}
    with pytest.raises(MessageFormatError, match="nested deeper than"):
        Msg.from_dict(_msg_dict(role="assistant", content=[block]))
    # Dict blocks given to Msg(...) go through the same check.
    with pytest.raises(MessageFormatError, match="nested deeper than"):
        Msg("a", [block], "assistant")


def test_from_dict_refuses_deeply_nested_content() -> None:
    with pytest.raises(MessageFormatError):
        Msg.from_dict(_msg_dict(content=nested_lists(DEEP, leaf={"type": "text", "text": "x"})))
    with pytest.raises(MessageFormatError):
        Msg.from_dict(nested_lists(DEEP, leaf=_msg_dict()))


@pytest.mark.parametrize("kind", sorted(DEEP_VALUES))
def test_check_json_refuses_deep_data(kind: str) -> None:
    with pytest.raises(MessageFormatError, match="nested deeper than"):
        check_json(DEEP_VALUES[kind]())
    with pytest.raises(MessageFormatError, match="nested deeper than"):
        structure({"x": DEEP_VALUES[kind]()}, dict[str, Any])


def test_data_as_deep_as_the_limit_is_accepted_and_round_trips() -> None:
    deepest = nested_lists(MAX_JSON_DEPTH - 1)  # inside the metadata object: the limit
    msg = Msg.from_dict(_msg_dict(metadata={"deep": deepest}))
    assert msg.metadata["deep"] == deepest
    assert Msg.from_dict(msg.to_dict()).metadata == msg.metadata
    assert msg.copy().metadata == msg.metadata
    check_json(nested_dicts(MAX_JSON_DEPTH))
    with pytest.raises(MessageFormatError, match="nested deeper than"):
        check_json(nested_dicts(MAX_JSON_DEPTH + 1))
    with pytest.raises(MessageFormatError, match="nested deeper than"):
        Msg.from_dict(_msg_dict(metadata={"deep": nested_lists(MAX_JSON_DEPTH)}))


def test_the_other_problems_are_still_named_with_their_path() -> None:
    with pytest.raises(MessageFormatError) as caught:
        check_json({"a": [1, {"b": float("nan")}]})
    assert caught.value.path == "a[1].b"
    with pytest.raises(MessageFormatError) as caught:
        check_json({"a": [{1: 2}]})
    assert caught.value.path == "a[0]"
    assert "keys must be strings" in str(caught.value)
    with pytest.raises(MessageFormatError) as caught:
        check_json([[], {"x": object()}])
    assert caught.value.path == "[1].x"
    check_json({"a": [1, 2.5, "s", None, True, {"b": ()}]})
    # A key holding a lone surrogate is named by its escape: the error can be sent and saved.
    with pytest.raises(MessageFormatError) as caught:
        check_json({"é\udfff": {"x": float("-inf")}})
    assert caught.value.path == "é\\udfff.x"
    str(caught.value).encode("utf-8")


# -- state ---------------------------------------------------------------------------------


class Holder(StateModule):
    data: dict[str, Any]
    msgs: list[Msg]

    def __init__(self) -> None:
        super().__init__()
        self.data = {"a": 1}
        self.msgs = [Msg("user", "hi", "user")]
        self.anything: Any = None
        self.register_state("data")
        self.register_state("msgs")
        self.register_state("anything", state_type=Any)


class Outer(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Holder()
        self.name = "outer"
        self.register_state("name")


@pytest.mark.parametrize("kind", sorted(DEEP_VALUES))
def test_load_state_dict_refuses_a_deep_state_and_changes_nothing(kind: str) -> None:
    outer = Outer()
    before = outer.state_dict()
    bad = {**before, "name": "changed", "inner": {**before["inner"], "data": DEEP_VALUES[kind]()}}
    bad["inner"]["data"] = {"deep": DEEP_VALUES[kind]()}
    with pytest.raises(StateError, match="nested deeper than"):
        outer.load_state_dict(bad)
    assert outer.state_dict() == before

    deep_msg = _msg_dict(metadata={"deep": DEEP_VALUES[kind]()})
    bad = {**before, "inner": {**before["inner"], "msgs": [deep_msg]}}
    with pytest.raises(StateError, match="nested deeper than"):
        outer.load_state_dict(bad)
    assert outer.state_dict() == before

    with pytest.raises(StateError):
        outer.load_state_dict(nested_dicts(DEEP))
    assert outer.state_dict() == before


def test_saving_or_registering_deep_data_is_a_state_error() -> None:
    holder = Holder()
    holder.anything = nested_lists(DEEP)
    with pytest.raises(StateError, match=r"nested deeper than|too deeply"):
        holder.state_dict()
    holder.anything = None

    holder.extra = nested_dicts(DEEP)
    with pytest.raises(StateError, match=r"too deeply|nested deeper than"):
        holder.register_state("extra")
    assert "extra" not in holder._attribute_dict
    holder.extra = {"shallow": [1, 2]}
    holder.register_state("extra")
    assert holder.state_dict()["extra"] == {"shallow": [1, 2]}
