"""Blocks built and compared the way AgentScope code builds and compares its TypedDict blocks."""

from __future__ import annotations

import collections
import json
from typing import Any

import pytest
from hypothesis import given

from agentscope_rt.exception import AgentScopeRTError, MessageFormatError
from agentscope_rt.message import (
    AudioBlock,
    Base64Source,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
    VideoBlock,
)
from agentscope_rt.message.serde import converter, structure_block

from .strategies import content_blocks, msgs

URL = {"type": "url", "url": "https://x/y.png"}
B64 = {"type": "base64", "media_type": "audio/wav", "data": "UklGRg=="}

# (class, AgentScope-style keyword arguments without "type", the dict AgentScope would hold)
CASES: list[tuple[type[Any], dict[str, Any], dict[str, Any]]] = [
    (URLSource, {"url": "u"}, {"type": "url", "url": "u"}),
    (
        Base64Source,
        {"media_type": "image/png", "data": "AAA="},
        {"type": "base64", "media_type": "image/png", "data": "AAA="},
    ),
    (TextBlock, {"text": "hi"}, {"type": "text", "text": "hi"}),
    (ThinkingBlock, {"thinking": "hmm"}, {"type": "thinking", "thinking": "hmm"}),
    (
        ImageBlock,
        {"source": URLSource(url="u")},
        {"type": "image", "source": {"type": "url", "url": "u"}},
    ),
    (AudioBlock, {"source": dict(B64)}, {"type": "audio", "source": B64}),
    (VideoBlock, {"source": dict(URL)}, {"type": "video", "source": URL}),
    (
        ToolUseBlock,
        {"id": "c1", "name": "add", "input": {"a": 1}},
        {"type": "tool_use", "id": "c1", "name": "add", "input": {"a": 1}},
    ),
    (
        ToolResultBlock,
        {"id": "c1", "name": "add", "output": [TextBlock(text="2")]},
        {
            "type": "tool_result",
            "id": "c1",
            "name": "add",
            "output": [{"type": "text", "text": "2"}],
        },
    ),
]
IDS = [case[0].__name__ for case in CASES]


# -- construction ------------------------------------------------------------------------------


@pytest.mark.parametrize(("cls", "kwargs", "expected"), CASES, ids=IDS)
def test_type_keyword_is_accepted_by_every_class(
    cls: type[Any], kwargs: dict[str, Any], expected: dict[str, Any]
) -> None:
    block = cls(type=expected["type"], **kwargs)
    assert block == cls(**kwargs)
    assert block.type == expected["type"]
    assert block.to_dict() == expected
    # The dict AgentScope code would pass as keyword arguments, "type" included.
    assert cls(**expected) == block


def test_positional_construction_is_unchanged() -> None:
    assert TextBlock("hi").text == "hi"
    assert ThinkingBlock("t", "sig").signature == "sig"
    use = ToolUseBlock("1", "f", {"a": 1}, "{raw")
    assert (use.id, use.name, use.input, use.raw_input) == ("1", "f", {"a": 1}, "{raw")
    assert ToolUseBlock("1", "f").input == {}
    assert ToolResultBlock("1", "f", "done").output == "done"
    assert ToolResultBlock("1", "f").output == ""
    assert Base64Source("image/png", "AAA=").media_type == "image/png"
    assert AudioBlock(Base64Source("audio/wav", "UklGRg==")).source["data"] == "UklGRg=="
    assert URLSource("u").url == "u"


@pytest.mark.parametrize(("cls", "kwargs", "expected"), CASES, ids=IDS)
@pytest.mark.parametrize("given_type", ["image", "TEXT", "", 3])
def test_a_mismatched_type_is_a_clear_error(
    cls: type[Any], kwargs: dict[str, Any], expected: dict[str, Any], given_type: Any
) -> None:
    if given_type == expected["type"]:
        return
    with pytest.raises(MessageFormatError) as info:
        cls(type=given_type, **kwargs)
    message = str(info.value)
    assert cls.__name__ in message
    assert repr(given_type) in message
    assert repr(expected["type"]) in message
    assert info.value.path == "type"
    assert isinstance(info.value, ValueError) and isinstance(info.value, AgentScopeRTError)


def test_a_mismatched_type_names_the_class_that_has_it() -> None:
    with pytest.raises(ValueError, match=r"TextBlock\(type='image'\).*'text'.*use ImageBlock"):
        TextBlock(type="image", text="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="use URLSource"):
        Base64Source(type="url", media_type="m", data="d")  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", [ImageBlock, AudioBlock, VideoBlock])
def test_a_dict_source_becomes_a_source_object(cls: type[Any]) -> None:
    by_url = cls(type=cls.type, source={"type": "url", "url": "file:///a"})
    assert by_url.source.__class__ is URLSource
    assert by_url.source.url == "file:///a"
    inline = cls(source=dict(B64))
    assert inline.source == Base64Source(media_type="audio/wav", data="UklGRg==")
    assert (
        inline
        == Msg.from_dict({"name": "a", "role": "user", "content": [inline.to_dict()]}).content[0]
    )


def test_a_malformed_dict_source_names_the_field() -> None:
    with pytest.raises(MessageFormatError) as info:
        ImageBlock(source={"type": "url", "url": 7})
    assert info.value.path == "source.url"
    assert "ImageBlock" in str(info.value)
    with pytest.raises(MessageFormatError, match="unknown source type 'file'") as info:
        VideoBlock(source={"type": "file", "path": "/v.mp4"})
    assert info.value.path == "source"
    with pytest.raises(MessageFormatError) as info:
        AudioBlock(source={"type": "base64", "data": "x"})
    assert info.value.path == "source.media_type"


@pytest.mark.parametrize("source", ["https://x/y.png", None, 3, TextBlock(text="u")])
def test_a_source_of_another_kind_is_a_type_error(source: Any) -> None:
    with pytest.raises(TypeError, match="ImageBlock source must be a URLSource, a Base64Source"):
        ImageBlock(source=source)


def test_dict_blocks_in_a_tool_output_become_blocks() -> None:
    block = ToolResultBlock(
        type="tool_result",
        id="c1",
        name="look",
        output=[{"type": "text", "text": "seen"}, ImageBlock(source=URLSource(url="u"))],
    )
    assert block.output == [TextBlock(text="seen"), ImageBlock(source=URLSource(url="u"))]
    assert [b.__class__ for b in block.output] == [TextBlock, ImageBlock]
    with pytest.raises(MessageFormatError) as info:
        ToolResultBlock(id="c1", name="look", output=[TextBlock(text="a"), {"type": "thinking"}])
    assert info.value.path == "output[1]"
    with pytest.raises(MessageFormatError) as info:
        ToolResultBlock(id="c1", name="look", output=3)  # type: ignore[arg-type]
    assert info.value.path == "output"


def test_a_tool_output_list_of_blocks_is_kept_as_given() -> None:
    blocks: list[Any] = [TextBlock(text="a")]
    assert ToolResultBlock(id="1", name="f", output=blocks).output is blocks
    from_tuple = ToolResultBlock(id="1", name="f", output=(TextBlock(text="a"),)).output
    assert from_tuple.__class__ is list and from_tuple == blocks
    empty: list[Any] = []
    assert ToolResultBlock(id="1", name="f", output=empty).output is empty


def test_agentscope_style_message_round_trips() -> None:
    msg = Msg(
        "Friday",
        [
            ThinkingBlock(type="thinking", thinking="look first"),
            ImageBlock(type="image", source=URLSource(type="url", url="https://x/y.png")),
            ToolUseBlock(type="tool_use", id="c1", name="look", input={"at": "y.png"}),
            ToolResultBlock(
                type="tool_result",
                id="c1",
                name="look",
                output=[TextBlock(type="text", text="a cat")],
            ),
        ],
        "assistant",
    )
    data = json.loads(json.dumps(msg.to_dict()))
    assert data["content"] == msg.content  # a list of dicts against a list of blocks
    again = Msg.from_dict(data)
    assert again == msg
    assert again.to_dict() == msg.to_dict()


# -- equality with dicts -----------------------------------------------------------------------


@pytest.mark.parametrize(("cls", "kwargs", "expected"), CASES, ids=IDS)
def test_a_block_equals_agentscopes_dict_both_ways(
    cls: type[Any], kwargs: dict[str, Any], expected: dict[str, Any]
) -> None:
    block = cls(**kwargs)
    assert block == expected
    assert expected == block
    assert (block != expected) is False
    assert (expected != block) is False
    assert block == collections.OrderedDict(reversed(list(expected.items())))
    assert dict(block) == expected
    assert list(dict(block)) == list(block.keys())
    assert block.to_dict() == expected
    assert expected in [TextBlock(text="other"), block]


@pytest.mark.parametrize(("cls", "kwargs", "expected"), CASES, ids=IDS)
def test_a_block_differs_from_any_other_dict(
    cls: type[Any], kwargs: dict[str, Any], expected: dict[str, Any]
) -> None:
    block = cls(**kwargs)
    key = next(k for k in expected if k != "type")
    changed = [
        {k: v for k, v in expected.items() if k != "type"},  # no type key
        {**expected, "type": "other"},
        {**expected, "extra": 1},
        {k: v for k, v in expected.items() if k != key},
        {**expected, key: "different"},
        {},
    ]
    for other in changed:
        assert block != other and other != block
        assert (block == other) is False and (other == block) is False


def test_optional_fields_compare_as_absent_keys() -> None:
    use = ToolUseBlock(id="1", name="f", input={})
    plain = {"type": "tool_use", "id": "1", "name": "f", "input": {}}
    assert use == plain
    # dict(block) has no raw_input key, so a dict that holds one (even None) differs.
    assert use != {**plain, "raw_input": None}
    assert use != {**plain, "raw_input": "{bad"}
    assert ToolUseBlock(id="1", name="f", raw_input="{bad") == {**plain, "raw_input": "{bad"}
    assert ThinkingBlock(thinking="t") == {"type": "thinking", "thinking": "t"}
    assert ThinkingBlock(thinking="t", signature="s") != {"type": "thinking", "thinking": "t"}
    assert ThinkingBlock(thinking="t", signature="s") == {
        "type": "thinking",
        "thinking": "t",
        "signature": "s",
    }
    assert TextBlock(text="t", thought_signature="s") == {
        "type": "text",
        "text": "t",
        "thought_signature": "s",
    }


def test_nested_values_compare_with_their_dicts() -> None:
    image = ImageBlock(source=URLSource(url="u"))
    assert image == {"type": "image", "source": {"type": "url", "url": "u"}}
    assert image != {"type": "image", "source": {"type": "url", "url": "v"}}
    assert image != {"type": "image", "source": {"type": "base64", "url": "u"}}
    assert image.source == {"type": "url", "url": "u"}
    result = ToolResultBlock(id="1", name="f", output=[image, TextBlock(text="t")])
    assert result == {
        "type": "tool_result",
        "id": "1",
        "name": "f",
        "output": [
            {"type": "image", "source": {"type": "url", "url": "u"}},
            {"type": "text", "text": "t"},
        ],
    }
    assert result != {"type": "tool_result", "id": "1", "name": "f", "output": [image]}
    assert Msg("a", [image], "user").content == [
        {"type": "image", "source": {"type": "url", "url": "u"}}
    ]


def test_block_equality_is_by_class_and_fields() -> None:
    source = URLSource(url="u")
    assert ImageBlock(source=source) == ImageBlock(source=URLSource(url="u"))
    assert ImageBlock(source=source) != AudioBlock(source=source)
    assert ImageBlock(source=source) != ImageBlock(source=URLSource(url="v"))
    assert TextBlock(text="x") != ThinkingBlock(thinking="x")
    assert ToolUseBlock("1", "f", {"a": [1]}) == ToolUseBlock("1", "f", {"a": [1]})
    assert ToolUseBlock("1", "f", {"a": [1]}) != ToolUseBlock("1", "f", {"a": [1]}, "raw")
    assert TextBlock(text="x") != "x"
    assert TextBlock(text="x") != ["type", "text"]
    assert TextBlock(text="x") != None  # noqa: E711


@pytest.mark.parametrize(("cls", "kwargs", "expected"), CASES, ids=IDS)
def test_blocks_stay_unhashable(
    cls: type[Any], kwargs: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert cls.__hash__ is None
    with pytest.raises(TypeError, match="unhashable"):
        hash(cls(**kwargs))


# -- properties --------------------------------------------------------------------------------


@given(content_blocks)
def test_generated_blocks_equal_their_dicts(block: Any) -> None:
    data = converter.unstructure(block)
    assert data == block and block == data
    assert (data != block) is False
    assert dict(block) == block and dict(block) == data
    assert json.loads(json.dumps(data)) == block
    assert structure_block(data) == block
    fields = {k: v for k, v in dict(block).items() if k != "type"}
    assert type(block)(type=block.type, **fields) == block
    assert block.copy() == data


@given(msgs)
def test_generated_messages_compare_with_their_json_content(msg: Msg) -> None:
    data = msg.to_dict()
    assert data["content"] == msg.content
    assert Msg.from_dict(data) == msg
