"""The hand-written message codec: the usual messages to and from JSON without cattrs.

Saving or loading a memory handles every message of a conversation, and cattrs' dispatch costs
more than the work itself. The functions here handle the common shapes directly (exact types,
the usual blocks) and produce exactly what the converter (:mod:`._convert`) produces. Where a
value is of another shape they return ``None`` and the converter, which composes them, does the
work: unusual data and malformed data behave (and fail, with the same messages and paths) as
they always did. This module imports nothing of the converter, so the converter can build on it.

Why by hand: cattrs' generated hooks without detailed validation
(``cattrs.Converter(detailed_validation=False)``, the detailed converter run again only to word
an error) were tried against these functions on the messages of ``bench/bench_persistence.py``
(user turns, tool calls, tool results, answers), both timed in one process on a loaded
machine. Per message, loading took 5.4 us here against 36.1 us generated (57.5 us with
detailed validation); saving (to JSON data, checked to be JSON) 6.2 us against 37.0 us (14.8 us
without the check, which the generated code cannot skip for metadata and tool arguments); a
load and a save 13.3 us against 81.2 us, six times as much. The JSON session's save + load must
stay at least twice as fast as AgentScope 1.0.21's (0.132 s for 10,000 messages in
``bench/RESULTS.md``, ours 0.062-0.064 s: a margin of under 0.4 us per message), so the
generated hooks, which would add some 0.7 s, cannot replace these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import cattrs

from .._json import flat_json_object, json_problem
from ._block import (
    MEDIA_TYPES,
    AudioBlock,
    Base64Source,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
    VideoBlock,
)
from ._msg import _ROLES, Msg, now_timestamp

__all__ = ["BLOCK_TO_JSON", "checked_msg_json", "fast_structure_msg"]


def _text_to_json(block: TextBlock) -> dict[str, Any]:
    signature = block.thought_signature
    if signature is None:
        return {"type": "text", "text": block.text}
    return {"type": "text", "text": block.text, "thought_signature": signature}


def _thinking_to_json(block: ThinkingBlock) -> dict[str, Any]:
    signature = block.signature
    if signature is None:
        return {"type": "thinking", "thinking": block.thinking}
    return {"type": "thinking", "thinking": block.thinking, "signature": signature}


def _tool_use_to_json(
    block: ToolUseBlock, copy_nested: Callable[[Any], Any] | None = None
) -> dict[str, Any] | None:
    """*block*'s JSON dict; None for nested arguments unless *copy_nested* copies them (for
    arguments already checked to be JSON data: otherwise the converter copies them)."""
    arguments = block.input
    if arguments.__class__ is not dict:
        return None
    if flat_json_object(arguments):
        arguments = dict(arguments)
    elif copy_nested is None:
        return None
    else:
        arguments = copy_nested(arguments)
    data = {"type": "tool_use", "id": block.id, "name": block.name, "input": arguments}
    if block.raw_input is not None:
        data["raw_input"] = block.raw_input
    if block.thought_signature is not None:
        data["thought_signature"] = block.thought_signature
    return data


def _tool_result_to_json(block: ToolResultBlock) -> dict[str, Any] | None:
    output: Any = block.output
    if output.__class__ is not str:
        if output.__class__ is not list:
            return None
        items = []
        for item in output:
            if item.__class__ is not TextBlock:
                return None
            items.append(_text_to_json(item))
        output = items
    return {"type": "tool_result", "id": block.id, "name": block.name, "output": output}


BLOCK_TO_JSON: dict[type, Any] = {
    TextBlock: _text_to_json,
    ThinkingBlock: _thinking_to_json,
    ToolUseBlock: _tool_use_to_json,
    ToolResultBlock: _tool_result_to_json,
}

"""The JSON dict of a block of each class here, or None for one of an unusual shape (then
``converter.unstructure(block)`` gives it)."""


def _checked_block_json(block: Any, levels_above: int) -> dict[str, Any] | None:
    """*block*'s JSON dict when it is plain JSON data within the depth limit, else None.

    *levels_above* counts the objects and arrays around the block's dict in the document.
    """
    cls = block.__class__
    if cls is TextBlock:
        text, signature = block.text, block.thought_signature
        if text.__class__ is not str:
            return None
        if signature is None:
            return {"type": "text", "text": text}
        if signature.__class__ is str:
            return {"type": "text", "text": text, "thought_signature": signature}
        return None
    if cls is ToolUseBlock:
        arguments = block.input
        if (
            block.id.__class__ is not str
            or block.name.__class__ is not str
            or arguments.__class__ is not dict
        ):
            return None
        if block.raw_input is None and block.thought_signature is None:
            if flat_json_object(arguments):
                return {
                    "type": "tool_use",
                    "id": block.id,
                    "name": block.name,
                    "input": dict(arguments),
                }
        elif not _optional_str(block.raw_input) or not _optional_str(block.thought_signature):
            return None
        if json_problem(arguments, "", levels_above + 1):
            return None
        return _tool_use_to_json(block, _copy_json_arguments)
    if cls is ToolResultBlock:
        if block.id.__class__ is not str or block.name.__class__ is not str:
            return None
        output = block.output
        if output.__class__ is not str:
            if output.__class__ is not list:
                return None
            items = []
            for item in output:
                if item.__class__ is not TextBlock and item.__class__ not in _MEDIA_CLASSES:
                    return None
                data = _checked_block_json(item, 0)
                if data is None:
                    return None
                items.append(data)
            output = items
        return {"type": "tool_result", "id": block.id, "name": block.name, "output": output}
    if cls is ThinkingBlock:
        if block.thinking.__class__ is str and _optional_str(block.signature):
            return _thinking_to_json(block)
        return None
    if cls in _MEDIA_CLASSES:
        source = block.source
        if source.__class__ is URLSource:
            if source.url.__class__ is str:
                return {"type": block.type, "source": {"type": "url", "url": source.url}}
        elif (
            source.__class__ is Base64Source
            and source.media_type.__class__ is str
            and source.data.__class__ is str
        ):
            return {
                "type": block.type,
                "source": {
                    "type": "base64",
                    "media_type": source.media_type,
                    "data": source.data,
                },
            }
        return None
    return None


# How the converter copies a block's ``input`` (a ``dict[str, Any]``). For arguments checked to
# be JSON data, any cattrs converter's copy is the one ``._convert``'s gives: that converter
# adds unstructuring hooks only for blocks and messages, which JSON data never holds.
_copy_json_arguments = cattrs.Converter().get_unstructure_hook(dict[str, Any])

_MEDIA_CLASSES = frozenset((ImageBlock, AudioBlock, VideoBlock))


def checked_msg_json(msg: Msg, levels_above: int) -> dict[str, Any] | None:
    """:func:`unstructure_msg`, when all of it is plain JSON data within the depth limit.

    None when anything is unusual (a field of another type, a block kind without a fast path,
    metadata or tool arguments that are not JSON): then :func:`unstructure_msg` and
    :func:`check_json` tell what is wrong. *levels_above* counts the objects and arrays that
    enclose the message's dict in the document being checked.
    """
    msg_id, name, role, timestamp = msg.id, msg.name, msg.role, msg.timestamp
    if (
        msg_id.__class__ is not str
        or name.__class__ is not str
        or role.__class__ is not str
        or timestamp.__class__ is not str
    ):
        return None
    content = msg.content
    if content.__class__ is not str:
        if content.__class__ is not list:
            return None
        blocks = []
        # The message's dict and its content list enclose the block.
        block_levels = levels_above + 2
        for block in content:
            # Plain text, the most common block, without a call.
            if (
                block.__class__ is TextBlock
                and block.thought_signature is None
                and block.text.__class__ is str
            ):
                blocks.append({"type": "text", "text": block.text})
                continue
            data = _checked_block_json(block, block_levels)
            if data is None:
                return None
            blocks.append(data)
        content = blocks
    metadata = msg._metadata
    if not metadata:
        metadata = {}  # none yet: not made for the message by saving it
    elif metadata.__class__ is not dict or json_problem(metadata, "", levels_above + 1):
        return None
    invocation_id = msg.invocation_id
    if invocation_id is not None and invocation_id.__class__ is not str:
        return None
    data = {
        "id": msg_id,
        "name": name,
        "role": role,
        "content": content,
        "metadata": metadata,
        "timestamp": timestamp,
    }
    if invocation_id is not None:
        data["invocation_id"] = invocation_id
    return data


def _optional_str(value: Any) -> bool:
    return value is None or value.__class__ is str


# Blocks built here get every field set directly, as the constructors would set them: a
# constructor call costs more than the rest of reading the block.
_new = object.__new__


def _fast_text(data: dict[str, Any]) -> TextBlock | None:
    text = data.get("text")
    signature = data.get("thought_signature")
    if text.__class__ is str and (signature is None or signature.__class__ is str):
        block = _new(TextBlock)
        block.text = text
        block.thought_signature = signature
        return block
    return None


def _fast_block(data: Any) -> Any:
    """The block for *data* when it is well formed, else None (the converter will say why).

    The usual dicts (a block's required keys and nothing else: the length says so once the
    required keys are found) are read by subscript, cheaper than ``get``.
    """
    if data.__class__ is not dict:
        return None
    tag = data.get("type")
    if tag == "text":
        if len(data) == 2 and "text" in data:
            text = data["text"]
            if text.__class__ is not str:
                return None
            text_block = _new(TextBlock)
            text_block.text = text
            text_block.thought_signature = None
            return text_block
        return _fast_text(data)
    if tag == "tool_use":
        if len(data) == 4 and "input" in data and "id" in data and "name" in data:
            block_id, name, arguments = data["id"], data["name"], data["input"]
            raw_input = signature = None
        else:
            get = data.get
            block_id, name, arguments = get("id"), get("name"), get("input", _ABSENT)
            raw_input, signature = get("raw_input"), get("thought_signature")
        if (
            block_id.__class__ is not str
            or name.__class__ is not str
            or not (raw_input is None or raw_input.__class__ is str)
            or not (signature is None or signature.__class__ is str)
        ):
            return None
        if arguments is _ABSENT:
            arguments = None  # the block's default: an empty dict
        elif arguments.__class__ is not dict or not (
            flat_json_object(arguments) or not json_problem(arguments, "")
        ):
            return None
        call = _new(ToolUseBlock)
        call.id = block_id
        call.name = name
        call.input = {} if arguments is None else arguments
        call.raw_input = raw_input
        call.thought_signature = signature
        return call
    if tag == "tool_result":
        block_id, name, output = data.get("id"), data.get("name"), data.get("output", "")
        if block_id.__class__ is not str or name.__class__ is not str:
            return None
        if output.__class__ is not str:
            if output.__class__ is not list:
                return None
            items: list[Any] = []
            for item in output:
                if item.__class__ is not dict:
                    return None
                item_tag = item.get("type")
                if item_tag == "text":
                    block = _fast_text(item)
                elif item_tag.__class__ is str and item_tag in MEDIA_TYPES:
                    block = _fast_block(item)
                else:
                    return None
                if block is None:
                    return None
                items.append(block)
            result = _new(ToolResultBlock)
            result.id = block_id
            result.name = name
            result.output = items
            return result
        return ToolResultBlock(block_id, name, output)
    if tag == "thinking":
        thinking, signature = data.get("thinking"), data.get("signature")
        if thinking.__class__ is str and (signature is None or signature.__class__ is str):
            return ThinkingBlock(thinking, signature)
        return None
    media = _MEDIA_BY_TAG.get(tag) if tag.__class__ is str else None
    if media is not None:
        return _fast_media(media, data)
    return None


_MEDIA_BY_TAG: dict[str, type[ImageBlock | AudioBlock | VideoBlock]] = {
    cls.type: cls for cls in (ImageBlock, AudioBlock, VideoBlock)
}


def _fast_media(cls: type[ImageBlock | AudioBlock | VideoBlock], data: dict[str, Any]) -> Any:
    """A media block from its dict with a plain URL or base64 source dict, else None."""
    source = data.get("source")
    if source.__class__ is not dict:
        return None
    kind = source.get("type")
    if kind == "url":
        url = source.get("url")
        if url.__class__ is not str:
            return None
        url_source = _new(URLSource)
        url_source.url = url
        built: URLSource | Base64Source = url_source
    elif kind == "base64":
        media_type, encoded = source.get("media_type"), source.get("data")
        if media_type.__class__ is not str or encoded.__class__ is not str:
            return None
        base64_source = _new(Base64Source)
        base64_source.media_type = media_type
        base64_source.data = encoded
        built = base64_source
    else:
        return None
    block = _new(cls)
    block.source = built
    return block


_ABSENT: Any = object()


def fast_structure_msg(data: Any) -> Msg | None:
    """The :class:`Msg` that :func:`structure_msg` builds from *data*, when *data* is well
    formed and of the usual shapes; None otherwise (then :func:`structure_msg` builds the
    message or says what is wrong). Never raises."""
    if data.__class__ is not dict:
        return None
    try:
        # What every save writes; read by subscript, cheaper than get.
        name, role, content = data["name"], data["role"], data["content"]
        metadata, timestamp, msg_id = data["metadata"], data["timestamp"], data["id"]
    except KeyError:
        get = data.get
        name, role, content = get("name"), get("role"), get("content")
        metadata, timestamp, msg_id = get("metadata"), get("timestamp", ""), get("id", "")
        invocation_id = get("invocation_id")
    else:
        # The six keys are there: a seventh can only be invocation_id (or one to ignore).
        invocation_id = data.get("invocation_id") if len(data) > 6 else None
    if name.__class__ is not str or role.__class__ is not str or role not in _ROLES:
        return None
    if content.__class__ is not str:
        if content.__class__ is not list:
            return None
        blocks = []
        for item in content:
            # {"type": "text", "text": str}, the most common block, without a call.
            if (
                item.__class__ is dict
                and len(item) == 2
                and item.get("type") == "text"
                and item.get("text").__class__ is str
            ):
                block = _new(TextBlock)
                block.text = item["text"]
                block.thought_signature = None
            else:
                block = _fast_block(item)
                if block is None:
                    return None
            blocks.append(block)
        content = blocks
    if metadata is not None and (
        metadata.__class__ is not dict
        or (metadata and not flat_json_object(metadata) and json_problem(metadata, ""))
    ):
        return None
    if (
        timestamp.__class__ is not str
        or msg_id.__class__ is not str
        or not (invocation_id is None or invocation_id.__class__ is str)
    ):
        return None
    msg = object.__new__(Msg)
    msg.name = name
    msg.content = content
    msg.role = role  # type: ignore[assignment]  # one of _ROLES: checked above
    msg._metadata = metadata or None
    msg.timestamp = timestamp or now_timestamp()
    msg.invocation_id = invocation_id
    msg._id = msg_id or None
    return msg
