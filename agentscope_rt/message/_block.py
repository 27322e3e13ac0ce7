"""Content blocks: the typed pieces a :class:`~agentscope_rt.message.Msg` is made of.

Blocks are attrs classes, so they are cheap to build and compare, and every field is typed. To
keep AgentScope code working (where blocks are ``TypedDict``s) they also read like mappings:
``block["text"]``, ``block.get("type")`` and ``"raw_input" in block`` behave as they would on
the dict. An optional field whose value is ``None`` reads as an absent key, as in a
``TypedDict`` with ``NotRequired`` keys.

Each class carries its wire tag in the class variable ``type``; the shared cattrs converter in
:mod:`agentscope_rt._serde` uses it as the tag of the content-block union.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar, Literal

import attrs

from .._copy import copy_json

__all__ = [
    "AudioBlock",
    "Base64Source",
    "ContentBlock",
    "ImageBlock",
    "MediaBlock",
    "MsgContent",
    "Source",
    "TextBlock",
    "ThinkingBlock",
    "ToolOutput",
    "ToolResultBlock",
    "ToolUseBlock",
    "URLSource",
    "VideoBlock",
]


class _MappingView:
    """Mapping-style read/write access to an attrs block, for AgentScope compatibility."""

    __slots__ = ()
    type: ClassVar[str]

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        # Cached per class: the attrs field list never changes after class creation.
        names: tuple[str, ...] | None = cls.__dict__.get("_field_names_cache")
        if names is None:
            names = tuple(a.name for a in attrs.fields(cls))  # type: ignore[arg-type]
            type.__setattr__(cls, "_field_names_cache", names)
        return names

    def __getitem__(self, key: str) -> Any:
        if key == "type":
            return self.type
        if key in self._names():
            value = getattr(self, key)
            if value is not None:
                return value
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "type":
            if value != self.type:
                raise ValueError(
                    f"cannot change the type of a {type(self).__name__} to {value!r}; "
                    "build a new block instead"
                )
            return
        if key not in self._names():
            raise KeyError(f"{type(self).__name__} has no field {key!r}")
        setattr(self, key, value)

    def get(self, key: str, default: Any = None) -> Any:
        """Return ``self[key]``, or *default* when the key is absent."""
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        if key == "type":
            return True
        return isinstance(key, str) and key in self._names() and getattr(self, key) is not None

    def keys(self) -> list[str]:
        """The keys the block would have as an AgentScope dict (``type`` first)."""
        return ["type", *(n for n in self._names() if getattr(self, n) is not None)]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def items(self) -> list[tuple[str, Any]]:
        """``(key, value)`` pairs as in :meth:`keys`."""
        return [(k, self[k]) for k in self.keys()]

    def copy(self) -> Any:
        """Return an independent deep copy (nested dicts, lists and blocks are copied too)."""
        new = object.__new__(type(self))
        for name in self._names():
            object.__setattr__(new, name, copy_json(getattr(self, name)))
        return new

    def to_dict(self) -> dict[str, Any]:
        """The block as AgentScope's JSON dict."""
        from .._serde import converter

        result: dict[str, Any] = converter.unstructure(self)
        return result


@attrs.define(slots=True)
class URLSource(_MappingView):
    """A media source given by URL (``http(s)://``, ``file://`` or a local path)."""

    type: ClassVar[Literal["url"]] = "url"
    url: str


@attrs.define(slots=True)
class Base64Source(_MappingView):
    """Media embedded as base64 data with its MIME type, e.g. ``image/png``."""

    type: ClassVar[Literal["base64"]] = "base64"
    media_type: str
    data: str


Source = URLSource | Base64Source


@attrs.define(slots=True)
class TextBlock(_MappingView):
    """Plain text."""

    type: ClassVar[Literal["text"]] = "text"
    text: str


@attrs.define(slots=True)
class ThinkingBlock(_MappingView):
    """A model's reasoning, shown to the user but not broadcast to other agents.

    ``signature`` is the provider's opaque proof of the reasoning (Anthropic's extended
    thinking): it must be sent back unchanged with the block in later turns, so it is kept
    when present and written to JSON only then.
    """

    type: ClassVar[Literal["thinking"]] = "thinking"
    thinking: str
    signature: str | None = None


@attrs.define(slots=True)
class ImageBlock(_MappingView):
    """An image, by URL or as base64 data."""

    type: ClassVar[Literal["image"]] = "image"
    source: Source


@attrs.define(slots=True)
class AudioBlock(_MappingView):
    """Audio, by URL or as base64 data."""

    type: ClassVar[Literal["audio"]] = "audio"
    source: Source


@attrs.define(slots=True)
class VideoBlock(_MappingView):
    """Video, by URL or as base64 data."""

    type: ClassVar[Literal["video"]] = "video"
    source: Source


MediaBlock = TextBlock | ImageBlock | AudioBlock | VideoBlock
"""What a tool result's ``output`` list may hold."""

ToolOutput = str | list[MediaBlock]
"""A tool result's ``output``: a string or a list of media blocks."""


@attrs.define(slots=True)
class ToolUseBlock(_MappingView):
    """A model's request to call tool *name* with arguments *input*.

    ``raw_input`` holds the argument text exactly as the model sent it when it could not be
    parsed as a JSON object (``input`` is then ``{}``), so the agent can tell the model what was
    wrong instead of crashing.
    """

    type: ClassVar[Literal["tool_use"]] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = attrs.field(factory=dict)
    raw_input: str | None = None


@attrs.define(slots=True)
class ToolResultBlock(_MappingView):
    """The result of the tool call with the same ``id``: a string or a list of media blocks."""

    type: ClassVar[Literal["tool_result"]] = "tool_result"
    id: str
    name: str
    output: ToolOutput = ""


ContentBlock = (
    TextBlock
    | ThinkingBlock
    | ImageBlock
    | AudioBlock
    | VideoBlock
    | ToolUseBlock
    | ToolResultBlock
)
"""Any block a message's content list may hold."""

MsgContent = str | list[ContentBlock]
"""A message's content: a string or a list of blocks."""

BLOCK_TYPES: dict[str, type[_MappingView]] = {
    cls.type: cls
    for cls in (
        TextBlock,
        ThinkingBlock,
        ImageBlock,
        AudioBlock,
        VideoBlock,
        ToolUseBlock,
        ToolResultBlock,
    )
}
MEDIA_TYPES: dict[str, type[_MappingView]] = {
    cls.type: cls for cls in (TextBlock, ImageBlock, AudioBlock, VideoBlock)
}
SOURCE_TYPES: dict[str, type[_MappingView]] = {cls.type: cls for cls in (URLSource, Base64Source)}
