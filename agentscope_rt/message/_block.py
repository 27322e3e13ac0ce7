"""Content blocks: the typed pieces a :class:`~agentscope_rt.message.Msg` is made of.

Blocks are attrs classes, so they are cheap to build and every field is typed. To keep
AgentScope code working (where blocks are ``TypedDict`` classes, so plain dicts at run time)
they also behave like those dicts where AgentScope code relies on it:

* **Construction.** Every block and source accepts the keyword ``type=`` that AgentScope code
  passes, ``TextBlock(type="text", text="hi")``; positional arguments work as before
  (``TextBlock("hi")``). A ``type`` other than the class's own raises
  :class:`~agentscope_rt.exception.MessageFormatError` (a ``ValueError``: the argument is of the
  right kind but has the wrong value, as for ``block["type"] = ...``); its message names the
  class, the type given and the type expected. A media block given a dict ``source``
  (``ImageBlock(source={"type": "url", "url": ...})``) and a tool result given dict blocks in
  its ``output`` list get real blocks, through the same converter ``Msg(...)`` and
  :meth:`Msg.from_dict` use.
* **Reading and writing.** ``block["text"]``, ``block.get("type")``, ``"raw_input" in block``,
  ``block["input"] = {...}`` and ``dict(block)`` behave as on the dict. An optional field whose
  value is ``None`` reads as an absent key, as in a ``TypedDict`` with ``NotRequired`` keys.
  ``dict(block)`` holds the same objects the block does, so a media block's ``source`` stays a
  source object; it compares equal to its dict form (below), and :meth:`to_dict` gives the
  whole JSON dict.
* **Equality.** A block equals a block of the same class with equal fields, and a dict exactly
  when that dict equals ``dict(block)``: ``TextBlock(text="hi") == {"type": "text", "text":
  "hi"}``, also nested (a source against its dict, tool-result outputs against lists of dicts)
  and in both directions; ``!=`` is its negation. A ``ToolUseBlock`` whose ``raw_input`` is
  ``None`` equals the dict without a ``raw_input`` key (not one holding ``None``, which
  AgentScope never writes).
* **Hashing.** Blocks are mutable and equal to (unhashable) dicts, so they are unhashable, as
  attrs made them before they compared with dicts: ``hash(block)`` raises ``TypeError``.

Each class carries its wire tag in the class variable ``type``; the shared cattrs converter
(:mod:`._convert`) uses it as the tag of the content-block union.

The ``__init__`` methods are written by hand, field by field, as attrs would generate them:
blocks are built for every reply, and ``init=False`` lets them take ``type=`` and dict sources.
An omitted ``type`` costs under 200 machine instructions per block (CPython fills keyword-only
defaults from a dict, then one ``is None`` test), well under 0.3% of a ReAct reply. The three
media blocks share theirs (:class:`_SourcedBlock`).

``__eq__`` is attrs', wrapped once by :func:`_finish` to answer dicts too. The wrapper is one more
frame than the hand-written methods it replaced: comparing two text blocks went from 176 to 280
ns, two image blocks from 295 to 625 ns (their sources compare through the wrapper too), two
three-block messages from 1.3 to 2.1 us (medians of interleaved runs on a loaded machine). No
reply compares blocks or messages (the ReAct reply's instruction count is unchanged), so the
simpler code wins; a hot path that starts comparing them should bring back per-class methods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, Literal, TypeVar

import attrs

from .._copy import copy_json
from ..exception import MessageFormatError

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
    """Mapping-style access and dict equality for an attrs block, for AgentScope compatibility.

    Subclasses are ``attrs.define(slots=True, init=False)`` classes finished by
    :func:`_finish`, which records their field names and extends attrs' ``__eq__`` to dicts;
    each writes its own ``__init__``.
    """

    __slots__ = ()
    type: ClassVar[str]
    _fields: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return cls._fields

    def __getitem__(self, key: str) -> Any:
        if key == "type":
            return self.type
        if key in self._fields:
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
        if key not in self._fields:
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
        return isinstance(key, str) and key in self._fields and getattr(self, key) is not None

    def _as_dict(self) -> dict[str, Any]:
        # What dict(self) gives, built directly.
        result: dict[str, Any] = {"type": self.type}
        for name in self._fields:
            value = getattr(self, name)
            if value is not None:
                result[name] = value
        return result

    def keys(self) -> list[str]:
        """The keys the block would have as an AgentScope dict (``type`` first)."""
        return list(self._as_dict())

    def __iter__(self) -> Iterator[str]:
        return iter(self._as_dict())

    def items(self) -> list[tuple[str, Any]]:
        """``(key, value)`` pairs as in :meth:`keys`."""
        return list(self._as_dict().items())

    def _eq_not_same_class(self, other: object) -> bool:
        # The part of every block's __eq__ past "same class, compare the fields" (attrs').
        if isinstance(other, dict):
            # Nested sources and blocks compare with their dicts through their own __eq__.
            return self._as_dict() == other
        return NotImplemented

    # attrs sets this to None anyway (eq without hash); said here because it is a promise.
    __hash__ = None  # type: ignore[assignment]

    def copy(self) -> Any:
        """Return an independent deep copy (nested dicts, lists and blocks are copied too)."""
        new = object.__new__(type(self))
        for name in self._fields:
            value = getattr(self, name)
            # Strings and unset fields (most of them) need no copy, nor a call to say so.
            if value.__class__ is not str and value is not None:
                value = copy_json(value)
            object.__setattr__(new, name, value)
        return new

    def to_dict(self) -> dict[str, Any]:
        """The block as AgentScope's JSON dict."""
        result: dict[str, Any] = CONVERSION.unstructure(self)
        return result


class _Conversion:
    """The converter's entry points that blocks and messages call: building a block from a
    dict given to a constructor, ``to_dict`` and ``Msg.from_dict``.

    :mod:`._convert` builds its converter over the classes of this module and :mod:`._msg`, so
    they cannot import it; it fills :data:`CONVERSION` as it is imported, which the package
    does before anything else of it can be used. A global object read at each call costs less
    than the import the call would otherwise make.
    """

    __slots__ = ("structure", "structure_block", "structure_msg", "unstructure", "unstructure_msg")

    structure: Callable[..., Any]
    """``structure(data, tp, *, what, path)``: *data* as *tp*, or a MessageFormatError."""
    structure_block: Callable[..., Any]
    """``structure_block(data, *, path)``: one content block from its dict."""
    structure_msg: Callable[[Any], Any]
    """A Msg from AgentScope's JSON dict."""
    unstructure: Callable[[Any], Any]
    """Blocks, messages and containers of them as JSON data."""
    unstructure_msg: Callable[[Any], dict[str, Any]]
    """A Msg as AgentScope's JSON dict."""


CONVERSION = _Conversion()


_B = TypeVar("_B", bound=type[_MappingView])


def _finish(cls: _B) -> _B:
    """Record *cls*'s attrs field names and make its attrs ``__eq__`` answer dicts too (see
    :class:`_MappingView`)."""
    cls._fields = tuple(a.name for a in attrs.fields(cls))  # type: ignore[arg-type]
    same_class_eq = cls.__eq__  # attrs': NotImplemented for an object of another class

    def __eq__(self: _MappingView, other: object) -> bool:
        if other.__class__ is self.__class__:
            return same_class_eq(self, other)
        return self._eq_not_same_class(other)

    __eq__.__qualname__ = f"{cls.__qualname__}.__eq__"
    cls.__eq__ = __eq__  # type: ignore[assignment,method-assign]
    # object's __ne__ negates __eq__ as attrs' does, in C (attrs' is one more frame).
    del cls.__ne__
    return cls


def _wrong_type(block: _MappingView, given: object) -> MessageFormatError:
    """The error for ``SomeBlock(type=given)`` when *given* is not ``SomeBlock.type``."""
    name = block.__class__.__name__
    other = _ALL_TYPES.get(given) if isinstance(given, str) else None
    hint = f" (for {given!r}, use {other.__name__})" if other is not None else ""
    return MessageFormatError(
        f"{name}(type={given!r}): the type of a {name} is {block.type!r}, not {given!r}{hint}",
        path="type",
    )


def _source(block: _MappingView, source: Any) -> Source:
    """*source* as a source object: dicts are structured, anything else is refused."""
    if isinstance(source, URLSource | Base64Source):
        return source
    if isinstance(source, dict):
        source_object: Source = CONVERSION.structure(
            source, Source, what=f"{block.__class__.__name__} source", path="source"
        )
        return source_object
    raise TypeError(
        f"{block.__class__.__name__} source must be a URLSource, a Base64Source or its dict "
        f"(e.g. {{'type': 'url', 'url': ...}}), not {type(source).__name__}"
    )


def _tool_output(output: Any) -> Any:
    """*output* (not a string, not empty) with any dict blocks in it structured."""
    if output.__class__ is tuple:
        output = list(output)
    if output.__class__ is list:
        for item in output:
            if isinstance(item, dict):
                break
        else:
            return output  # blocks only (or something the converter would refuse): as given
    return CONVERSION.structure(output, ToolOutput, what="tool result output", path="output")


@_finish
@attrs.define(slots=True, init=False)
class URLSource(_MappingView):
    """A media source given by URL (``http(s)://``, ``file://`` or a local path).

    :raises MessageFormatError: for a *type* other than ``"url"``.
    """

    type: ClassVar[Literal["url"]] = "url"
    url: str

    def __init__(self, url: str, *, type: Literal["url"] | None = None) -> None:
        if type is not None and type != "url":
            raise _wrong_type(self, type)
        self.url = url


@_finish
@attrs.define(slots=True, init=False)
class Base64Source(_MappingView):
    """Media embedded as base64 data with its MIME type, e.g. ``image/png``.

    :raises MessageFormatError: for a *type* other than ``"base64"``.
    """

    type: ClassVar[Literal["base64"]] = "base64"
    media_type: str
    data: str

    def __init__(
        self, media_type: str, data: str, *, type: Literal["base64"] | None = None
    ) -> None:
        if type is not None and type != "base64":
            raise _wrong_type(self, type)
        self.media_type = media_type
        self.data = data


Source = URLSource | Base64Source


@_finish
@attrs.define(slots=True, init=False)
class TextBlock(_MappingView):
    """Plain text.

    ``thought_signature`` is a provider's opaque signature of the text (Gemini's thinking
    models): it is sent back unchanged in later turns, and written to JSON only when set.

    :raises MessageFormatError: for a *type* other than ``"text"``.
    """

    type: ClassVar[Literal["text"]] = "text"
    text: str
    thought_signature: str | None = None

    def __init__(
        self,
        text: str,
        thought_signature: str | None = None,
        *,
        type: Literal["text"] | None = None,
    ) -> None:
        if type is not None and type != "text":
            raise _wrong_type(self, type)
        self.text = text
        self.thought_signature = thought_signature


@_finish
@attrs.define(slots=True, init=False)
class ThinkingBlock(_MappingView):
    """A model's reasoning, shown to the user but not broadcast to other agents.

    ``signature`` is the provider's opaque proof of the reasoning (Anthropic's extended
    thinking): it must be sent back unchanged with the block in later turns, so it is kept
    when present and written to JSON only then.

    :raises MessageFormatError: for a *type* other than ``"thinking"``.
    """

    type: ClassVar[Literal["thinking"]] = "thinking"
    thinking: str
    signature: str | None = None

    def __init__(
        self,
        thinking: str,
        signature: str | None = None,
        *,
        type: Literal["thinking"] | None = None,
    ) -> None:
        if type is not None and type != "thinking":
            raise _wrong_type(self, type)
        self.thinking = thinking
        self.signature = signature


@attrs.define(slots=True, init=False)
class _SourcedBlock(_MappingView):
    """What the media blocks share: one ``source`` field, given as a source or its dict."""

    source: Source

    def __init__(self, source: Source | dict[str, Any], *, type: str | None = None) -> None:
        if type is not None and type != self.type:
            raise _wrong_type(self, type)
        cls = source.__class__
        if cls is not URLSource and cls is not Base64Source:
            source = _source(self, source)
        self.source = source  # type: ignore[assignment]  # a Source: the test above makes it one


@_finish
@attrs.define(slots=True, init=False)
class ImageBlock(_SourcedBlock):
    """An image, by URL or as base64 data.

    :param source: a :class:`URLSource`, a :class:`Base64Source` or the dict of one.
    :raises MessageFormatError: for a *type* other than ``"image"`` or a malformed dict source
        (the message names the field, e.g. ``source.url``).
    :raises TypeError: for a source that is neither a source nor a dict.
    """

    type: ClassVar[Literal["image"]] = "image"


@_finish
@attrs.define(slots=True, init=False)
class AudioBlock(_SourcedBlock):
    """Audio, by URL or as base64 data.

    :param source: a :class:`URLSource`, a :class:`Base64Source` or the dict of one.
    :raises MessageFormatError: for a *type* other than ``"audio"`` or a malformed dict source.
    :raises TypeError: for a source that is neither a source nor a dict.
    """

    type: ClassVar[Literal["audio"]] = "audio"


@_finish
@attrs.define(slots=True, init=False)
class VideoBlock(_SourcedBlock):
    """Video, by URL or as base64 data.

    :param source: a :class:`URLSource`, a :class:`Base64Source` or the dict of one.
    :raises MessageFormatError: for a *type* other than ``"video"`` or a malformed dict source.
    :raises TypeError: for a source that is neither a source nor a dict.
    """

    type: ClassVar[Literal["video"]] = "video"


MediaBlock = TextBlock | ImageBlock | AudioBlock | VideoBlock
"""What a tool result's ``output`` list may hold."""

ToolOutput = str | list[MediaBlock]
"""A tool result's ``output``: a string or a list of media blocks."""


@_finish
@attrs.define(slots=True, init=False)
class ToolUseBlock(_MappingView):
    """A model's request to call tool *name* with arguments *input*.

    ``raw_input`` holds the argument text exactly as the model sent it when it could not be
    parsed as a JSON object (``input`` is then ``{}``), so the agent can tell the model what was
    wrong instead of crashing. ``thought_signature`` is a provider's opaque signature of the
    call (Gemini's thinking models), sent back unchanged in later turns; both are written to
    JSON only when set.

    :param input: the arguments; omitted or ``None``, an empty dict.
    :raises MessageFormatError: for a *type* other than ``"tool_use"``.
    """

    type: ClassVar[Literal["tool_use"]] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = attrs.field(factory=dict)
    raw_input: str | None = None
    thought_signature: str | None = None

    def __init__(
        self,
        id: str,
        name: str,
        input: dict[str, Any] | None = None,
        raw_input: str | None = None,
        thought_signature: str | None = None,
        *,
        type: Literal["tool_use"] | None = None,
    ) -> None:
        if type is not None and type != "tool_use":
            raise _wrong_type(self, type)
        self.id = id
        self.name = name
        self.input = {} if input is None else input
        self.raw_input = raw_input
        self.thought_signature = thought_signature


@_finish
@attrs.define(slots=True, init=False)
class ToolResultBlock(_MappingView):
    """The result of the tool call with the same ``id``: a string or a list of media blocks.

    :param output: a string, or a list of media blocks or their dicts (a list of blocks is kept
        as given; one holding dicts, or a tuple, becomes a new list of blocks).
    :raises MessageFormatError: for a *type* other than ``"tool_result"``, a malformed dict
        block in *output* (the message names it, e.g. ``output[1].source``) or an *output*
        that is neither a string, a list nor a tuple.
    """

    type: ClassVar[Literal["tool_result"]] = "tool_result"
    id: str
    name: str
    output: ToolOutput = ""

    def __init__(
        self,
        id: str,
        name: str,
        output: str | Sequence[MediaBlock | dict[str, Any]] = "",
        *,
        type: Literal["tool_result"] | None = None,
    ) -> None:
        if type is not None and type != "tool_result":
            raise _wrong_type(self, type)
        self.id = id
        self.name = name
        # An empty list (how the agent starts every result) needs no look inside.
        if output.__class__ is not str and output:
            output = _tool_output(output)
        self.output = output  # type: ignore[assignment]  # any dict blocks were turned to blocks


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
_ALL_TYPES: dict[str, type[_MappingView]] = {**BLOCK_TYPES, **SOURCE_TYPES}
