"""Hypothesis strategies for messages and JSON data, shared by the property tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

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

text = st.text(max_size=30)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_data: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(text, children, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(text, json_data, max_size=4)

sources = st.builds(URLSource, url=text) | st.builds(Base64Source, media_type=text, data=text)
media_blocks = (
    st.builds(TextBlock, text=text, thought_signature=st.none() | text)
    | st.builds(ImageBlock, source=sources)
    | st.builds(AudioBlock, source=sources)
    | st.builds(VideoBlock, source=sources)
)
content_blocks = (
    media_blocks
    | st.builds(ThinkingBlock, thinking=text, signature=st.none() | text)
    | st.builds(
        ToolUseBlock,
        id=text,
        name=text,
        input=json_objects,
        raw_input=st.none() | text,
        thought_signature=st.none() | text,
    )
    | st.builds(
        ToolResultBlock,
        id=text,
        name=text,
        output=text | st.lists(media_blocks, max_size=3),
    )
)
roles = st.sampled_from(["user", "assistant", "system"])
msgs = st.builds(
    Msg,
    name=text,
    content=text | st.lists(content_blocks, max_size=5),
    role=roles,
    metadata=st.none() | json_objects,
    invocation_id=st.none() | text,
)
