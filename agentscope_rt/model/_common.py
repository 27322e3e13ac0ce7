"""Small pieces shared by the providers: tool-argument parsing, structured output, API keys."""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from .._schema import (
    StructuredModel,
    StructuredOutputError,
    structured_model_schema,
    validate_structured_output,
)
from ..exception import ModelResponseError

__all__ = [
    "STRUCTURED_TOOL_NAME",
    "Secrets",
    "parse_partial_json",
    "parse_tool_input",
    "resolve_api_key",
    "structured_tool",
    "validated_metadata",
]

logger = logging.getLogger("agentscope_rt.model")

STRUCTURED_TOOL_NAME = "generate_structured_output"
"""The name of the tool through which providers return structured output."""


def parse_tool_input(text: str | None) -> tuple[dict[str, Any], str | None]:
    """Parse complete tool-argument text.

    :returns: ``(input, None)`` for a JSON object (empty text counts as ``{}``), otherwise
        ``({}, text)`` so the caller can keep the raw text in ``ToolUseBlock.raw_input``.
    """
    if text is None or not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except ValueError:
        return {}, text
    if isinstance(value, dict):
        return value, None
    return {}, text


def parse_partial_json(text: str) -> dict[str, Any] | None:
    """Best-effort parse of a JSON object that is still being streamed.

    Closes an open string and open brackets (dropping a dangling ``,`` or ``:``) and parses the
    result; ``None`` when even that fails. Used only for intermediate stream chunks, so a wrong
    guess is corrected by the final chunk.
    """
    if not text:
        return {}
    try:
        value = json.loads(text)
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
        value = json.loads(candidate + "".join(reversed(closers)))
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


def resolve_api_key(
    api_key: str | None, env_var: str, model_class: str, *, required: bool = True
) -> str | None:
    """The key given, else the environment variable's value.

    :raises ValueError: if *required* and neither is set (the message says how to fix it and
        never contains a key).
    """
    if api_key:
        return api_key
    value = os.environ.get(env_var) or None
    if value is None and required:
        raise ValueError(
            f"{model_class} needs an API key: pass api_key=... or set the {env_var} "
            "environment variable"
        )
    return value


class Secrets(tuple[str, ...]):
    """Secrets to scrub from error messages; shows as ``Secrets(***)`` in any repr."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Secrets(***)"

    __str__ = __repr__
