"""Small pieces shared by the chat models: tool-argument parsing, structured output, checks.

API keys and secrets are the foundation's (:mod:`agentscope_rt._provider`): the embedding
models and tools use them too.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from typing import Any

from .._json import (
    LONE_SURROGATE,
    MAX_JSON_DEPTH,
    MAX_TOOL_INPUT_DEPTH,
    check_json,
    savable_text,
)
from .._schema import (
    StructuredModel,
    StructuredOutputError,
    structured_model_schema,
    validate_structured_output,
)
from ..exception import ModelResponseError
from ..message import TextBlock, ThinkingBlock, ToolUseBlock

__all__ = [
    "STRUCTURED_TOOL_NAME",
    "check_formatted_messages",
    "loads_strict",
    "parse_partial_json",
    "parse_tool_input",
    "parse_tool_value",
    "savable_text",
    "scrub_surrogates",
    "structured_from_blocks",
    "structured_tool",
    "validated_metadata",
]

logger = logging.getLogger(__name__)

STRUCTURED_TOOL_NAME = "generate_structured_output"
"""The name of the tool through which providers return structured output."""


# What text must contain for its JSON to decode to a surrogate: an escape of one, or one as is.
_MAY_HOLD_SURROGATE = re.compile(r"\\[uU][dD][89a-fA-F]|[\ud800-\udfff]")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _is_strict(value: Any) -> bool:
    """Whether *value* (decoded JSON) holds only finite numbers and encodable strings."""
    if isinstance(value, str):
        return LONE_SURROGATE.search(value) is None
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_is_strict(k) and _is_strict(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_is_strict(item) for item in value)
    return True


def loads_strict(text: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Decode *text* as strict JSON (RFC 8259), the one parser for JSON a model wrote.

    Python's ``json.loads`` also accepts ``NaN``, ``Infinity`` and ``-Infinity`` and decodes
    ``"\\ud800"`` to a lone surrogate; neither can be sent to a provider or saved again
    (the JSON encoders refuse non-finite numbers in strict mode and UTF-8 has no lone
    surrogates), so a value holding one would break every later call of the agent.

    :param max_depth: how deeply an object or array may nest (tool arguments:
        :data:`~agentscope_rt.message.serde.MAX_TOOL_INPUT_DEPTH`).

    :raises ValueError: for text that is not strict JSON (``json.JSONDecodeError`` for
        syntax errors).
    """
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError(f"the JSON is nested deeper than {MAX_JSON_DEPTH} levels") from None
    if _MAY_HOLD_SURROGATE.search(text) is not None and not _is_strict(value):
        raise ValueError("the JSON holds a lone surrogate (an unpaired \\ud800-\\udfff escape)")
    if value.__class__ is dict or value.__class__ is list:
        # A number too large for a float (1e999) decodes to inf, and data nested deeper than
        # a message may hold could not be saved or sent again: both are refused here too.
        check_json(value, max_depth=max_depth)
    return value


def scrub_surrogates(response: Any) -> Any:
    """*response* (a :class:`~._model_response.ChatResponse`) with every lone surrogate in its
    text and thinking replaced by U+FFFD, in place.

    A model that streams ``"\\ud800"`` in its text would otherwise put a string into memory
    that no later request can encode. Text that is ASCII (most of it) is passed over at the
    cost of one flag check.
    """
    for block in response.content:
        kind = block.__class__
        if kind is TextBlock:
            text = block.text
            if not text.isascii() and LONE_SURROGATE.search(text) is not None:
                block.text = LONE_SURROGATE.sub("\ufffd", text)
        elif kind is ThinkingBlock:
            text = block.thinking
            if not text.isascii() and LONE_SURROGATE.search(text) is not None:
                block.thinking = LONE_SURROGATE.sub("\ufffd", text)
    return response


def parse_tool_input(text: str | None) -> tuple[dict[str, Any], str | None]:
    """Parse complete tool-argument text (strictly, see :func:`loads_strict`, and nested at
    most :data:`~agentscope_rt.message.serde.MAX_TOOL_INPUT_DEPTH` levels).

    :returns: ``(input, None)`` for a JSON object (empty text counts as ``{}``), otherwise
        ``({}, text)`` so the caller can keep the raw text in ``ToolUseBlock.raw_input`` (with
        lone surrogates escaped, see :func:`savable_text`).
    """
    if text is None or not text.strip():
        return {}, None
    try:
        value = loads_strict(text, MAX_TOOL_INPUT_DEPTH)
    except ValueError:
        return {}, savable_text(text)
    if isinstance(value, dict):
        return value, None
    return {}, savable_text(text)


def parse_tool_value(value: Any) -> tuple[dict[str, Any], str | None]:
    """``(input, raw_input)`` for tool arguments as a provider sent them: a JSON object
    already decoded from the response body, or a string holding one.

    A strict JSON object becomes ``input``; anything else (a string that is not strict JSON,
    a non-object, an object holding ``NaN``/``Infinity`` or a lone surrogate) is kept in
    ``raw_input`` as savable text with an empty ``input``, so the caller reports it instead of
    crashing.
    """
    if value is None:
        return {}, None
    if isinstance(value, str):
        return parse_tool_input(value)
    if isinstance(value, dict) and _is_json_object(value):
        return value, None
    try:
        return {}, json.dumps(value, default=str)  # ASCII: escapes any surrogate
    except (ValueError, RecursionError):
        return {}, f"<tool arguments that cannot be written as JSON: {type(value).__name__}>"


def _is_json_object(value: dict[str, Any]) -> bool:
    """Whether decoded arguments are JSON a message may hold: checked without recursion first
    (nesting, finite numbers, string keys), then for lone surrogates."""
    try:
        check_json(value, max_depth=MAX_TOOL_INPUT_DEPTH)
    except ValueError:
        return False
    return _is_strict(value)


def parse_partial_json(text: str) -> dict[str, Any] | None:
    """Best-effort parse of a JSON object that is still being streamed.

    Closes an open string and open brackets (dropping a dangling ``,`` or ``:``) and parses the
    result; ``None`` when even that fails. Used only for intermediate stream chunks, so a wrong
    guess is corrected by the final chunk.
    """
    if not text:
        return {}
    try:
        value = loads_strict(text)
        return value if isinstance(value, dict) else None
    except ValueError:
        pass
    closers: list[str] = []
    in_string = False
    escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            closers.append("}" if char == "{" else "]")
        elif char in "}]" and closers:
            closers.pop()
    candidate = text
    if in_string:
        if escaped:
            candidate = candidate[:-1]
        candidate += '"'
    candidate = candidate.rstrip()
    while candidate and candidate[-1] in ",:":
        candidate = candidate[:-1].rstrip()
    try:
        value = loads_strict(candidate + "".join(reversed(closers)))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def structured_tool(structured_model: StructuredModel) -> dict[str, Any]:
    """An OpenAI-format function tool whose parameters are the structured model's schema."""
    schema = structured_model_schema(structured_model)
    description = schema.get("description") or (
        "Return the final answer as structured data matching the parameters."
    )
    return {
        "type": "function",
        "function": {
            "name": STRUCTURED_TOOL_NAME,
            "description": description,
            "parameters": schema,
        },
    }


def validated_metadata(
    structured_model: StructuredModel, data: Any, provider: str
) -> dict[str, Any]:
    """Validate structured output *data*; the result goes into ``ChatResponse.metadata``.

    :raises ModelResponseError: naming each invalid field and showing what the model returned.
    """
    try:
        return validate_structured_output(structured_model, data)
    except StructuredOutputError as exc:
        shown = json.dumps(data, ensure_ascii=False, default=str)
        if len(shown) > 500:
            shown = shown[:500] + "..."
        raise ModelResponseError(
            f"{provider}: the structured output does not match the requested model "
            f"({exc}); the model returned {shown}"
        ) from None


def check_formatted_messages(
    messages: Any, *, non_empty: bool = False, typed_items: bool = False
) -> None:
    """Check that *messages* is what a formatter produces: a list of dicts with a ``role``
    (with *typed_items*, also items with a ``type`` instead, as the Responses API's
    ``function_call`` and ``function_call_output`` input items).

    :raises TypeError: when *messages* is not a list.
    :raises ValueError: when an item is not a dict with a ``role`` key (or, with *non_empty*,
        the list is empty), naming the position and saying to format Msg objects first.
    """
    if not isinstance(messages, list):
        raise TypeError(
            f"messages must be a list of dicts (from a formatter), not {type(messages).__name__}"
        )
    if non_empty and not messages:
        raise ValueError("messages must be a non-empty list of dicts (from a formatter)")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not (
            "role" in message or (typed_items and "type" in message)
        ):
            keys = "a 'role' or 'type' key" if typed_items else "a 'role' key"
            raise ValueError(
                f"messages[{index}] must be a dict with {keys}; format Msg objects "
                "with a formatter first"
            )


def structured_from_blocks(
    blocks: Sequence[Any], structured_model: StructuredModel, provider: str
) -> dict[str, Any]:
    """The validated structured output of a response requested with a forced call of
    :data:`STRUCTURED_TOOL_NAME`: that call's input, or — for servers that answer with JSON
    text instead — the text parsed as JSON.

    :raises ModelResponseError: when the data does not match *structured_model*.
    """
    for block in blocks:
        if isinstance(block, ToolUseBlock) and block.name == STRUCTURED_TOOL_NAME:
            data: Any = block.input if block.raw_input is None else block.raw_input
            return validated_metadata(structured_model, data, provider)
    text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    parsed, raw = parse_tool_input(text)
    return validated_metadata(structured_model, parsed if raw is None and text else text, provider)
