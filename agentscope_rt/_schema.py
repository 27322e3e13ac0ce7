"""JSON schemas for structured models, and validation of data against them.

A *structured model* is what users pass as ``structured_model`` (to a chat model, to
``ReActAgent.reply`` or to ``Toolkit.set_extended_model``): a pydantic model class, an attrs
class, or a JSON schema dict. This module gives the three one interface:

* :func:`structured_model_schema` — the JSON schema (an ``object`` schema, inlined ``$defs``
  kept), fit for OpenAI/Anthropic tool parameters and llama.cpp's constrained generation;
* :func:`validate_structured_output` — check JSON data against the model and return the
  validated value as JSON data (a dict), raising :class:`StructuredOutputError` with a message
  a model can read and act on.

attrs classes are handled through pydantic: each is mirrored by a stdlib dataclass with the
same fields (nested attrs classes too), which pydantic understands natively.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any

import attrs
import jsonschema
import pydantic

__all__ = [
    "StructuredModel",
    "StructuredOutputError",
    "is_structured_model",
    "pydantic_compatible_type",
    "structured_model_schema",
    "type_adapter",
    "validate_structured_output",
]

StructuredModel = type[pydantic.BaseModel] | type | dict[str, Any]


class StructuredOutputError(ValueError):
    """Data does not match a structured model; the message says which field and why."""


def is_structured_model(value: Any) -> bool:
    """Whether *value* is a pydantic model class, an attrs class or a JSON schema dict."""
    if isinstance(value, dict):
        return True
    return isinstance(value, type) and (issubclass(value, pydantic.BaseModel) or attrs.has(value))


def pydantic_compatible_type(tp: Any) -> Any:
    """*tp* with the attrs classes inside it (also in unions, generics and ``Annotated``)
    replaced by equivalent stdlib dataclasses, which pydantic validates and describes; *tp*
    itself when it holds none."""
    if isinstance(tp, type) and attrs.has(tp):
        return _attrs_to_dataclass(tp)
    origin = typing.get_origin(tp)
    if origin is None:
        return tp
    args = typing.get_args(tp)
    if not args:
        return tp
    if origin is typing.Annotated:
        return typing.Annotated[(pydantic_compatible_type(args[0]), *args[1:])]
    if origin is typing.Literal:
        return tp
    mirrored = tuple(pydantic_compatible_type(a) for a in args)
    if mirrored == args:
        return tp
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return functools.reduce(lambda a, b: a | b, mirrored)
    try:
        return origin[mirrored]
    except TypeError:
        return typing.get_origin(tp)[mirrored]


@functools.cache
def _attrs_to_dataclass(cls: type) -> type:
    attrs.resolve_types(cls)
    specs: list[Any] = []
    for field in attrs.fields(cls):
        spec: dict[str, Any] = {}
        if field.default is not attrs.NOTHING:
            if isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
                spec["default_factory"] = field.default.factory
            else:
                spec["default"] = field.default
        specs.append(
            (field.name, pydantic_compatible_type(field.type or Any), dataclasses.field(**spec))
        )
    dc = dataclasses.make_dataclass(cls.__name__, specs)
    dc.__doc__ = cls.__doc__
    return dc


@functools.cache
def type_adapter(tp: Any) -> pydantic.TypeAdapter[Any]:
    """A cached pydantic TypeAdapter for *tp* (attrs classes inside it are supported)."""
    return pydantic.TypeAdapter(pydantic_compatible_type(tp))


def structured_model_schema(model: StructuredModel) -> dict[str, Any]:
    """The JSON schema of *model*, always an ``object`` schema.

    :raises TypeError: if *model* is not a pydantic model class, attrs class or dict.
    """
    if isinstance(model, dict):
        if model.get("type", "object") != "object":
            raise TypeError("a JSON-schema structured model must describe an object")
        return model
    if isinstance(model, type) and issubclass(model, pydantic.BaseModel):
        return model.model_json_schema()
    if isinstance(model, type) and attrs.has(model):
        return type_adapter(model).json_schema()
    raise TypeError(
        "structured_model must be a pydantic model class, an attrs class or a JSON schema "
        f"dict, not {model!r}"
    )


def _describe_pydantic_error(exc: pydantic.ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "(root)"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def validate_structured_output(model: StructuredModel, data: Any) -> dict[str, Any]:
    """Validate *data* against *model* and return it as JSON data.

    For pydantic and attrs models, defaults are filled in and values coerced as pydantic does.

    :raises StructuredOutputError: naming each invalid field.
    """
    if isinstance(model, dict):
        validator = jsonschema.Draft202012Validator(model)
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.path))
        if errors:
            raise StructuredOutputError(
                "; ".join(
                    f"{'.'.join(str(p) for p in e.path) or '(root)'}: {e.message}" for e in errors
                )
            )
        return typing.cast(dict[str, Any], data)
    try:
        if isinstance(model, type) and issubclass(model, pydantic.BaseModel):
            return model.model_validate(data).model_dump(mode="json")
        adapter = type_adapter(typing.cast(Any, model))
        return typing.cast(
            dict[str, Any], adapter.dump_python(adapter.validate_python(data), mode="json")
        )
    except pydantic.ValidationError as exc:
        raise StructuredOutputError(_describe_pydantic_error(exc)) from None
