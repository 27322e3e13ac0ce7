"""JSON data: what may be saved, sent or kept as a message's metadata or a tool's arguments.

Plain JSON data is a dict with string keys, a list (or tuple), a string, a finite number, a
boolean or ``None``, nested at most :data:`MAX_JSON_DEPTH` levels. The checks here walk data
without recursion, so any depth of nesting gets an answer (never a ``RecursionError``), and
name the first offending path (``a.b[2]``). They depend on nothing else of the package but
its exceptions: messages, state modules, sessions, memories, models and tools all use them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

from .exception import MessageFormatError

# A UTF-16 surrogate that is not half of a pair: JSON's ``"\ud800"`` decodes to one, and it
# cannot be encoded as UTF-8, so a value holding one breaks every later request and save.
LONE_SURROGATE = re.compile(
    "[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]"
)

__all__ = [
    "LONE_SURROGATE",
    "MAX_JSON_DEPTH",
    "MAX_TOOL_INPUT_DEPTH",
    "check_json",
    "check_json_within",
    "flat_json_object",
    "json_problem",
    "savable_text",
    "tool_input_problem",
    "type_name",
]


def type_name(value: Any) -> str:
    """The name of *value*'s type as an error message says it (``null`` for ``None``)."""
    return "null" if value is None else type(value).__name__


MAX_JSON_DEPTH = 200
"""How deeply JSON data may nest (objects and arrays, the outermost counting as one).

Deeper data is refused with :class:`~agentscope_rt.exception.MessageFormatError`. The library
copies messages and providers' SDKs serialise them by recursion, one or two Python frames per
level, against a recursion limit of 1,000 frames by default: 200 levels leave room for the
caller's own stack, and no real message or tool call comes near them."""

MAX_TOOL_INPUT_DEPTH = MAX_JSON_DEPTH // 2
"""How deeply the JSON data a message carries may nest (100 levels): a tool call's arguments
(``ToolUseBlock.input``) and the message's metadata. The one rule for that data, applied where
it enters: the providers' parsing of tool-call text and the ReAct agent's reasoning step (deeper
arguments are not kept: the call becomes an argument error the model reads), and every
memory's ``add`` (a deeper message is refused with
:class:`~agentscope_rt.exception.MessageFormatError`).

It is half of :data:`MAX_JSON_DEPTH`, the limit a saved state is held to, because the message
is saved inside a state (session, agent, memory, message, block, and a durable reply's
checkpoint around those) that must stay within :data:`MAX_JSON_DEPTH` as a whole: whatever a
memory accepts can be saved; no real tool call nests anywhere near it."""


def _scalar_problem(value: Any) -> str | None:
    """Why *value* (neither an object nor an array) is not JSON data, or None."""
    cls = value.__class__
    if cls is str or cls is int or cls is bool or value is None:
        return None
    if cls is float:
        return None if math.isfinite(value) else f"{value!r} is not valid JSON"
    return f"{type_name(value)} is not JSON data"


def _members(value: Any) -> Iterator[tuple[Any, Any]] | None:
    """``(key or index, item)`` pairs of an object or array, else None."""
    if isinstance(value, dict):
        return iter(value.items())
    if isinstance(value, list | tuple):
        return enumerate(value)
    return None


def json_problem(
    value: Any, path: str, levels_above: int = 0, max_depth: int = MAX_JSON_DEPTH
) -> tuple[str, str] | None:
    """``(path, reason)`` of the first part of *value* that is not plain JSON data, or None.

    Depth first with a stack of iterators instead of recursion, so that any depth gets an
    answer; the path is rebuilt from the keys on the stack only when there is a problem.
    *levels_above* is how many objects and arrays enclose *value* in the document being
    checked: they count towards *max_depth* as in a check of the whole document.
    """
    limit = max_depth - levels_above
    members = _members(value)
    if members is None:
        reason = _scalar_problem(value)
        return None if reason is None else (path, reason)
    # stack[i] walks the container reached through keys[:i] (keys[i-1] being its own key).
    stack: list[tuple[Iterator[tuple[Any, Any]], bool]] = [(members, isinstance(value, dict))]
    keys: list[tuple[Any, bool]] = []
    while stack:
        iterator, in_object = stack[-1]
        for key, item in iterator:
            if in_object and not isinstance(key, str):
                return _path(path, keys), f"JSON object keys must be strings, got {key!r}"
            cls = item.__class__
            if cls is str or cls is int or cls is bool or item is None:
                continue
            members = _members(item)
            if members is None:
                reason = _scalar_problem(item)
                if reason is None:
                    continue
                return _path(path, [*keys, (key, in_object)]), reason
            keys.append((key, in_object))
            if len(stack) >= limit:
                return _path(path, keys), f"nested deeper than {max_depth} levels"
            stack.append((members, isinstance(item, dict)))
            break
        else:
            stack.pop()
            if keys:
                keys.pop()
    return None


def _path(path: str, keys: list[tuple[Any, bool]]) -> str:
    for key, in_object in keys:
        if in_object:
            key = savable_text(key)  # the error may be sent to a model, logged and saved
        path = (f"{path}.{key}" if path else key) if in_object else f"{path}[{key}]"
    return path


def savable_text(text: str) -> str:
    """*text* with any lone surrogate written as its ``\\uXXXX`` escape, so that it can be
    kept (a tool call's ``raw_input``, a path in an error), sent and saved; text without one
    is returned as is."""
    if text.isascii() or LONE_SURROGATE.search(text) is None:
        return text
    return LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def check_json_within(value: Any, path: str, levels_above: int) -> None:
    """:func:`check_json` for *value* found *levels_above* objects and arrays deep inside the
    document being checked (so the depth limit counts them, as a check of the whole would)."""
    problem = json_problem(value, path, levels_above)
    if problem is not None:
        where, reason = problem
        raise MessageFormatError(f"{where or 'value'}: {reason}", path=where or None)


def check_json(value: Any, path: str = "", max_depth: int = MAX_JSON_DEPTH) -> None:
    """Check that *value* is plain JSON data (dict with str keys, list, str, number, bool, None)
    nested at most *max_depth* levels deep.

    :raises MessageFormatError: naming the first offending path (any depth of nesting gets
        this error, never a ``RecursionError``).
    """
    problem = json_problem(value, path, max_depth=max_depth)
    if problem is not None:
        where, reason = problem
        raise MessageFormatError(f"{where or 'value'}: {reason}", path=where or None)


def tool_input_problem(value: Any) -> str | None:
    """Why *value* cannot be a tool call's arguments (:data:`MAX_TOOL_INPUT_DEPTH`, JSON data
    only), as ``"<reason> (at <path>)"``, or ``None`` when it can."""
    if value.__class__ is dict and flat_json_object(value):
        return None  # the usual arguments: one level of scalars, checked without the walk
    problem = json_problem(value, "", max_depth=MAX_TOOL_INPUT_DEPTH)
    if problem is None:
        return None
    where, reason = problem
    return f"{reason} (at {where[:60]}{'...' if len(where) > 60 else ''})" if where else reason


def flat_json_object(value: dict[Any, Any]) -> bool:
    """Whether *value* holds only string keys and JSON scalars (no containers, no NaN)."""
    for key, item in value.items():
        if key.__class__ is not str:
            return False
        cls = item.__class__
        if cls is str or cls is int or cls is bool or item is None:
            continue
        if cls is float and math.isfinite(item):
            continue
        return False
    return True
