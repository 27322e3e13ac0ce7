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

The usual messages take the hand-written functions of :mod:`._codec` (see there why), which
return ``None`` for anything else; this module composes them with the converter.

The converter registers the classes of :mod:`._block` and :mod:`._msg`, which it imports; they
reach it back (``Msg.from_dict``, ``block.to_dict()``, dict blocks given to a constructor)
through :data:`._block.CONVERSION`, which this module fills as it is imported (the package
imports it). Other packages use it through :mod:`agentscope_rt.message.serde`.
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

from .._json import json_problem, type_name
from ..exception import MessageFormatError
from ._block import (
    BLOCK_TYPES,
    CONVERSION,
    MEDIA_TYPES,
    SOURCE_TYPES,
    ContentBlock,
    MediaBlock,
    MsgContent,
    Source,
    ToolOutput,
    _MappingView,
)
from ._codec import BLOCK_TO_JSON, checked_msg_json, fast_structure_msg
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


def _string_or_blocks(block_type: Any) -> Callable[[Any, Any], str | list[Any]]:
    """The hook of a field that holds a string or a list of *block_type* (a tagged union)."""

    def structure(value: Any, _: Any) -> str | list[Any]:
        if isinstance(value, str):
            return value
        if not isinstance(value, list):
            raise _FieldError(f"expected a string or a list of blocks, got {type_name(value)}")
        return converter.structure(value, list[block_type])

    return structure


_register_exact(ToolOutput, _string_or_blocks(MediaBlock))
_register_exact(MsgContent, _string_or_blocks(ContentBlock))

# After the unions: generated block functions look up their field hooks when built.
for _cls in (*BLOCK_TYPES.values(), *SOURCE_TYPES.values()):
    _register_block(_cls)


# -- messages ------------------------------------------------------------------------------


def unstructure_block(block: Any) -> Any:
    """A block's JSON dict, as ``converter.unstructure(block)`` gives it (without its dispatch
    for the usual blocks)."""
    to_json = BLOCK_TO_JSON.get(block.__class__)
    if to_json is not None:
        data = to_json(block)
        if data is not None:
            return data
    return converter.unstructure(block)


def _unstructure_content(content: Any) -> Any:
    if content.__class__ is str:
        return content
    return [unstructure_block(block) for block in content]


def unstructure_msg(msg: Msg) -> dict[str, Any]:
    """AgentScope's JSON dict for *msg* (see :meth:`Msg.to_dict`)."""
    data: dict[str, Any] = {
        "id": msg.id,
        "name": msg.name,
        "role": msg.role,
        "content": _unstructure_content(msg.content),
        "metadata": msg._metadata or {},
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
    msg._metadata = fields.get("metadata") or None
    msg.timestamp = fields.get("timestamp") or now_timestamp()
    msg.invocation_id = fields.get("invocation_id")
    msg._id = fields.get("id") or None
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


CONVERSION.structure = structure
CONVERSION.structure_block = structure_block
CONVERSION.structure_msg = structure_msg
CONVERSION.unstructure = converter.unstructure
CONVERSION.unstructure_msg = unstructure_msg
