from __future__ import annotations

import ast
import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agentscope_rt.message as message_package
from agentscope_rt.exception import AgentScopeRTError, MessageFormatError
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

from .strategies import json_data, msgs

DATA = pathlib.Path(__file__).parent / "data"


def json_roundtrip(value: Any) -> Any:
    return json.loads(json.dumps(value))


# -- construction ----------------------------------------------------------------------------


def test_string_content_stays_a_string() -> None:
    msg = Msg("user", "hello", "user")
    assert msg.content == "hello"
    assert msg.to_dict()["content"] == "hello"
    assert msg.get_text_content() == "hello"
    assert msg.get_content_blocks() == [TextBlock(text="hello")]
    assert msg.get_content_blocks("tool_use") == []


def test_dict_blocks_become_attrs_blocks() -> None:
    msg = Msg(
        "bot",
        [
            {"type": "text", "text": "a"},
            {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
            {"type": "tool_use", "id": "1", "name": "f", "input": {"x": 1}},
        ],
        "assistant",
    )
    assert msg.content == [
        TextBlock(text="a"),
        ImageBlock(source=URLSource(url="https://x/y.png")),
        ToolUseBlock(id="1", name="f", input={"x": 1}),
    ]


def test_single_block_and_single_dict_are_wrapped() -> None:
    assert Msg("a", TextBlock(text="x"), "user").content == [TextBlock(text="x")]
    assert Msg("a", {"type": "thinking", "thinking": "t"}, "user").content == [
        ThinkingBlock(thinking="t")
    ]


def test_defaults() -> None:
    msg = Msg("a", "b", "system")
    assert msg.metadata == {}
    assert len(msg.timestamp) == len("2025-01-01 00:00:00.000")
    assert msg.invocation_id is None
    assert msg.id and msg.id != Msg("a", "b", "system").id


def test_copy_of_empty_metadata_is_a_new_dict() -> None:
    msg = Msg("a", "b", "user")
    clone = msg.copy()
    clone.metadata["k"] = 1
    assert msg.metadata == {}


@pytest.mark.parametrize("role", ["bot", "", "USER", None])
def test_bad_role_is_a_clear_value_error(role: Any) -> None:
    with pytest.raises(ValueError, match="role must be 'user', 'assistant' or 'system'"):
        Msg("a", "b", role)


@pytest.mark.parametrize("content", [42, None, object(), [1], ["text"]])
def test_bad_content_is_a_type_error(content: Any) -> None:
    with pytest.raises(TypeError, match="content"):
        Msg("a", content, "user")


def test_bad_dict_block_names_the_path() -> None:
    with pytest.raises(MessageFormatError) as info:
        Msg(
            "a",
            [{"type": "text", "text": "ok"}, {"type": "image", "source": {"type": "url"}}],
            "user",
        )
    assert "content[1].source.url" in str(info.value)
    assert isinstance(info.value, AgentScopeRTError)


def test_bad_name_and_metadata() -> None:
    with pytest.raises(TypeError, match="name"):
        Msg(3, "x", "user")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="metadata"):
        Msg("a", "x", "user", metadata=[1])  # type: ignore[arg-type]


# -- reading ---------------------------------------------------------------------------------


def test_text_content_joins_text_blocks_and_skips_thinking() -> None:
    msg = Msg(
        "a",
        [TextBlock(text="one"), ThinkingBlock(thinking="hmm"), TextBlock(text="two")],
        "assistant",
    )
    assert msg.get_text_content() == "one\ntwo"
    assert msg.get_text_content(separator="") == "onetwo"
    assert Msg("a", [ThinkingBlock(thinking="x")], "assistant").get_text_content() is None


def test_get_and_has_content_blocks_filter_by_type() -> None:
    use = ToolUseBlock(id="1", name="f", input={})
    msg = Msg("a", [TextBlock(text="t"), use], "assistant")
    assert msg.get_content_blocks("tool_use") == [use]
    assert msg.get_content_blocks(["text", "tool_use"]) == msg.content
    assert msg.has_content_blocks("tool_use")
    assert not msg.has_content_blocks("tool_result")
    assert msg.has_content_blocks()
    with pytest.raises(ValueError, match="unknown block type"):
        msg.get_content_blocks("tool")  # type: ignore[arg-type]


def test_blocks_read_like_mappings() -> None:
    block = ToolUseBlock(id="1", name="f", input={"a": 1})
    assert block["type"] == "tool_use"
    assert block["input"] == {"a": 1}
    assert block.get("type") == "tool_use"
    assert block.get("raw_input") is None
    assert "raw_input" not in block
    assert "input" in block and "type" in block
    assert dict(block.items()) == {"type": "tool_use", "id": "1", "name": "f", "input": {"a": 1}}
    with pytest.raises(KeyError):
        block["nope"]
    block["input"] = {"b": 2}
    assert block.input == {"b": 2}
    with pytest.raises(ValueError):
        block["type"] = "text"
    with pytest.raises(KeyError):
        block["nope"] = 1


def test_copy_is_deep_and_equal() -> None:
    msg = Msg(
        "a",
        [ToolUseBlock(id="1", name="f", input={"xs": [1, 2]})],
        "assistant",
        metadata={"m": {"n": [1]}},
    )
    clone = msg.copy()
    assert clone == msg and clone is not msg
    clone.content[0]["input"]["xs"].append(3)  # type: ignore[index]
    clone.metadata["m"]["n"].append(2)
    assert msg.content[0].input == {"xs": [1, 2]}  # type: ignore[union-attr]
    assert msg.metadata == {"m": {"n": [1]}}


# -- serialisation ----------------------------------------------------------------------------


def test_to_dict_shape() -> None:
    msg = Msg("a", [ToolResultBlock(id="1", name="f", output=[TextBlock(text="r")])], "system")
    data = msg.to_dict()
    assert list(data) == ["id", "name", "role", "content", "metadata", "timestamp"]
    assert data["content"] == [
        {
            "type": "tool_result",
            "id": "1",
            "name": "f",
            "output": [{"type": "text", "text": "r"}],
        }
    ]
    with_invocation = Msg("a", "b", "user", invocation_id="inv").to_dict()
    assert with_invocation["invocation_id"] == "inv"


def test_raw_input_written_only_when_present() -> None:
    data = Msg("a", [ToolUseBlock(id="1", name="f", raw_input="{bad")], "assistant").to_dict()
    assert data["content"][0] == {
        "type": "tool_use",
        "id": "1",
        "name": "f",
        "input": {},
        "raw_input": "{bad",
    }


@given(msgs)
def test_json_roundtrip_property(msg: Msg) -> None:
    again = Msg.from_dict(json_roundtrip(msg.to_dict()))
    assert again == msg
    assert again.to_dict() == msg.to_dict()


@given(json_data)
def test_arbitrary_json_builds_or_raises_the_documented_error(data: Any) -> None:
    try:
        msg = Msg.from_dict(data)
    except MessageFormatError as exc:
        assert str(exc).startswith("invalid message")
    else:
        assert isinstance(msg, Msg)


@given(
    st.fixed_dictionaries(
        {"name": json_data, "role": json_data, "content": json_data},
        optional={"metadata": json_data, "timestamp": json_data, "id": json_data},
    )
)
def test_message_shaped_json_builds_or_raises_the_documented_error(data: Any) -> None:
    try:
        msg = Msg.from_dict(data)
    except MessageFormatError:
        return
    assert isinstance(msg.name, str) and msg.role in ("user", "assistant", "system")


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"name": "a", "role": "user"}, "content"),
        ({"name": "a", "role": "user", "content": [{"type": "video"}]}, "content[0].source"),
        (
            {
                "name": "a",
                "role": "user",
                "content": [
                    {"type": "text", "text": "x"},
                    {"type": "text", "text": "y"},
                    {"type": "image", "source": {"type": "url", "url": 7}},
                ],
            },
            "content[2].source.url",
        ),
        ({"name": "a", "role": "user", "content": [{"type": "nope"}]}, "content[0]"),
        ({"name": "a", "role": "user", "content": "x", "metadata": {"k": {1, 2}}}, "metadata.k"),
        ({"name": "a", "role": "user", "content": "x", "metadata": {1: "v"}}, "metadata"),
        (
            {
                "name": "a",
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "1", "name": "f", "input": {"q": [1, float("nan")]}}
                ],
            },
            "content[0].input.q[1]",
        ),
        (
            {
                "name": "a",
                "role": "user",
                "content": [{"type": "tool_result", "id": "1", "name": "f", "output": 3}],
            },
            "content[0].output",
        ),
        ({"name": "a", "role": "robot", "content": "x"}, "role"),
        (["not", "a", "dict"], "$"),
    ],
)
def test_malformed_input_names_the_path(data: Any, path: str) -> None:
    with pytest.raises(MessageFormatError) as info:
        Msg.from_dict(data)
    assert info.value.path == path
    assert path in str(info.value)


def test_agentscope_fixture_roundtrip() -> None:
    fixture = json.loads((DATA / "agentscope_1_0_21_msgs.json").read_text("utf-8"))
    for data in fixture["messages"]:
        msg = Msg.from_dict(data)
        assert msg.to_dict() == data
    first = Msg.from_dict(fixture["messages"][0])
    assert isinstance(first.content, str)
    tool_result = Msg.from_dict(fixture["messages"][2]).content[0]
    assert isinstance(tool_result, ToolResultBlock)
    assert isinstance(tool_result.output, list)
    audio = Msg.from_dict(fixture["messages"][4]).content[0]
    assert audio["source"] == Base64Source(media_type="audio/wav", data="UklGRg==")


def test_agentscope_1_0_4_null_metadata_loads() -> None:
    msg = Msg.from_dict(
        {
            "id": "x",
            "name": "a",
            "role": "user",
            "content": "hi",
            "metadata": None,
            "timestamp": "2025-01-01 00:00:00.000",
        }
    )
    assert msg.metadata == {}


def test_thinking_signature_written_only_when_present() -> None:
    plain = Msg("a", [ThinkingBlock(thinking="t")], "assistant").to_dict()
    assert plain["content"][0] == {"type": "thinking", "thinking": "t"}
    signed = Msg("a", [ThinkingBlock(thinking="t", signature="sig")], "assistant")
    assert signed.to_dict()["content"][0]["signature"] == "sig"
    assert Msg.from_dict(signed.to_dict()) == signed


@given(st.lists(st.floats(min_value=1e9, max_value=2e9, allow_nan=False), min_size=1, max_size=20))
def test_timestamps_match_the_clock_whatever_the_order_of_readings(times: list[float]) -> None:
    # now_timestamp caches the formatted second and millisecond: every reading must still
    # come out as the clock says, in whatever order (and however often) they arrive.
    import datetime

    from agentscope_rt.message import now_timestamp

    for now in times + times[::-1]:
        stamp = now_timestamp(now)
        milli = int(now * 1000)
        expected = datetime.datetime.fromtimestamp(milli // 1000).strftime("%Y-%m-%d %H:%M:%S")
        assert stamp == f"{expected}.{milli % 1000:03d}"


@given(
    st.lists(
        st.floats(min_value=1e9, max_value=1e9 + 3, allow_nan=False).map(lambda t: round(t, 4)),
        min_size=1,
        max_size=30,
    )
)
def test_current_timestamps_follow_the_clock_within_and_across_milliseconds(
    times: list[float],
) -> None:
    # The current-time path caches its millisecond as a float range: readings inside it, past
    # it and before it (a clock set back) must all come out as the clock says.
    import agentscope_rt.message._msg as msg_module
    from agentscope_rt.message import now_timestamp

    clock = iter(times)
    real = msg_module._time
    msg_module._time = lambda: next(clock)
    try:
        for now in times:
            stamp = now_timestamp()
            assert stamp == now_timestamp(now), now
    finally:
        msg_module._time = real


def test_message_modules_import_each_other_only_at_module_level() -> None:
    # A module of the package importing another inside a function dodges an import circle;
    # the classes reach the converter through _block.CONVERSION instead.
    folder = pathlib.Path(message_package.__file__).parent
    lazy = []
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.ImportFrom) and inner.level > 0:
                        lazy.append(f"{path.name}:{inner.lineno}")
    assert lazy == []


def test_blocks_and_msg_built_from_dicts_after_a_fresh_import() -> None:
    # Importing only a private module still runs the package's __init__, which fills the
    # conversion functions before any block or Msg can be built.
    code = (
        "from agentscope_rt.message._msg import Msg\n"
        "from agentscope_rt.message._block import ImageBlock\n"
        "m = Msg('u', [{'type': 'text', 'text': 'hi'}], 'user')\n"
        "assert Msg.from_dict(m.to_dict()).content == m.content\n"
        "assert ImageBlock(source={'type': 'url', 'url': 'http://x'}).to_dict()['source']\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
