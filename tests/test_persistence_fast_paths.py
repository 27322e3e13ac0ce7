"""The fast paths of saving and loading give what the converter gives, and fail as it fails.

Messages of the usual shapes are turned into JSON data and back without the cattrs
converter; a memory's saved content is checked while it is built (only metadata and tool
arguments are walked); sessions are written with orjson when the state is known to be JSON.
Each test here compares with the converter's own path (``converter.unstructure`` of a block,
``structure(..., Msg)``, ``check_json`` over the whole saved tree), or checks that what only
json can write (NaN from a custom state, lone surrogates, integers beyond 64 bits) still
round-trips.
"""

from __future__ import annotations

import gc
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentscope_rt.exception import MessageFormatError, SessionError, StateError
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import (
    Base64Source,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
)
from agentscope_rt.message.serde import (
    MAX_JSON_DEPTH,
    check_json,
    checked_msg_json,
    converter,
    fast_structure_msg,
    structure,
    unstructure_block,
    unstructure_msg,
)
from agentscope_rt.module import StateModule
from agentscope_rt.session import JSONSession, SQLiteSession
from agentscope_rt.session._session_base import decode_session_state, encode_session_state

from .strategies import json_data, msgs

# -- references: the converter's own path -----------------------------------------------------


def reference_msg_json(msg: Msg) -> dict[str, Any]:
    """A message's JSON dict with every block through the converter's generated function."""
    content = msg.content
    data: dict[str, Any] = {
        "id": msg.id,
        "name": msg.name,
        "role": msg.role,
        "content": content
        if isinstance(content, str)
        else [converter.unstructure(block) for block in content],
        "metadata": msg.metadata,
        "timestamp": msg.timestamp,
    }
    if msg.invocation_id is not None:
        data["invocation_id"] = msg.invocation_id
    return data


def reference_content(memory: InMemoryMemory) -> list[list[Any]]:
    return [[reference_msg_json(msg), list(marks)] for msg, marks in memory.content]


def reference_save_error(memory: InMemoryMemory) -> str | None:
    """What saving *memory* said before: a check of the whole saved tree."""
    try:
        check_json(reference_content(memory), "content")
    except MessageFormatError as exc:
        return f"InMemoryMemory: cannot save {exc}"
    return None


def outcome(fn: Any) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except (MessageFormatError, StateError) as exc:
        return "error", str(exc)


def load_reference(content: Any) -> list[tuple[Msg, list[str]]]:
    """What loading a memory's content gave before: the converter over the whole list."""
    return structure(content, list[tuple[Msg, list[str]]], what="state", path="content")


def memory_of(*messages: Msg) -> InMemoryMemory:
    memory = InMemoryMemory()
    memory.content = [(msg, []) for msg in messages]
    return memory


def nested(depth: int) -> Any:
    """JSON data *depth* levels deep (objects), a string at the bottom."""
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


# -- blocks and messages ----------------------------------------------------------------------


@given(msgs)
def test_unstructure_gives_what_the_converter_gives(msg: Msg) -> None:
    if not isinstance(msg.content, str):
        for block in msg.content:
            assert unstructure_block(block) == converter.unstructure(block)
    assert unstructure_msg(msg) == reference_msg_json(msg)
    # The checked form is the same dict whenever it is given (every message here is JSON).
    checked = checked_msg_json(msg, 2)
    if checked is not None:
        assert checked == reference_msg_json(msg)


@given(msgs)
def test_fast_structure_builds_what_the_converter_builds(msg: Msg) -> None:
    data = json.loads(json.dumps(msg.to_dict()))
    fast = fast_structure_msg(data)
    slow: Msg = structure(json.loads(json.dumps(msg.to_dict())), Msg, what="message")
    assert slow == msg
    if fast is not None:
        assert fast == slow
    assert Msg.from_dict(data) == msg


def test_the_usual_shapes_take_the_fast_paths() -> None:
    for msg in (
        Msg("user", "hi", "user"),
        Msg(
            "Friday",
            [TextBlock("a"), ToolUseBlock("c1", "f", {"x": 1, "y": [1, {"z": 2}]})],
            "assistant",
        ),
        Msg("system", [ToolResultBlock("c1", "f", [TextBlock("out")])], "system"),
        Msg("Friday", [ThinkingBlock("hmm", "sig"), TextBlock("t", "ts")], "assistant", {"a": [1]}),
        Msg("Friday", [ImageBlock(URLSource("http://x/y.png"))], "assistant", invocation_id="inv"),
        Msg(
            "system",
            [
                ToolResultBlock(
                    "c2", "f", [TextBlock("a"), ImageBlock(Base64Source("image/png", "AA"))]
                )
            ],
            "system",
        ),
    ):
        assert checked_msg_json(msg, 2) == reference_msg_json(msg)
        assert fast_structure_msg(msg.to_dict()) == msg


def test_saved_tool_arguments_are_copies() -> None:
    call = ToolUseBlock("c1", "f", {"flat": 1})
    deep = ToolUseBlock("c2", "f", {"list": [1, 2]})
    msg = Msg("Friday", [call, deep], "assistant")
    saved = checked_msg_json(msg, 2)
    assert saved is not None
    saved["content"][0]["input"]["flat"] = 2
    saved["content"][1]["input"]["list"].append(3)
    assert call.input == {"flat": 1} and deep.input == {"list": [1, 2]}


BASE = Msg("Friday", [TextBlock("a"), ToolUseBlock("c1", "f", {"x": 1})], "assistant").to_dict()
FIELDS = ["id", "name", "role", "content", "metadata", "timestamp", "invocation_id"]
BLOCK_FIELDS = ["type", "text", "thought_signature", "id", "name", "input", "raw_input", "output"]
odd_values = (
    json_data
    | st.sampled_from(["user", "assistant", "", math.nan, 2**70, {"type": "text"}, [BASE]])
    | st.builds(lambda: {"type": "tool_result", "id": "c", "name": "f", "output": [{"x": 1}]})
)


@settings(max_examples=300)
@given(
    st.sampled_from(FIELDS),
    st.none() | st.sampled_from(BLOCK_FIELDS),
    st.integers(0, 1),
    st.booleans(),
    odd_values,
)
def test_a_malformed_message_fails_as_the_converter_fails(
    field: str, block_field: str | None, block_index: int, delete: bool, value: Any
) -> None:
    data = json.loads(json.dumps(BASE))
    target = data["content"][block_index] if block_field is not None else data
    key = block_field if block_field is not None else field
    if delete:
        target.pop(key, None)
    else:
        target[key] = value
    fast = fast_structure_msg(data)
    kind, slow = outcome(lambda: structure(data, Msg, what="message"))
    if fast is None:
        assert outcome(lambda: Msg.from_dict(data)) == (kind, slow)
        return
    assert kind == "ok", slow
    if data.get("id") and data.get("timestamp"):
        assert fast == slow
    else:  # generated afresh on each side
        assert (fast.name, fast.role, fast.content) == (slow.name, slow.role, slow.content)


# -- a memory's saved content -----------------------------------------------------------------


@given(st.lists(msgs, max_size=6))
def test_memory_content_saves_and_loads_as_before(messages: list[Msg]) -> None:
    memory = memory_of(*messages)
    saved = memory.state_dict()
    assert saved["content"] == reference_content(memory)
    data = json.loads(json.dumps(saved))
    fresh = InMemoryMemory()
    fresh.load_state_dict(data)
    assert fresh.content == memory.content
    assert fresh.content == structure(
        data["content"], list[tuple[Msg, list[str]]], what="state", path="content"
    )


@pytest.mark.parametrize(
    ("bad_msg", "where"),
    [
        (Msg("u", "hi", "user", metadata={"x": [1, math.nan]}), "content[1][0].metadata.x[1]"),
        (Msg("u", "hi", "user", metadata={"x": {1: "a"}}), "content[1][0].metadata.x"),
        (Msg("u", [ToolUseBlock("c", "f", {"a": {"b": object()}})], "user"), ".input.a.b"),
        (Msg("u", [ToolUseBlock("c", "f", {"a": math.inf})], "user"), "content[0].input.a"),
        (Msg("u", [TextBlock(text=b"x")], "user"), "content[1][0].content[0].text"),  # type: ignore[arg-type]
        (Msg("u", [ToolResultBlock("c", "f", [TextBlock(text=b"x")])], "user"), ".output[0].text"),  # type: ignore[arg-type]
    ],
)
def test_saving_what_is_not_json_names_the_path_as_before(bad_msg: Msg, where: str) -> None:
    memory = memory_of(Msg("u", "fine", "user"), bad_msg, Msg("u", "after", "user"))
    expected = reference_save_error(memory)
    assert expected is not None and where in expected
    with pytest.raises(StateError) as info:
        memory.state_dict()
    assert str(info.value) == expected


def test_saving_a_non_json_name_names_the_path_as_before() -> None:
    memory = memory_of(Msg("u", "fine", "user"), Msg("u", "hi", "user"))
    msg = memory.content[1][0]
    msg.name = ("not", "a", "string")  # type: ignore[assignment]
    msg.timestamp = 3.5  # type: ignore[assignment]
    # A tuple of strings and a number are JSON data: saved, as before.
    assert memory.state_dict()["content"] == reference_content(memory)
    msg.timestamp = math.nan  # type: ignore[assignment]
    with pytest.raises(StateError) as info:
        memory.state_dict()
    assert str(info.value) == reference_save_error(memory)
    assert "content[1][0].timestamp" in str(info.value)


@pytest.mark.parametrize("extra", [-1, 0, 1])
@pytest.mark.parametrize("where", ["metadata", "input"])
def test_the_depth_limit_counts_from_the_saved_state_as_before(extra: int, where: str) -> None:
    # In the saved content a message's metadata sits 3 levels down, a tool call's input 5.
    levels_above = 3 if where == "metadata" else 5
    data = nested(MAX_JSON_DEPTH - levels_above + extra)
    if where == "metadata":
        msg = Msg("u", "hi", "user", metadata=data)
    else:
        msg = Msg("u", [ToolUseBlock("c", "f", data)], "assistant")
    memory = memory_of(Msg("u", "fine", "user"), msg)
    expected = reference_save_error(memory)
    assert (expected is None) == (extra <= 0)
    if expected is None:
        assert memory.state_dict()["content"] == reference_content(memory)
    else:
        with pytest.raises(StateError) as info:
            memory.state_dict()
        assert str(info.value) == expected


@settings(max_examples=200)
@given(st.integers(0, 2), st.sampled_from(FIELDS), odd_values)
def test_loading_a_malformed_entry_fails_as_the_converter_fails(
    index: int, field: str, value: Any
) -> None:
    memory = memory_of(
        Msg("u", "one", "user"),
        Msg("Friday", [TextBlock("a"), ToolUseBlock("c1", "f", {"x": 1})], "assistant"),
        Msg("system", [ToolResultBlock("c1", "f", [TextBlock("r")])], "system"),
    )
    state = json.loads(json.dumps(memory.state_dict()))
    state["content"][index][0][field] = value
    kind, slow = outcome(lambda: load_reference(state["content"]))
    fresh = InMemoryMemory()
    if kind == "error":
        with pytest.raises(StateError) as info:
            fresh.load_state_dict(state)
        assert str(info.value) == slow
        assert fresh.content == []
    else:
        fresh.load_state_dict(state)
        assert [m.content for m, _ in fresh.content] == [m.content for m, _ in slow]


def test_loading_entries_of_other_shapes_uses_the_converter() -> None:
    memory = memory_of(Msg("u", "one", "user"), Msg("u", "two", "user"))
    state = json.loads(json.dumps(memory.state_dict()))
    state["content"][1] = [state["content"][1][0], ["hint"], "extra"]
    with pytest.raises(StateError) as info:
        InMemoryMemory().load_state_dict(state)
    kind, slow = outcome(lambda: load_reference(state["content"]))
    assert (kind, str(info.value)) == ("error", slow)
    state["content"][1] = [state["content"][1][0], ["hint", 3]]
    with pytest.raises(StateError, match=r"content\[1\]\[1\]\[1\]"):
        InMemoryMemory().load_state_dict(state)


async def test_a_loaded_memory_keeps_its_marks_and_duplicate_ids() -> None:
    memory = InMemoryMemory()
    first = Msg("u", "one", "user")
    await memory.add(first, marks=["hint", "x"])
    await memory.add(first, allow_duplicates=True)
    fresh = InMemoryMemory()
    fresh.load_state_dict(json.loads(json.dumps(memory.state_dict())))
    assert [marks for _, marks in fresh.content] == [["hint", "x"], []]
    assert await fresh.delete([first.id]) == 2
    assert await fresh.size() == 0


# -- sessions -----------------------------------------------------------------------------------


class Custom(StateModule):
    """A module whose own state_dict may return anything, as AgentScope code may."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value
        self.memory = InMemoryMemory()

    def state_dict(self) -> dict[str, Any]:
        return {"value": self.value, "memory": self.memory.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        self.value = state_dict["value"]
        self.memory.load_state_dict(state_dict["memory"], strict)


def test_encoding_writes_what_json_would_read_the_same() -> None:
    memory = memory_of(Msg("u", "héllo ☃", "user", metadata={"f": 1.5, "big": 2**40}))
    data = encode_session_state({"memory": memory})
    assert json.loads(data) == {"memory": memory.state_dict()}


@pytest.mark.parametrize(
    "value",
    [math.nan, -math.inf, 2**70, "lone \ud800 surrogate", {1: "int key"}],
    ids=["nan", "inf", "bigint", "surrogate", "intkey"],
)
def test_what_only_json_writes_is_still_written_by_json(value: Any) -> None:
    custom = Custom(value)
    data = encode_session_state({"custom": custom})
    expected = json.dumps({"custom": custom.state_dict()}, ensure_ascii=False)
    assert data == expected.encode("utf-8", errors="surrogatepass")
    loaded = decode_session_state(data, "here")["custom"]["value"]
    if isinstance(value, float) and math.isnan(value):
        assert math.isnan(loaded)
    else:
        assert loaded == json.loads(expected)["custom"]["value"]


async def test_surrogates_and_big_integers_round_trip_through_sessions(tmp_path: Path) -> None:
    memory = InMemoryMemory()
    await memory.add(
        [
            Msg("u", "lone \ud800 surrogate", "user"),
            Msg("Friday", [ToolUseBlock("c", "f", {"n": 2**70, "m": -(2**64)})], "assistant"),
        ]
    )
    session = JSONSession(tmp_path)
    await session.save_session_state("s", memory=memory)
    fresh = InMemoryMemory()
    await session.load_session_state("s", memory=fresh)
    assert fresh.content == memory.content
    call = fresh.content[1][0].content[0]
    assert isinstance(call, ToolUseBlock) and call.input["n"] == 2**70
    # SQLite keeps text as UTF-8, which has no lone surrogates: big integers only.
    await memory.delete([memory.content[0][0].id])
    sqlite = SQLiteSession(tmp_path / "s.db")
    await sqlite.save_session_state("s", memory=memory)
    fresh = InMemoryMemory()
    await sqlite.load_session_state("s", memory=fresh)
    assert fresh.content == memory.content
    assert fresh.content[0][0].content[0].input == {"n": 2**70, "m": -(2**64)}  # type: ignore[union-attr]


async def test_a_session_state_with_nan_from_a_custom_module_loads_back(tmp_path: Path) -> None:
    session = JSONSession(tmp_path)
    await session.save_session_state("s", custom=Custom(math.nan))
    assert b"NaN" in (tmp_path / "s.json").read_bytes()
    fresh = Custom(0)
    await session.load_session_state("s", custom=fresh)
    assert math.isnan(fresh.value)


async def test_the_garbage_collector_is_left_as_it_was(tmp_path: Path) -> None:
    session = JSONSession(tmp_path)
    memory = memory_of(Msg("u", "hi", "user"))
    assert gc.isenabled()
    await session.save_session_state("s", memory=memory)
    await session.load_session_state("s", memory=InMemoryMemory())
    assert gc.isenabled()
    gc.disable()
    try:
        await session.save_session_state("s", memory=memory)
        await session.load_session_state("s", memory=InMemoryMemory())
        assert not gc.isenabled()
    finally:
        gc.enable()
    # A failing load also gives the collector back.
    (tmp_path / "s.json").write_text('{"memory": {"content": [[{"name": 1}, []]]}}')
    with pytest.raises(SessionError):
        await session.load_session_state("s", memory=InMemoryMemory())
    assert gc.isenabled()
