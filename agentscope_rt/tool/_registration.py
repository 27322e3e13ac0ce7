"""Turning a function into a :class:`RegisteredToolFunction`: its name, JSON schema, the
argument names a model may send, and the validator; and merging an extended model into it.

What :meth:`Toolkit.register_tool_function` and :meth:`Toolkit.set_extended_model` check
and build lives here; the toolkit keeps the tables (tools, groups) and the naming rules.
"""

from __future__ import annotations

import functools
import inspect
import types
import weakref
from collections.abc import Callable
from typing import Any, Literal, Protocol

import attrs
import jsonschema

from .._schema import StructuredModel, structured_model_schema
from ..exception import ToolRegistrationError
from ._function_schema import (
    arguments_validator,
    build_function_schema,
    normalize_parameters_schema,
)
from ._quick_check import QuickCheck, compile_quick_check
from ._types import PostprocessFunc, RegisteredToolFunction, ToolKind, tool_kind

__all__ = ["MCPClientLike", "NamesakeStrategy", "extend_schema", "registered_tool"]

NamesakeStrategy = Literal["override", "skip", "raise", "rename"]


class MCPClientLike(Protocol):
    """What :meth:`Toolkit.register_mcp_client` needs from an MCP client."""

    name: str

    async def list_tools(self) -> list[Any]:
        """The server's tools (``mcp.types.Tool``)."""

    async def get_callable_function(
        self,
        func_name: str,
        wrap_tool_result: bool = True,
        execution_timeout: float | None = None,
    ) -> Any:
        """A callable with ``name``, ``description``, ``json_schema`` for *func_name*.

        The toolkit passes ``execution_timeout=`` only when one is given to
        :meth:`Toolkit.register_mcp_client`, so clients without that parameter still work.
        """


def registered_tool(
    tool_func: Callable[..., Any],
    owner: object,
    *,
    group_name: str,
    preset_kwargs: dict[str, Any] | None,
    func_name: str | None,
    func_description: str | None,
    json_schema: dict[str, Any] | None,
    include_long_description: bool,
    include_var_positional: bool,
    include_var_keyword: bool,
    postprocess_func: PostprocessFunc | None,
    async_execution: bool,
    timeout: float | None,
    inline: bool = False,
) -> RegisteredToolFunction:
    """*tool_func* as a tool (see :meth:`Toolkit.register_tool_function` for the arguments);
    a bound method of *owner* (the toolkit) is one of its own meta tools, called inline.

    :raises ToolRegistrationError: for an invalid *json_schema*, a parameters schema that is
        not valid JSON schema, or a parameter type with no JSON schema.
    """
    if json_schema is not None:
        _check_function_schema(json_schema)
    presets = dict(preset_kwargs or {})
    func: Any = tool_func
    mcp_name: str | None = None
    source: Literal["function", "mcp_server"] = "function"
    if _is_mcp_function(tool_func):
        input_name = str(tool_func.name)  # type: ignore[attr-defined]
        json_schema = json_schema or tool_func.json_schema  # type: ignore[attr-defined]
        mcp_name = getattr(tool_func, "mcp_name", None)
        source = "mcp_server"
    elif isinstance(tool_func, functools.partial):
        func = tool_func.func
        bound: dict[str, Any] = dict(tool_func.keywords)
        if tool_func.args:
            names = list(inspect.signature(func).parameters)
            bound.update(zip(names, tool_func.args, strict=False))
        presets = {**bound, **presets}
        input_name = _function_name(func)
    else:
        input_name = _function_name(func)

    name = func_name or input_name
    if json_schema is not None:
        schema = _schema_from_given(json_schema, name, presets)
        derived = _derive_checks(schema["function"]["parameters"], name, None, tool_kind(func))
    else:
        derived = derived_from_function(
            func,
            name=name,
            presets=presets,
            include_long_description=include_long_description,
            include_var_positional=include_var_positional,
            include_var_keyword=include_var_keyword,
        )
        schema = derived.schema(name, func_description)
    if func_description and json_schema is not None:
        schema["function"]["description"] = func_description

    kind = derived.kind
    if kind is ToolKind.SYNC and (inline or getattr(func, "__self__", None) is owner):
        kind = ToolKind.INLINE  # the toolkit's own meta tool: quick, touches toolkit state
    return RegisteredToolFunction(
        name=name,
        group=group_name,
        source=source,
        original_func=func,
        json_schema=schema,
        kind=kind,
        validator=derived.validator,
        quick_check=derived.quick_check,
        preset_kwargs=presets,
        accepted_names=derived.accepted,
        original_name=input_name if func_name else None,
        mcp_name=mcp_name,
        postprocess_func=postprocess_func,
        async_execution=async_execution,
        timeout=timeout,
    )


@attrs.frozen
class DerivedTool:
    """What registering a function derives from the function alone, shared by every toolkit
    that registers it with the same options.

    Immutable by contract: ``parameters`` is a plain dict (JSON-serialisable, as providers
    need) that nothing in the package modifies; :meth:`Toolkit.get_json_schemas` documents
    that callers must not either.
    """

    parameters: dict[str, Any]
    description: str | None
    validator: jsonschema.protocols.Validator
    quick_check: QuickCheck | None
    accepted: frozenset[str] | None
    kind: ToolKind
    _schemas: dict[str, dict[str, Any]] = attrs.field(factory=dict, eq=False, alias="_schemas")

    def schema(self, name: str, description: str | None) -> dict[str, Any]:
        """The function schema under *name*, with *description* (``None``: the docstring's);
        one shared dict per name when the description is the docstring's."""
        if not description:
            shared = self._schemas.get(name)
            if shared is not None:
                return shared
        function: dict[str, Any] = {"name": name, "parameters": self.parameters}
        if description or self.description:
            function["description"] = description or self.description
        schema = {"type": "function", "function": function}
        if not description and len(self._schemas) < 64:
            self._schemas[name] = schema
        return schema


_Options = tuple[frozenset[str], bool, bool, bool, bool]
# Per function object (weak: a function that goes away takes its entries with it), per set
# of registration options: the fingerprint the entry was derived from, and the entry.
_derived_cache: weakref.WeakKeyDictionary[
    types.FunctionType, dict[_Options, tuple[tuple[Any, ...], DerivedTool]]
] = weakref.WeakKeyDictionary()


def derived_from_function(
    func: Callable[..., Any],
    *,
    name: str,
    presets: dict[str, Any],
    include_long_description: bool,
    include_var_positional: bool,
    include_var_keyword: bool,
) -> DerivedTool:
    """The schema parameters, description, validator, quick check, accepted argument names
    and kind of *func*, computed once per function and options and shared afterwards.

    Plain functions and methods (bound to any object) are cached, keyed by the function
    object itself and checked against a fingerprint of everything the schema is read from
    (code, docstring, annotations, defaults, ``__wrapped__``, ``__signature__``): a function
    whose docstring or annotations are changed after a registration is derived again.
    Callable objects and builtins are derived afresh every time.

    :raises ToolRegistrationError: as :func:`registered_tool`.
    """
    target, bound = _cache_target(func)
    if target is None:
        return _derive(
            func,
            name,
            presets,
            include_long_description,
            include_var_positional,
            include_var_keyword,
        )
    options: _Options = (
        frozenset(presets),
        include_long_description,
        include_var_positional,
        include_var_keyword,
        bound,
    )
    fingerprint = _fingerprint(target)
    per_function = _derived_cache.get(target)
    if per_function is not None:
        entry = per_function.get(options)
        if entry is not None and entry[0] == fingerprint:
            return entry[1]
    derived = _derive(
        func, name, presets, include_long_description, include_var_positional, include_var_keyword
    )
    if per_function is None:
        per_function = _derived_cache.setdefault(target, {})
    per_function[options] = (fingerprint, derived)
    return derived


def _cache_target(func: Any) -> tuple[types.FunctionType | None, bool]:
    """The function object *func*'s schema is read from, and whether *func* is bound to it;
    ``(None, False)`` for what is not cached (callable objects, builtins)."""
    if type(func) is types.FunctionType:
        return func, False
    if type(func) is types.MethodType and type(func.__func__) is types.FunctionType:
        return func.__func__, True
    return None, False


def _fingerprint(func: Any, depth: int = 0) -> tuple[Any, ...]:
    """Everything of *func* its schema depends on (compared with ``==``; a default value
    mutated in place is not noticed)."""
    attributes = getattr(func, "__dict__", None) or {}
    wrapped = attributes.get("__wrapped__")
    return (
        getattr(func, "__code__", None),
        getattr(func, "__doc__", None),
        getattr(func, "__defaults__", None),
        getattr(func, "__kwdefaults__", None),
        tuple((getattr(func, "__annotations__", None) or {}).items()),
        attributes.get("__signature__"),
        _fingerprint(wrapped, depth + 1) if wrapped is not None and depth < 8 else wrapped,
    )


def _derive(
    func: Callable[..., Any],
    name: str,
    presets: dict[str, Any],
    include_long_description: bool,
    include_var_positional: bool,
    include_var_keyword: bool,
) -> DerivedTool:
    schema = build_function_schema(
        func,
        name=name,
        skip=presets,
        include_long_description=include_long_description,
        include_var_positional=include_var_positional,
        include_var_keyword=include_var_keyword,
    )
    return _derive_checks(
        schema["function"]["parameters"],
        name,
        schema["function"].get("description"),
        tool_kind(func),
        _accepted_names(func, presets, include_var_keyword),
    )


def _derive_checks(
    parameters: dict[str, Any],
    name: str,
    description: str | None,
    kind: ToolKind,
    accepted: frozenset[str] | None = None,
) -> DerivedTool:
    try:
        # A validator in which a number is finite: Python's json reads NaN and Infinity.
        validator = arguments_validator(parameters)
    except jsonschema.SchemaError as exc:
        raise ToolRegistrationError(
            f"the parameters schema of tool {name!r} is not a valid JSON schema: {exc.message}"
        ) from None
    return DerivedTool(
        parameters=parameters,
        description=description,
        validator=validator,
        quick_check=compile_quick_check(parameters),
        accepted=accepted,
        kind=kind,
    )


_EXTENDED_CACHE_SIZE = 64
"""Extended schemas kept for reuse: an application asks for a handful of structured models."""

# (tool schema, accepted names, model) -> (the tool schema, its accepted names, the merged
# schema, the names the extended tool accepts). Keyed by identity: the schemas of one function
# are shared by every toolkit it is registered in (see ``derived_from_function``), so a
# million agents asking for the same structured model share one merged schema, built once.
_extended: dict[tuple[int, int, object], tuple[Any, Any, dict[str, Any], Any]] = {}


def extend_schema(
    tool: RegisteredToolFunction, func_name: str, model: StructuredModel | None
) -> None:
    """Merge *model*'s fields into the schema of *tool*, registered as *func_name*
    (``None`` removes the extension).

    The merged schema is shared by every tool with the same schema extended by the same
    model class: it is read, never changed.

    :raises ValueError: if a field or a ``$defs`` entry clashes with the tool's own.
    :raises TypeError: if *model* is not a structured model.
    """
    if model is None:
        tool.extended_model = None
        tool.extended_json_schema = tool.json_schema
        tool.accepted_names = tool.base_accepted_names
        return
    base, base_names = tool.json_schema, tool.base_accepted_names
    key: tuple[int, int, object] | None = None
    if isinstance(model, type):  # a class (a JSON schema dict is not cached)
        key = (id(base), id(base_names), model)
        hit = _extended.get(key)
        if hit is not None and hit[0] is base and hit[1] is base_names:
            tool.extended_model = model
            tool.extended_json_schema, tool.accepted_names = hit[2], hit[3]
            return
    merged, accepted = _merged_schema(tool, func_name, model)
    tool.extended_model = model
    tool.extended_json_schema, tool.accepted_names = merged, accepted
    if key is not None:
        if len(_extended) >= _EXTENDED_CACHE_SIZE:
            del _extended[next(iter(_extended))]
        _extended[key] = (base, base_names, merged, accepted)


def _merged_schema(
    tool: RegisteredToolFunction, func_name: str, model: StructuredModel
) -> tuple[dict[str, Any], frozenset[str] | None]:
    extension = normalize_parameters_schema(structured_model_schema(model))
    merged = {**tool.json_schema, "function": dict(tool.json_schema["function"])}
    params = dict(merged["function"]["parameters"])
    properties = dict(params.get("properties", {}))
    required = list(params.get("required", []))
    for key, value in extension.get("properties", {}).items():
        if key in properties:
            raise ValueError(
                f"The field `{key}` already exists in the original function schema of "
                f"`{func_name}`. Try to use a different name."
            )
        properties[key] = value
    required += [key for key in extension.get("required", []) if key not in required]
    params["properties"] = properties
    if required:
        params["required"] = required
    if extension.get("$defs"):
        defs = dict(params.get("$defs", {}))
        for key, value in extension["$defs"].items():
            if key in defs and defs[key] != value:
                raise ValueError(
                    f"The $defs key `{key}` conflicts with an existing definition in the "
                    f"function schema of `{func_name}`."
                )
            defs[key] = value
        params["$defs"] = defs
    merged["function"]["parameters"] = params
    if _admits_any_key(extension, tool.original_func):
        # A model with extra fields allowed (pydantic's extra="allow") says so in its
        # schema: then any key is the structured model's to judge.
        return merged, None
    if tool.base_accepted_names is not None:
        return merged, frozenset(tool.base_accepted_names | set(extension.get("properties", {})))
    return merged, None


def _function_name(func: Any) -> str:
    return str(getattr(func, "__name__", None) or type(func).__name__)


def _is_mcp_function(func: Any) -> bool:
    return (
        not inspect.isroutine(func)
        and not isinstance(func, functools.partial)
        and isinstance(getattr(func, "json_schema", None), dict)
        and isinstance(getattr(func, "name", None), str)
    )


def _check_function_schema(json_schema: Any) -> None:
    if not (
        isinstance(json_schema, dict)
        and json_schema.get("type") == "function"
        and isinstance(json_schema.get("function"), dict)
    ):
        raise ToolRegistrationError(
            "json_schema must be an OpenAI function schema: {'type': 'function', 'function': "
            f"{{'name': ..., 'description': ..., 'parameters': {{...}}}}}}, got {json_schema!r}"
        )
    parameters = json_schema["function"].get("parameters")
    if parameters is not None and (
        not isinstance(parameters, dict)
        or parameters.get("type", "object") != "object"
        or not isinstance(parameters.get("properties", {}), dict)
        or not isinstance(parameters.get("required", []), list)
    ):
        raise ToolRegistrationError(
            "json_schema['function']['parameters'] must be an object schema with a "
            f"'properties' dict, got {parameters!r}"
        )


def _schema_from_given(
    json_schema: dict[str, Any], name: str, presets: dict[str, Any]
) -> dict[str, Any]:
    function = dict(json_schema["function"])
    params = dict(function.get("parameters") or {"type": "object", "properties": {}})
    params.setdefault("type", "object")
    params["properties"] = {
        k: v for k, v in (params.get("properties") or {}).items() if k not in presets
    }
    required = [r for r in params.get("required", []) if r not in presets]
    if required:
        params["required"] = required
    else:
        params.pop("required", None)
    function["name"] = name
    function["parameters"] = params
    return {**json_schema, "function": function}


def _accepted_names(
    func: Any, presets: dict[str, Any], include_var_keyword: bool
) -> frozenset[str] | None:
    """The argument names a model may send to *func*: the parameters its schema shows.

    A ``**kwargs`` parameter left out of the schema (the default) accepts nothing from the
    model: what it would collect is not in the schema, and the built-in tools hand it to
    libraries (mem0, vector stores), so a model could set what the application fixed (a
    ``user_id``, a search filter). Shown in the schema (*include_var_keyword*), only its own
    name is accepted. ``None`` when the signature cannot be read (then the schema decides).
    """
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return None
    return frozenset(
        p.name
        for p in parameters
        if p.kind is not inspect.Parameter.VAR_POSITIONAL
        and (p.kind is not inspect.Parameter.VAR_KEYWORD or include_var_keyword)
        and p.name not in presets
    )


def _admits_any_key(extension: dict[str, Any], func: Any) -> bool:
    """Whether an extended model's schema explicitly admits keys it does not name (a bare
    schema without ``additionalProperties`` does not count) and *func* takes ``**kwargs``."""
    additional = extension.get("additionalProperties", False)
    if additional is False or additional is None:
        return False
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
