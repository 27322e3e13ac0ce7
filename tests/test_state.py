from __future__ import annotations

import enum
import json
import socket
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentscope_rt.exception import StateError
from agentscope_rt.message import Msg, TextBlock, ToolUseBlock
from agentscope_rt.module import StateModule

from .strategies import json_data, msgs


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.define
class Point:
    x: int
    y: int
    label: str = ""


class Leaf(StateModule):
    history: list[Msg]

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.history = []
        self.point = Point(1, 2)
        self.color = Color.RED
        self.register_state("count")
        self.register_state("history")
        self.register_state("point")
        self.register_state("color")


class Tree(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.name = "root"
        self.left = Leaf()
        self.right = Leaf()
        self.register_state("name")


def test_submodules_tracked_and_nested() -> None:
    tree = Tree()
    tree.left.count = 3
    tree.left.history.append(Msg("a", [TextBlock(text="hi")], "user"))
    tree.right.point = Point(5, 6, "p")
    tree.right.color = Color.BLUE
    state = tree.state_dict()
    assert set(state) == {"name", "left", "right"}
    assert state["right"]["point"] == {"x": 5, "y": 6, "label": "p"}
    assert state["right"]["color"] == "blue"
    restored = Tree()
    restored.load_state_dict(json.loads(json.dumps(state)))
    assert restored.left.count == 3
    assert restored.left.history == tree.left.history
    assert isinstance(restored.left.history[0], Msg)
    assert restored.right.point == Point(5, 6, "p")
    assert restored.right.color is Color.BLUE


def test_replacing_a_submodule_with_a_plain_value_untracks_it() -> None:
    tree = Tree()
    tree.left = None  # type: ignore[assignment]
    assert "left" not in tree.state_dict()
    del tree.right
    del tree.name  # a registered attribute: unregistered with it
    assert tree.state_dict() == {}
    tree.left = Leaf()  # a module again: saved again
    assert set(tree.state_dict()) == {"left"}


def test_submodules_are_found_whenever_they_were_assigned() -> None:
    # Sub-modules are found when saving, not tracked on assignment: one assigned before
    # super().__init__(), or by a class that never calls it, is saved all the same.
    class Early(StateModule):
        def __init__(self) -> None:
            self.child = Leaf()
            super().__init__()

    class NoInit(StateModule):
        def __init__(self) -> None:
            self.child = Leaf()
            self.count = 1
            self.register_state("count")

    for cls in (Early, NoInit):
        holder = cls()
        holder.child.count = 7
        state = holder.state_dict()
        assert state["child"] == Leaf().state_dict() | {"count": 7}
        other = cls()
        other.load_state_dict(state)
        assert other.child.count == 7


def test_unserialisable_attribute_fails_at_registration() -> None:
    class Holder(StateModule):
        def __init__(self) -> None:
            super().__init__()
            self.sock = socket.socket()
            self.sock.close()

    holder = Holder()
    with pytest.raises(StateError, match="custom_to_json"):
        holder.register_state("sock")
    with pytest.raises(StateError, match="no attribute"):
        holder.register_state("missing")


def test_custom_functions() -> None:
    class Holder(StateModule):
        def __init__(self) -> None:
            super().__init__()
            self.items = {3, 1, 2}
            self.register_state("items", sorted, set)

    holder = Holder()
    assert holder.state_dict() == {"items": [1, 2, 3]}
    other = Holder()
    other.items = set()
    other.load_state_dict({"items": [5]})
    assert other.items == {5}


def test_registering_a_submodule_is_refused() -> None:
    tree = Tree()
    with pytest.raises(StateError, match="automatically"):
        tree.register_state("left")


def test_strict_load_reports_missing_and_unexpected_and_changes_nothing() -> None:
    tree = Tree()
    tree.left.count = 7
    state = tree.state_dict()
    del state["right"]["count"]
    state["right"]["extra"] = 1
    state["left"]["count"] = 99
    with pytest.raises(StateError) as info:
        tree.load_state_dict(state)
    assert "right" in str(info.value)
    assert "missing keys ['count']" in str(info.value)
    assert "unexpected keys ['extra']" in str(info.value)
    assert tree.left.count == 7  # nothing applied, even the valid part


def test_bad_value_anywhere_changes_nothing() -> None:
    tree = Tree()
    state = tree.state_dict()
    state["left"]["count"] = 12
    state["right"]["history"] = [{"name": "a", "role": "user", "content": [{"type": "?"}]}]
    with pytest.raises(StateError, match=r"right\.history\[0\]\.content\[0\]"):
        tree.load_state_dict(state)
    assert tree.left.count == 0


def test_non_strict_load_takes_what_is_there() -> None:
    tree = Tree()
    tree.load_state_dict({"left": {"count": 4}, "unknown": 1}, strict=False)
    assert tree.left.count == 4
    assert tree.right.count == 0


def test_state_dict_refuses_values_that_became_unserialisable() -> None:
    class Holder(StateModule):
        def __init__(self) -> None:
            super().__init__()
            self.data: Any = {"a": 1}
            self.register_state("data")

    holder = Holder()
    holder.data = {"a": object()}
    with pytest.raises(StateError, match="data"):
        holder.state_dict()


def test_load_state_of_wrong_shape() -> None:
    with pytest.raises(StateError, match="expected a state object"):
        Tree().load_state_dict({"name": "x", "left": [], "right": {}}, strict=False)


# -- property: random nested trees round-trip through JSON --------------------------------------


class Node(StateModule):
    def __init__(self, depth: int, width: int) -> None:
        super().__init__()
        self.value: Any = None
        self.msgs: list[Msg] = []
        self.tool_calls: dict[str, ToolUseBlock] = {}
        self.register_state("value", state_type=Any)
        self.register_state("msgs", state_type=list[Msg])
        self.register_state("tool_calls", state_type=dict[str, ToolUseBlock])
        self.width = width
        for index in range(width if depth > 0 else 0):
            setattr(self, f"child{index}", Node(depth - 1, width))

    def children(self) -> list[Node]:
        return [getattr(self, f"child{i}") for i in range(self.width) if hasattr(self, f"child{i}")]

    def walk(self) -> list[Node]:
        nodes = [self]
        for child in self.children():
            nodes.extend(child.walk())
        return nodes


@st.composite
def filled_trees(draw: st.DrawFn) -> Node:
    tree = Node(draw(st.integers(0, 3)), draw(st.integers(1, 2)))
    for node in tree.walk():
        node.value = draw(json_data)
        node.msgs = draw(st.lists(msgs, max_size=3))
        node.tool_calls = {
            key: ToolUseBlock(id=key, name="f", input=draw(st.dictionaries(st.text(), json_data)))
            for key in draw(st.lists(st.text(max_size=5), max_size=2, unique=True))
        }
    return tree


@given(filled_trees())
def test_nested_state_roundtrip_property(tree: Node) -> None:
    state = tree.state_dict()
    text = json.dumps(state)
    # Rebuild the same shape, then load.
    copy = Node(_depth(tree), tree.width)
    copy.load_state_dict(json.loads(text))
    assert copy.state_dict() == state
    for original, loaded in zip(tree.walk(), copy.walk(), strict=True):
        assert loaded.msgs == original.msgs
        assert loaded.tool_calls == original.tool_calls
        assert all(isinstance(m, Msg) for m in loaded.msgs)


def _depth(node: Node) -> int:
    children = node.children()
    return 0 if not children else 1 + _depth(children[0])


class CustomLoad(StateModule):
    """A module that saves and loads itself, as AgentScope code (and the Toolkit) may do."""

    def __init__(self) -> None:
        super().__init__()
        self.active: set[str] = set()

    def state_dict(self) -> dict[str, Any]:
        return {"active": sorted(self.active)}

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        if not isinstance(state_dict.get("active"), list):
            raise StateError("CustomLoad: 'active' must be a list")
        self.active = set(state_dict["active"])


class Holder(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.register_state("count")
        self.custom = CustomLoad()


def test_nested_module_with_its_own_load_state_dict_is_loaded_through_it() -> None:
    holder = Holder()
    holder.custom.active = {"b", "a"}
    holder.count = 2
    state = json.loads(json.dumps(holder.state_dict()))
    assert state == {"custom": {"active": ["a", "b"]}, "count": 2}
    other = Holder()
    other.load_state_dict(state)
    assert other.custom.active == {"a", "b"} and other.count == 2


def test_a_failing_custom_load_changes_nothing() -> None:
    holder = Holder()
    with pytest.raises(StateError, match="'active' must be a list"):
        holder.load_state_dict({"custom": {"active": 3}, "count": 5})
    assert holder.count == 0 and holder.custom.active == set()


class TwoCustoms(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.first = CustomLoad()
        self.second = CustomLoad()


def test_a_custom_load_failing_after_another_succeeded_puts_the_first_back() -> None:
    holder = TwoCustoms()
    holder.first.active = {"kept"}
    with pytest.raises(StateError, match="'active' must be a list"):
        holder.load_state_dict({"first": {"active": ["new"]}, "second": {"active": 3}})
    assert holder.first.active == {"kept"} and holder.second.active == set()


def test_a_failed_agent_load_leaves_its_toolkit_groups_as_they_were() -> None:
    from agentscope_rt.agent import ReActAgent
    from agentscope_rt.formatter import OpenAIChatFormatter
    from agentscope_rt.model import ScriptedChatModel
    from agentscope_rt.tool import Toolkit

    def agent() -> ReActAgent:
        toolkit = Toolkit()
        toolkit.create_tool_group("web", "Web tools", active=False)
        made = ReActAgent(
            name="Friday",
            sys_prompt="",
            model=ScriptedChatModel([]),
            formatter=OpenAIChatFormatter(),
            toolkit=toolkit,
        )
        made.second = CustomLoad()  # a sub-module that checks its state only when loaded
        return made

    state = agent().state_dict()
    state["toolkit"] = {"active_groups": ["web"]}
    state["second"] = {"active": "not a list"}
    target = agent()
    with pytest.raises(StateError):
        target.load_state_dict(state)
    assert target.toolkit.state_dict() == {"active_groups": []}
