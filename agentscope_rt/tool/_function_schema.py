"""JSON schemas for tool functions, built once from a signature and its docstring.

The schema is OpenAI's function format, ``{"type": "function", "function": {"name",
"description", "parameters"}}``, and is built so that both OpenAI and Anthropic accept it:

* ``parameters`` is always an ``object`` schema without ``title`` noise;
* nested models (pydantic, attrs, enums) are inlined where they are used, so no ``$ref`` is
  left; only a *recursive* model keeps a top-level ``$defs`` section with
  ``#/$defs/<Name>`` references, which both providers document as supported;
* parameters that are preset (``preset_kwargs`` or ``functools.partial`` arguments) are left
  out before the schema is built, so their types need not be expressible in JSON at all.

Descriptions come from the docstring (Google, NumPy or reST style, parsed by
``docstring-parser``), types from the annotations (through pydantic, with attrs classes
mirrored as dataclasses by :mod:`agentscope_rt._schema`).
"""

from __future__ import annotations

import copy
import inspect
import math
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import docstring_parser
import jsonschema
import pydantic

from .._schema import pydantic_compatible_type
from ..exception import ToolRegistrationError

__all__ = ["arguments_validator", "build_function_schema", "normalize_parameters_schema"]

_SKIPPED_NAMES = frozenset({"self", "cls"})


def _signature(func: Callable[..., Any]) -> inspect.Signature:
    try:
        return inspect.signature(func, eval_str=True)
    except NameError:
        # Annotations naming types that are not importable at runtime: keep them as strings;
        # pydantic then reports the parameter it cannot handle.
        return inspect.signature(func)


def _param_docs(doc: docstring_parser.Docstring) -> dict[str, str]:
    result: dict[str, str] = {}
    for param in doc.params:
        if param.description:
            result[param.arg_name.lstrip("*")] = param.description
    return result


def describe(
    func: Callable[..., Any], include_long_description: bool
) -> tuple[str, dict[str, str]]:
    """The function description and the per-parameter descriptions from *func*'s docstring."""
    doc = docstring_parser.parse(inspect.getdoc(func) or "")
    parts = [doc.short_description] if doc.short_description else []
    if include_long_description and doc.long_description:
        parts.append(doc.long_description)
    return "\n".join(parts), _param_docs(doc)


def build_function_schema(
    func: Callable[..., Any],
    *,
    name: str,
    skip: Iterable[str] = (),
    include_long_description: bool = True,
    include_var_positional: bool = False,
    include_var_keyword: bool = False,
) -> dict[str, Any]:
    """The OpenAI function schema of *func*, leaving out the parameters named in *skip*.

    :param name: the function name to put in the schema.
    :param skip: parameters that are preset and must not be shown to the model.
    :raises ToolRegistrationError: if a parameter's type cannot be expressed as JSON schema
        (the message names the parameter and suggests presetting it or passing
        ``json_schema``).
    """
    description, param_docs = describe(func, include_long_description)
    skipped = set(skip) | _SKIPPED_NAMES
    fields: dict[str, Any] = {}
    for pname, param in _signature(func).parameters.items():
        if pname in skipped:
            continue
        annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            if not include_var_keyword:
                continue
            annotation = dict[str, annotation]  # type: ignore[valid-type]
            default: Any = {}
        elif param.kind is inspect.Parameter.VAR_POSITIONAL:
            if not include_var_positional:
                continue
            annotation = list[annotation]  # type: ignore[valid-type]
            default = []
        else:
            default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (
            pydantic_compatible_type(annotation),
            pydantic.Field(default=default, description=param_docs.get(pname)),
        )

    try:
        model = pydantic.create_model(
            "_ToolParameters",
            __config__=pydantic.ConfigDict(arbitrary_types_allowed=True),
            **fields,
        )
        with warnings.catch_warnings():
            # Defaults that are not JSON (e.g. an object) are simply left out of the schema.
            warnings.simplefilter("ignore", pydantic.json_schema.PydanticJsonSchemaWarning)
            parameters = model.model_json_schema()
    except (pydantic.PydanticUserError, pydantic.errors.PydanticSchemaGenerationError) as exc:
        raise ToolRegistrationError(_unsupported_message(name, fields, exc)) from None

    schema: dict[str, Any] = {
        "type": "function",
        "function": {"name": name, "parameters": normalize_parameters_schema(parameters)},
    }
    if description:
        schema["function"]["description"] = description
    return schema


def _unsupported_message(name: str, fields: dict[str, Any], exc: Exception) -> str:
    culprits = []
    for pname, (annotation, _) in fields.items():
        try:
            pydantic.TypeAdapter(annotation).json_schema()
        except Exception:
            culprits.append(f"{pname!r} ({getattr(annotation, '__name__', annotation)})")
    which = ", ".join(culprits) or "a parameter"
    return (
        f"cannot build a JSON schema for tool {name!r}: the type of {which} has no JSON "
        f"schema ({type(exc).__name__}). Preset that argument with preset_kwargs, annotate "
        "it with a JSON-compatible type, or pass json_schema= explicitly"
    )


# -- normalisation ----------------------------------------------------------------------------


# Keywords whose values are data, not schemas: a "title" key inside them is the user's.
_DATA_KEYWORDS = frozenset({"default", "const", "enum", "examples"})
# Keywords whose values map names to schemas: a key there is a name, not a keyword.
_NAMED_SCHEMAS = frozenset({"properties", "patternProperties", "$defs", "definitions"})


def _strip_titles(node: Any, names_to_schemas: bool = False) -> None:
    """Remove pydantic's auto-generated ``title`` keys, and only those: a property named
    "title" and a ``title`` key inside a default value are kept."""
    if isinstance(node, dict):
        if names_to_schemas:
            for schema in node.values():
                _strip_titles(schema)
            return
        node.pop("title", None)
        for key, value in node.items():
            if key not in _DATA_KEYWORDS:
                _strip_titles(value, names_to_schemas=key in _NAMED_SCHEMAS)
    elif isinstance(node, list):
        for item in node:
            _strip_titles(item)


def _recursive_defs(defs: dict[str, Any]) -> set[str]:
    """Names of definitions that (directly or indirectly) refer to themselves."""

    def refs(node: Any) -> set[str]:
        found: set[str] = set()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                found.add(ref[len("#/$defs/") :])
            for value in node.values():
                found |= refs(value)
        elif isinstance(node, list):
            for item in node:
                found |= refs(item)
        return found

    graph = {name: refs(body) for name, body in defs.items()}
    recursive: set[str] = set()
    for start in graph:
        stack, seen = list(graph[start]), set()
        while stack:
            current = stack.pop()
            if current == start:
                recursive.add(start)
                break
            if current in seen or current not in graph:
                continue
            seen.add(current)
            stack.extend(graph[current])
    return recursive


def _inline(node: Any, defs: dict[str, Any], keep: set[str]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = ref[len("#/$defs/") :]
            if target not in keep and target in defs:
                siblings = {k: v for k, v in node.items() if k != "$ref"}
                inlined = _inline(copy.deepcopy(defs[target]), defs, keep)
                # Sibling keys (description, default) describe this use; they win.
                return {**inlined, **{k: _inline(v, defs, keep) for k, v in siblings.items()}}
        result = {key: _inline(value, defs, keep) for key, value in node.items()}
        all_of = result.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            # pydantic wraps a described reference as allOf[ref]; one branch needs no wrapper.
            del result["allOf"]
            result = {**all_of[0], **result}
        return result
    if isinstance(node, list):
        return [_inline(item, defs, keep) for item in node]
    return node


def normalize_parameters_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    """Make a parameters schema provider-friendly: no titles, ``$ref`` inlined unless recursive.

    The input is not modified. An empty ``required`` list is dropped.
    """
    result = copy.deepcopy(parameters)
    _strip_titles(result)
    defs = result.pop("$defs", None) or {}
    keep = _recursive_defs(defs)
    result = _inline(result, defs, keep)
    if keep:
        result["$defs"] = {name: _inline(defs[name], defs, keep) for name in sorted(keep)}
    result.setdefault("type", "object")
    result.setdefault("properties", {})
    if not result.get("required"):
        result.pop("required", None)
    return result


# -- validating arguments -------------------------------------------------------------------


def _is_finite_number(checker: Any, instance: Any) -> bool:
    cls = instance.__class__
    if cls is int:
        return True
    if cls is float:
        return math.isfinite(instance)
    # Subclasses and other numbers as JSON Schema sees them (bool is never a number).
    return (
        isinstance(instance, int | float)
        and not isinstance(instance, bool)
        and math.isfinite(instance)
    )


# One extended class per jsonschema validator class (per draft), made on first use.
_finite_validator_classes: dict[type, type] = {}


def arguments_validator(parameters: dict[str, Any]) -> jsonschema.protocols.Validator:
    """A jsonschema validator of tool arguments against *parameters* (its draft chosen by
    ``$schema``, the latest by default) in which a ``number`` is finite.

    JSON has no NaN or Infinity, but Python's ``json`` module reads ``NaN``, ``Infinity`` and
    ``-Infinity`` into floats, and JSON Schema's ``number`` type accepts any float: a model
    writing ``{"timeout": NaN}`` would pass a plain validator. Here such a value is "not of
    type 'number'" (and no bound such as ``minimum`` lets it through).

    :raises jsonschema.SchemaError: when *parameters* is not a valid schema for its draft.
    """
    base = jsonschema.validators.validator_for(parameters)
    base.check_schema(parameters)
    cls = _finite_validator_classes.get(base)
    if cls is None:
        cls = jsonschema.validators.extend(
            base, type_checker=base.TYPE_CHECKER.redefine("number", _is_finite_number)
        )
        _finite_validator_classes[base] = cls
    validator: jsonschema.protocols.Validator = cls(parameters)
    return validator
