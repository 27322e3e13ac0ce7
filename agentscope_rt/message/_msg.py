"""The message: what agents say, hear, remember and broadcast."""

from __future__ import annotations

import operator
import time
from collections.abc import Iterable, Sequence
from typing import Any, Literal, overload

import attrs

from .._copy import copy_json
from .._ids import new_id
from .._json import MAX_JSON_DEPTH
from ..exception import MessageFormatError
from ._block import (
    BLOCK_TYPES,
    CONVERSION,
    ContentBlock,
    MsgContent,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    _MappingView,
)

__all__ = ["Msg", "Role", "now_timestamp"]

Role = Literal["user", "assistant", "system"]
_ROLES = frozenset(("user", "assistant", "system"))
_NO_METADATA: dict[str, Any] = {}
# The fields of attrs' pickled form (a dict by field name), in the order of __getstate__.
_PICKLED_FIELDS = ("name", "content", "role", "metadata", "timestamp", "invocation_id", "id")
_BlockType = Literal["text", "thinking", "image", "audio", "video", "tool_use", "tool_result"]


# (second, "YYYY-MM-DD HH:MM:SS") of the last timestamp: formatting the date part is most of
# the cost, and it changes once a second. One tuple, so a reader never sees a torn pair.
_second_cache: tuple[int, str] = (-1, "")
# (millisecond, next millisecond, timestamp) of the last current timestamp, as floats: the
# messages of one reply are usually made within the same millisecond, and comparing floats
# costs less than turning the time into an integer.
_milli_cache: tuple[float, float, str] = (0.0, -1.0, "")
_time = time.time


def now_timestamp(now: float | None = None) -> str:
    """The current local time in AgentScope's format, ``YYYY-MM-DD HH:MM:SS.mmm``.

    :param now: a ``time.time()`` value to format instead of the current time.
    """
    global _milli_cache
    if now is not None:
        return _format_milli(int(now * 1000))
    scaled = _time() * 1000
    start, end, stamp = _milli_cache
    if start <= scaled < end:  # exactly when int(scaled) == start: the bounds are integers
        return stamp
    milli = int(scaled)
    stamp = _format_milli(milli)
    _milli_cache = (float(milli), float(milli + 1), stamp)
    return stamp


def _format_milli(milli: int) -> str:
    global _second_cache
    second = milli // 1000
    cached_second, prefix = _second_cache
    if second != cached_second:
        prefix = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second))
        _second_cache = (second, prefix)
    return f"{prefix}.{milli - second * 1000:03d}"


_BLOCK_CLASSES = frozenset(BLOCK_TYPES.values())
# list(map(_copy_block, blocks)) iterates in C: no bytecode per block (nor, on Python 3.11, the
# frame of a list comprehension, which 3.12 inlines).
_copy_block = operator.methodcaller("copy")


def _convert_content(content: Any) -> str | list[ContentBlock]:
    """Turn accepted content forms into a str or a fresh list of blocks.

    Dict blocks (AgentScope's form) go through the shared converter, which raises
    :class:`~agentscope_rt.exception.MessageFormatError` naming the bad field.
    """
    if isinstance(content, str):
        return content
    if content.__class__ is list:
        # The common case, a list of blocks, needs one set lookup per block.
        for item in content:
            if item.__class__ not in _BLOCK_CLASSES:
                break
        else:
            return list(content)
    if isinstance(content, _MappingView | dict):
        content = [content]
    elif not isinstance(content, list | tuple):
        raise TypeError(
            "Msg content must be a str, a content block, a dict block or a list of them, "
            f"not {type(content).__name__}"
        )
    blocks: list[ContentBlock] = []
    for index, item in enumerate(content):
        if isinstance(item, _MappingView) and item.type in BLOCK_TYPES:
            blocks.append(item)  # type: ignore[arg-type]
        elif isinstance(item, dict):
            blocks.append(CONVERSION.structure_block(item, path=f"content[{index}]"))
        else:
            raise TypeError(
                f"Msg content[{index}] must be a content block or a dict with a 'type' key, "
                f"not {type(item).__name__}"
            )
    return blocks


@attrs.define(slots=True, init=False, repr=False, eq=False, getstate_setstate=False)
class Msg:
    """A message.

    :param name: who speaks (an agent's or user's name).
    :param content: a string (kept as a string, as AgentScope does), one content block, a list
        of blocks, or AgentScope-style dicts such as ``{"type": "text", "text": "hi"}`` (turned
        into blocks here).
    :param role: ``"user"``, ``"assistant"`` or ``"system"``.
    :param metadata: JSON data carried with the message (structured output, generate reason).
    :param timestamp: ``YYYY-MM-DD HH:MM:SS.mmm``; defaults to now.
    :param invocation_id: the id of the agent call that produced this message, if any.
    :param id: the message id; generated when omitted.

    A message made without metadata or an id gets them when they are first read (an empty
    dict; a new id): most messages of a large simulation are never looked up by id nor given
    metadata, and the two cost 150 bytes a message. Reading either gives the same object
    every time, from any thread; copies, pickles and saved forms carry the message's id.

    :raises ValueError: for an unknown role.
    :raises TypeError: for content, name or metadata of the wrong type.
    :raises MessageFormatError: for a malformed dict block (the message names the field).
    """

    name: str
    content: MsgContent
    role: Role
    _metadata: dict[str, Any] | None
    timestamp: str
    invocation_id: str | None
    _id: str | None

    def __init__(
        self,
        name: str,
        content: str | ContentBlock | dict[str, Any] | Sequence[ContentBlock | dict[str, Any]],
        role: Role,
        metadata: dict[str, Any] | None = None,
        timestamp: str | None = None,
        invocation_id: str | None = None,
        *,
        id: str | None = None,
    ) -> None:
        if role not in _ROLES:
            raise ValueError(f"Msg role must be 'user', 'assistant' or 'system', not {role!r}")
        if not isinstance(name, str):
            raise TypeError(f"Msg name must be a str, not {type(name).__name__}")
        if metadata is not None and not isinstance(metadata, dict):
            raise TypeError(f"Msg metadata must be a dict or None, not {type(metadata).__name__}")
        self.name = name
        self.content = content if isinstance(content, str) else _convert_content(content)
        self.role = role
        self._metadata = metadata
        self.timestamp = now_timestamp() if timestamp is None else timestamp
        self.invocation_id = invocation_id
        self._id = id

    # In the two properties below, nothing between the second test and the store calls
    # anything: under CPython's GIL no other thread runs in between, so two threads reading a
    # new message's id (or metadata) at once get the same object.
    @property
    def id(self) -> str:
        """The message id: given, or 32 random hex digits made when first read."""
        msg_id = self._id
        if msg_id is None:
            made = new_id()
            msg_id = self._id
            if msg_id is None:
                msg_id = self._id = made
        return msg_id

    @id.setter
    def id(self, value: str) -> None:
        self._id = value

    @property
    def metadata(self) -> dict[str, Any]:
        """JSON data carried with the message (an empty dict, made when first read, if none
        was given)."""
        metadata = self._metadata
        if metadata is None:
            made: dict[str, Any] = {}
            metadata = self._metadata
            if metadata is None:
                metadata = self._metadata = made
        return metadata

    @metadata.setter
    def metadata(self, value: dict[str, Any]) -> None:
        self._metadata = value

    def has_id(self, msg_id: str) -> bool:
        """Whether the message's id is *msg_id*, without making one: a message whose id was
        never read gets a new one when it is, so it has no id anyone could be looking for."""
        return self._id == msg_id

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Msg)
        return (
            self.id == other.id
            and self.name == other.name
            and self.content == other.content
            and self.role == other.role
            and (self._metadata or _NO_METADATA) == (other._metadata or _NO_METADATA)
            and self.timestamp == other.timestamp
            and self.invocation_id == other.invocation_id
        )

    __hash__ = None  # type: ignore[assignment]  # mutable: as attrs made it

    def __getstate__(self) -> tuple[Any, ...]:
        # The id is made now if need be: an unpickled message (a copy, another process's
        # message) is the same message.
        return (
            self.name,
            self.content,
            self.role,
            self._metadata,
            self.timestamp,
            self.invocation_id,
            self.id,
        )

    def __setstate__(self, state: tuple[Any, ...] | dict[str, Any]) -> None:
        # A dict: the form attrs pickled, by field name.
        values = (
            tuple(map(state.__getitem__, _PICKLED_FIELDS)) if isinstance(state, dict) else state
        )
        self.name, self.content, self.role = values[0], values[1], values[2]
        self._metadata, self.timestamp, self.invocation_id, self._id = values[3:]

    def __repr__(self) -> str:
        return (
            f"Msg(id={self.id!r}, name={self.name!r}, role={self.role!r}, "
            f"content={self.content!r}, metadata={self.metadata!r}, "
            f"timestamp={self.timestamp!r}, invocation_id={self.invocation_id!r})"
        )

    # -- reading -------------------------------------------------------------------------

    def get_text_content(self, separator: str = "\n") -> str | None:
        """The text of the message: the string content, or the text blocks joined by
        *separator* (thinking excluded). ``None`` when there is no text."""
        content = self.content
        if content.__class__ is str or isinstance(content, str):
            return content
        texts = []
        for block in content:  # a loop: on Python 3.11 a comprehension is one more frame
            if block.__class__ is TextBlock or isinstance(block, TextBlock):
                texts.append(block.text)
        return separator.join(texts) if texts else None

    @overload
    def get_content_blocks(self, block_type: Literal["text"]) -> list[TextBlock]: ...
    @overload
    def get_content_blocks(self, block_type: Literal["thinking"]) -> list[ThinkingBlock]: ...
    @overload
    def get_content_blocks(self, block_type: Literal["tool_use"]) -> list[ToolUseBlock]: ...
    @overload
    def get_content_blocks(self, block_type: Literal["tool_result"]) -> list[ToolResultBlock]: ...
    @overload
    def get_content_blocks(
        self, block_type: _BlockType | Iterable[_BlockType] | None = None
    ) -> list[ContentBlock]: ...

    def get_content_blocks(
        self, block_type: _BlockType | Iterable[_BlockType] | None = None
    ) -> list[Any]:
        """The content as a list of blocks, optionally only those of *block_type* (a type
        name or several). A string content reads as one :class:`TextBlock`.

        :raises ValueError: for an unknown block type name.
        """
        blocks: list[ContentBlock] = (
            [TextBlock(text=self.content)] if isinstance(self.content, str) else list(self.content)
        )
        if block_type is None:
            return blocks
        if block_type.__class__ is str and block_type in BLOCK_TYPES:
            return [b for b in blocks if b.type == block_type]
        wanted = {block_type} if isinstance(block_type, str) else set(block_type)
        unknown = wanted - BLOCK_TYPES.keys()
        if unknown:
            raise ValueError(
                f"unknown block type(s) {sorted(unknown)}; expected one of {sorted(BLOCK_TYPES)}"
            )
        return [b for b in blocks if b.type in wanted]

    def has_content_blocks(
        self, block_type: _BlockType | Iterable[_BlockType] | None = None
    ) -> bool:
        """Whether the message holds at least one block (of *block_type*, when given)."""
        return len(self.get_content_blocks(block_type)) > 0

    # -- copying and serialising -----------------------------------------------------------

    def copy(self) -> Msg:
        """An independent deep copy with the same id (blocks and metadata copied too).

        :raises MessageFormatError: when its content or metadata is nested too deeply to be
            copied (never a ``RecursionError``; such data could not be saved either).
        """
        new = object.__new__(Msg)
        new.name = self.name
        content = self.content
        metadata = self._metadata
        try:
            new.content = content if content.__class__ is str else list(map(_copy_block, content))
            new._metadata = copy_json(metadata) if metadata else None
        except RecursionError:
            raise MessageFormatError(
                f"message {self.id!r} from {self.name!r}: its content or metadata is nested too "
                f"deeply to be copied (JSON data may nest at most {MAX_JSON_DEPTH} levels)"
            ) from None
        new.role = self.role
        new.timestamp = self.timestamp
        new.invocation_id = self.invocation_id
        new._id = self.id
        return new

    def to_dict(self) -> dict[str, Any]:
        """The message as AgentScope 1.0's JSON dict.

        Keys ``id, name, role, content, metadata, timestamp`` (plus ``invocation_id`` when
        set). ``content`` stays a string when the message was built from one.
        """
        return CONVERSION.unstructure_msg(self)

    @classmethod
    def from_dict(cls, json_data: Any) -> Msg:
        """Build a message from AgentScope's JSON dict (the inverse of :meth:`to_dict`).

        :raises MessageFormatError: for anything malformed; the message names the offending
            path (e.g. ``content[2].source.url``). Nothing half-built is returned. JSON data
            (``metadata``, a tool call's ``input``) nested deeper than ``MAX_JSON_DEPTH``
            (:mod:`agentscope_rt.message.serde`) levels is malformed too, at any depth (never
            a ``RecursionError``).
        """
        msg: Msg = CONVERSION.structure_msg(json_data)
        return msg
