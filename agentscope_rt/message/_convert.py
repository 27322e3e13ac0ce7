"""The one cattrs converter that owns all (un)structuring in agentscope-rt.

Messages, content blocks and every attrs value registered as state go through :data:`converter`.
It is strict where cattrs is lenient by default: a ``str`` field accepts only a string (cattrs
would call ``str(5)``), a list field only a list (cattrs would iterate a string), and dict-typed
metadata only JSON data. Content blocks are a tagged union on their ``type`` key.

Every structuring failure surfaces as one :class:`~agentscope_rt.exception.MessageFormatError`
whose message names the offending path, such as ``content[2].source.url``. That includes data
nested too deeply: JSON data is checked by :mod:`agentscope_rt._json`, without recursion, and
refused beyond :data:`~agentscope_rt._json.MAX_JSON_DEPTH` levels, so a hostile document can
neither raise ``RecursionError`` here nor get data into a message that copying or sending it
would choke on later.

The converter registers the classes of :mod:`._block` and :mod:`._msg`, which it imports; they
reach it back only inside functions (``Msg.from_dict``, ``block.to_dict()``, dict blocks given
to a constructor). Other packages use it through :mod:`agentscope_rt._serde`.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.cols import is_sequence, list_structure_factory
from cattrs.errors import AttributeValidationNote, BaseValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from .._ids import new_id
from .._json import flat_json_object, json_problem, type_name
from ..exception import MessageFormatError
from ._block import (
    BLOCK_TYPES,
    MEDIA_TYPES,
    SOURCE_TYPES,
    AudioBlock,
    Base64Source,
    ContentBlock,
    ImageBlock,
    MediaBlock,
    MsgContent,
    Source,
    TextBlock,
    ThinkingBlock,
    ToolOutput,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
    VideoBlock,
    _MappingView,
)
from ._msg import _ROLES, Msg, now_timestamp

__all__ = [
    "checked_msg_json",
    "converter",
    "fast_structure_msg",
    "structure",
    "structure_block",
    "structure_msg",
    "unstructure",
    "unstructure_block",
    "unstructure_msg",
]

T = TypeVar("T")

converter = cattrs.Converter()


class _FieldError(TypeError):
    """Raised inside hooks; its text becomes the error message for the current path.

    :ivar subpath: where inside the current value the problem is (``"a.b[2]"``), if deeper.
    """

    def __init__(self, message: str, subpath: str = "") -> None:
        super().__init__(message)
        self.subpath = subpath


# Separates a message from its subpath between _format_exception and _raise_format_error.
_SUBPATH_MARK = "\x1f"


# -- strict primitives ---------------------------------------------------------------------


def _strict(kind: type, label: str) -> Any:
    def hook(value: Any, _: Any) -> Any:
        # bool is an int subclass; a JSON true is never a valid int or float here.
        if isinstance(value, kind) and not (kind is not bool and isinstance(value, bool)):
            return value
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        raise _FieldError(f"expected {label}, got {type_name(value)}")

    return hook


converter.register_structure_hook(str, _strict(str, "a string"))
converter.register_structure_hook(int, _strict(int, "an integer"))
converter.register_structure_hook(float, _strict(float, "a number"))
converter.register_structure_hook(bool, _strict(bool, "a boolean"))


def _list_factory(tp: Any, conv: cattrs.Converter) -> Any:
    inner = list_structure_factory(tp, conv)

    def hook(value: Any, t: Any) -> Any:
        if not isinstance(value, list | tuple):
            raise _FieldError(f"expected a list, got {type_name(value)}")
        return inner(value, t)

    return hook


converter.register_structure_hook_factory(
    lambda t: is_sequence(t) and typing.get_origin(t) in (list, typing.List),  # noqa: UP006
    _list_factory,
)


# -- JSON data -------------------------------------------------------------------------------


def _structure_json_dict(value: Any, _: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _FieldError(f"expected an object, got {type_name(value)}")
    problem = json_problem(value, "")
    if problem is not None:
        raise _FieldError(problem[1], subpath=problem[0])
    return value


converter.register_structure_hook_func(
    lambda t: t == dict[str, Any] or t == typing.Dict[str, Any],  # noqa: UP006
    _structure_json_dict,
)


# -- content blocks ------------------------------------------------------------------------


# The converter's own unstructure function of each block and source class.
_GENERATED_TO_JSON: dict[type, Callable[[Any], dict[str, Any]]] = {}


def _register_block(cls: type[_MappingView]) -> None:
    # Optional fields (default None) are written only when set: AgentScope's JSON has no such
    # key (``raw_input``, ``signature``, ``thought_signature``), and a block reads None as an
    # absent key, so ``to_dict()`` holds the keys ``dict(block)`` does.
    overrides = {
        a.name: override(omit_if_default=True)
        for a in attrs.fields(cls)  # type: ignore[arg-type]
        if a.default is None
    }
    gen_unstructure = make_dict_unstructure_fn(cls, converter, **overrides)  # type: ignore[arg-type]
    gen_structure = make_dict_structure_fn(cls, converter)
    tag = cls.type

    def unstructure_block(block: Any) -> dict[str, Any]:
        return {"type": tag, **gen_unstructure(block)}

    def structure_one(value: Any, _: Any) -> Any:
        if not isinstance(value, dict):
            raise _FieldError(f"expected a {tag!r} block object, got {type_name(value)}")
        return gen_structure(value, cls)

    converter.register_unstructure_hook(cls, unstructure_block)
    converter.register_structure_hook(cls, structure_one)
    _GENERATED_TO_JSON[cls] = unstructure_block


def _tagged_union(table: dict[str, type[_MappingView]], what: str) -> Any:
    expected = ", ".join(repr(t) for t in table)

    def hook(value: Any, _: Any) -> Any:
        if isinstance(value, _MappingView) and value.type in table:
            return value
        if not isinstance(value, dict):
            raise _FieldError(f"expected a {what} object, got {type_name(value)}")
        tag = value.get("type")
        cls = table.get(tag) if isinstance(tag, str) else None
        if cls is None:
            raise _FieldError(f"unknown {what} type {tag!r}; expected one of {expected}")
        return converter.structure(value, cls)

    return hook


def _register_exact(tp: Any, hook: Any) -> None:
    # Unions go through a predicate: registering a union directly would register the hook
    # for each member class too, shadowing the per-class hooks.
    converter.register_structure_hook_func(lambda t: t == tp, hook)


_register_exact(ContentBlock, _tagged_union(BLOCK_TYPES, "content block"))
_register_exact(MediaBlock, _tagged_union(MEDIA_TYPES, "tool output block"))
_register_exact(Source, _tagged_union(SOURCE_TYPES, "source"))


def _structure_tool_output(value: Any, _: Any) -> str | list[Any]:
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise _FieldError(f"expected a string or a list of blocks, got {type_name(value)}")
    return converter.structure(value, list[MediaBlock])


_register_exact(ToolOutput, _structure_tool_output)


def _structure_content(value: Any, _: Any) -> str | list[Any]:
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise _FieldError(f"expected a string or a list of blocks, got {type_name(value)}")
    return converter.structure(value, list[ContentBlock])


_register_exact(MsgContent, _structure_content)

# After the unions: generated block functions look up their field hooks when built.
for _cls in (*BLOCK_TYPES.values(), *SOURCE_TYPES.values()):
    _register_block(_cls)


# -- messages ------------------------------------------------------------------------------


# -- fast paths ------------------------------------------------------------------------------
#
# Saving or loading a memory handles every message of a conversation, and cattrs' dispatch
# costs more than the work itself. The functions below handle the common shapes directly
# (exact types, the usual blocks) and produce exactly what the converter produces; anything
# else is handed to the converter, so unusual data and malformed data behave (and fail, with
# the same messages and paths) as they always did.


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


def _tool_use_to_json(block: ToolUseBlock) -> dict[str, Any]:
    arguments = block.input
    if arguments.__class__ is not dict or not flat_json_object(arguments):
        # Nested arguments: the converter's deep copy (and its limits) as always.
        return _GENERATED_TO_JSON[ToolUseBlock](block)
    data = {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(arguments)}
    if block.raw_input is not None:
        data["raw_input"] = block.raw_input
    if block.thought_signature is not None:
        data["thought_signature"] = block.thought_signature
    return data


def _tool_result_to_json(block: ToolResultBlock) -> dict[str, Any]:
    output: Any = block.output
    if output.__class__ is not str:
        if output.__class__ is not list:
            return _GENERATED_TO_JSON[ToolResultBlock](block)
        items = []
        for item in output:
            if item.__class__ is not TextBlock:
                return _GENERATED_TO_JSON[ToolResultBlock](block)
            items.append(_text_to_json(item))
        output = items
    return {"type": "tool_result", "id": block.id, "name": block.name, "output": output}


_FAST_TO_JSON: dict[type, Any] = {
    TextBlock: _text_to_json,
    ThinkingBlock: _thinking_to_json,
    ToolUseBlock: _tool_use_to_json,
    ToolResultBlock: _tool_result_to_json,
}


def unstructure_block(block: Any) -> Any:
    """A block's JSON dict, as ``converter.unstructure(block)`` gives it (without dispatch)."""
    to_json = _FAST_TO_JSON.get(block.__class__)
    if to_json is None:
        return converter.unstructure(block)
    return to_json(block)


def _unstructure_content(content: Any) -> Any:
    if content.__class__ is str:
        return content
    return [unstructure_block(block) for block in content]


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
        return _tool_use_to_json(block)
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
    metadata = msg.metadata
    if metadata and (
        metadata.__class__ is not dict or json_problem(metadata, "", levels_above + 1)
    ):
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


def unstructure_msg(msg: Msg) -> dict[str, Any]:
    """AgentScope's JSON dict for *msg* (see :meth:`Msg.to_dict`)."""
    data: dict[str, Any] = {
        "id": msg.id,
        "name": msg.name,
        "role": msg.role,
        "content": _unstructure_content(msg.content),
        "metadata": msg.metadata,
        "timestamp": msg.timestamp,
    }
    if msg.invocation_id is not None:
        data["invocation_id"] = msg.invocation_id
    return data


def _structure_msg_hook(value: Any, _: Any) -> Msg:
    if not isinstance(value, dict):
        raise _FieldError(f"expected a message object, got {type_name(value)}")
    fields: dict[str, Any] = {}
    errors: list[Exception] = []

    def take(key: str, tp: Any, *, required: bool) -> None:
        if key not in value:
            if required:
                errors.append(_with_path(KeyError(key), key))
            return
        try:
            fields[key] = converter.structure(value[key], tp)
        except (BaseValidationError, _FieldError, MessageFormatError) as exc:
            errors.append(_with_path(exc, key))

    take("name", str, required=True)
    take("role", str, required=True)
    take("content", MsgContent, required=True)
    metadata = value.get("metadata")
    if metadata is not None:
        take("metadata", dict[str, Any], required=False)
    take("timestamp", str, required=False)
    take("id", str, required=False)
    if value.get("invocation_id") is not None:
        take("invocation_id", str, required=False)
    if "role" in fields and fields["role"] not in _ROLES:
        errors.append(
            _with_path(
                _FieldError(f"expected 'user', 'assistant' or 'system', got {fields['role']!r}"),
                "role",
            )
        )
    if errors:
        raise cattrs.ClassValidationError("While structuring Msg", errors, Msg)
    msg = object.__new__(Msg)
    msg.name = fields["name"]
    msg.content = fields["content"]
    msg.role = fields["role"]
    msg.metadata = fields.get("metadata") or {}
    msg.timestamp = fields.get("timestamp") or now_timestamp()
    msg.invocation_id = fields.get("invocation_id")
    msg.id = fields.get("id") or new_id()
    return msg


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
    if tag.__class__ is str and tag in BLOCK_TYPES:
        try:
            return converter.structure(data, BLOCK_TYPES[tag])
        except Exception:
            return None  # the converter reports it again, with its path in the document
    return None


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
    msg.metadata = metadata or {}
    msg.timestamp = timestamp or now_timestamp()
    msg.invocation_id = invocation_id
    msg.id = msg_id or new_id()
    return msg


def _with_path(exc: Exception, key: str) -> Exception:
    # The note is what cattrs.transform_error reads to build the ``$.key`` path.
    exc.__notes__ = [
        *getattr(exc, "__notes__", []),
        AttributeValidationNote(f"Structuring Msg @ attribute {key}", key, Any),
    ]
    return exc


converter.register_structure_hook(Msg, _structure_msg_hook)
converter.register_unstructure_hook(Msg, unstructure_msg)


# -- entry points --------------------------------------------------------------------------


def _format_exception(exc: BaseException, tp: Any) -> str:
    if isinstance(exc, _FieldError) and exc.subpath:
        return f"{exc}{_SUBPATH_MARK}{exc.subpath}"
    if isinstance(exc, _FieldError | MessageFormatError):
        return str(exc)
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, RecursionError):
        return _TOO_DEEP
    return f"{type(exc).__name__}: {exc}"


# What a RecursionError while structuring means for the data.
_TOO_DEEP = "nested too deeply to be read"


def _raise_format_error(exc: BaseException, what: str, prefix: str) -> typing.NoReturn:
    if isinstance(exc, BaseValidationError):
        lines = cattrs.transform_error(exc, path="$", format_exception=_format_exception)
    else:
        lines = [f"{_format_exception(exc, None)} @ $"]
    messages: list[str] = []
    first_path: str | None = None
    for line in lines:
        text, _, where = line.rpartition(" @ ")
        text, _, subpath = text.partition(_SUBPATH_MARK)
        path = prefix + where[1:]
        if subpath:
            path += subpath if subpath.startswith("[") else f".{subpath}"
        path = path.lstrip(".") or (prefix or "$")
        if first_path is None:
            first_path = path
        messages.append(f"{path}: {text}")
    summary = messages[0] if len(messages) == 1 else "; ".join(messages)
    raise MessageFormatError(f"invalid {what}: {summary}", path=first_path) from None


def structure(data: Any, tp: type[T] | Any, *, what: str = "data", path: str = "") -> T:
    """Structure JSON *data* into *tp* with the shared converter.

    :param what: what is being built, for the error message (``"message"``, ``"state"``).
    :param path: a prefix for error paths (e.g. ``"content[2]"``).
    :raises MessageFormatError: for malformed data; the message names the offending path.
        Data nested too deeply for the structuring to recurse into is malformed too.
    """
    try:
        return typing.cast(T, converter.structure(data, tp))
    except (BaseValidationError, _FieldError, KeyError, RecursionError) as exc:
        _raise_format_error(exc, what, path)


def unstructure(value: Any) -> Any:
    """Turn *value* (attrs values, messages, blocks, containers of them) into JSON data."""
    return converter.unstructure(value)


def structure_msg(data: Any) -> Msg:
    """Build a :class:`Msg` from AgentScope's JSON dict; see :meth:`Msg.from_dict`."""
    msg = fast_structure_msg(data)
    if msg is not None:
        return msg
    return structure(data, Msg, what="message")


def structure_block(data: Any, *, path: str = "") -> ContentBlock:
    """Build one content block from its dict form."""
    block: ContentBlock = structure(data, ContentBlock, what="content block", path=path)
    return block
