"""A fast, conservative pre-check of tool arguments, compiled once per tool at registration.

``jsonschema``'s validators interpret the schema on every call (tens of microseconds for a
one-argument tool). Tool schemas are nearly always made of a few keywords — ``type``,
``properties``, ``required``, ``additionalProperties``, ``items``, ``enum``, ``anyOf`` and
local ``$ref`` — so :func:`compile_quick_check` turns such a schema into nested closures once.

The check is *conservative*: when it returns ``True`` the arguments are valid under the
JSON Schema 2020-12 rules ``jsonschema`` applies; when it returns ``False`` they may still be
valid (e.g. ``3.0`` for an ``integer``, a ``dict`` subclass, an ``enum`` of numbers), so the
caller then asks ``jsonschema`` for the verdict and its error messages. A ``number`` is
accepted only when finite: NaN and the infinities are not JSON, though Python's ``json`` reads
them (``_function_schema.arguments_validator`` refuses them). A schema using any keyword
outside that subset (``pattern``, ``minimum``, ``$schema``, ...) gets no quick check at all
(``None``) and is always validated by ``jsonschema``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["QuickCheck", "compile_quick_check"]

QuickCheck = Callable[[Any], bool]
"""``check(instance) -> bool``: ``True`` only for instances the schema accepts."""

# Keywords with no effect on validity (jsonschema checks ``format`` only with a format
# checker, which tool validation does not use).
_ANNOTATIONS = frozenset(
    (
        "title",
        "description",
        "default",
        "examples",
        "format",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
    )
)
_HANDLED = frozenset(
    ("type", "properties", "required", "additionalProperties", "items", "enum", "anyOf", "$ref")
)


# The types an exact class test decides (``number`` is two classes, so it is not here).
_EXACT_CLASSES: dict[str, type] = {
    "string": str,
    "integer": int,
    "boolean": bool,
    "null": type(None),
    "array": list,
    "object": dict,
}


def _exact_class(schema: Any) -> type | None:
    """The class of a schema that only names one such type (and annotations), else None."""
    if not isinstance(schema, dict) or not isinstance(schema.get("type"), str):
        return None
    for key in schema:
        if key != "type" and key not in _ANNOTATIONS:
            return None
    return _EXACT_CLASSES.get(schema["type"])


class _Unsupported(Exception):
    """The schema uses something the quick check does not model."""


def _is_finite_number(x: Any) -> bool:
    # x - x is 0.0 for every finite float and NaN for NaN and both infinities, which are not
    # JSON (Python's json reads them all the same): never vouched for here.
    return x.__class__ is int or (x.__class__ is float and x - x == 0.0)


def _type_check(name: str) -> QuickCheck:
    # Exact classes only: subclasses (and integral floats for "integer") are left to jsonschema.
    if name == "number":
        return _is_finite_number
    cls = _EXACT_CLASSES.get(name)
    if cls is None:
        raise _Unsupported(name)
    return lambda x: x.__class__ is cls


def _always(_: Any) -> bool:
    return True


def _never(_: Any) -> bool:
    return False


class _Compiler:
    def __init__(self, root: dict[str, Any]) -> None:
        defs = root.get("$defs", {})
        if not isinstance(defs, dict):
            raise _Unsupported("$defs")
        self.defs: dict[str, Any] = defs
        self.compiled_defs: dict[str, QuickCheck] = {}

    def ref(self, ref: Any) -> QuickCheck:
        if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
            raise _Unsupported("$ref")
        name = ref[len("#/$defs/") :]
        if "/" in name or "~" in name or name not in self.defs:
            raise _Unsupported("$ref")
        compiled = self.compiled_defs
        if name not in compiled:
            # Resolved lazily, so recursive definitions compile.
            compiled[name] = _never
            compiled[name] = self.compile(self.defs[name])

        def check_ref(x: Any) -> bool:
            return compiled[name](x)

        return check_ref

    def compile(self, schema: Any) -> QuickCheck:
        if schema is True:
            return _always
        if schema is False:
            return _never
        if not isinstance(schema, dict):
            raise _Unsupported("schema")
        for key in schema:
            if key not in _HANDLED and key not in _ANNOTATIONS and key != "$defs":
                raise _Unsupported(key)
        checks: list[QuickCheck] = []
        has_object_keywords = (
            "properties" in schema or "required" in schema or "additionalProperties" in schema
        )
        if has_object_keywords and schema.get("type") == "object":
            # A tool's parameters: one function checks both the type and the members.
            checks.append(self.object(schema, dict_required=True))
            has_object_keywords = False
        elif "type" in schema:
            checks.append(self.types(schema["type"]))
        if "enum" in schema:
            checks.append(self.enum(schema["enum"]))
        if has_object_keywords:
            checks.append(self.object(schema))
        if "items" in schema:
            checks.append(self.items(schema["items"]))
        if "anyOf" in schema:
            checks.append(self.any_of(schema["anyOf"]))
        if "$ref" in schema:
            checks.append(self.ref(schema["$ref"]))
        if not checks:
            return _always
        if len(checks) == 1:
            return checks[0]
        if len(checks) == 2:
            first, second = checks
            return lambda x: first(x) and second(x)
        all_checks = tuple(checks)
        return lambda x: all(check(x) for check in all_checks)

    def types(self, spec: Any) -> QuickCheck:
        if isinstance(spec, str):
            return _type_check(spec)
        if isinstance(spec, list) and spec and all(isinstance(t, str) for t in spec):
            options = tuple(_type_check(t) for t in spec)
            return lambda x: any(option(x) for option in options)
        raise _Unsupported("type")

    def enum(self, values: Any) -> QuickCheck:
        if not isinstance(values, list):
            raise _Unsupported("enum")
        # Only string members are matched quickly (jsonschema's equality sets bools apart
        # from numbers); anything else goes to jsonschema.
        strings = frozenset(v for v in values if isinstance(v, str))
        return lambda x: x.__class__ is str and x in strings

    def object(self, schema: dict[str, Any], dict_required: bool = False) -> QuickCheck:
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        additional = schema.get("additionalProperties", True)
        if not isinstance(properties, dict) or not isinstance(required, list):
            raise _Unsupported("properties")
        if not all(isinstance(r, str) for r in required):
            raise _Unsupported("required")
        # Members whose schema is one exact class are tested inline, without a call.
        property_classes: dict[str, type] = {}
        property_checks: dict[str, QuickCheck] = {}
        for name, sub in properties.items():
            cls = _exact_class(sub)
            if cls is not None:
                property_classes[name] = cls
            else:
                property_checks[name] = self.compile(sub)
        required_names = tuple(required)
        extra: QuickCheck | None = None if additional is True else self.compile(additional)

        def check_object(x: Any) -> bool:
            if x.__class__ is not dict:
                # Object keywords ignore non-objects; a dict subclass goes to jsonschema.
                return False if dict_required else not isinstance(x, dict)
            for name in required_names:
                if name not in x:
                    return False
            for key, value in x.items():
                cls = property_classes.get(key)
                if cls is not None:
                    if value.__class__ is not cls:
                        return False
                    continue
                check = property_checks.get(key)
                if check is not None:
                    if not check(value):
                        return False
                elif extra is not None and not extra(value):
                    return False
            return True

        return check_object

    def items(self, items: Any) -> QuickCheck:
        if not isinstance(items, dict | bool):
            raise _Unsupported("items")
        item_check = self.compile(items)

        def check_items(x: Any) -> bool:
            if x.__class__ is not list:
                return not isinstance(x, list)
            return all(item_check(item) for item in x)

        return check_items

    def any_of(self, options: Any) -> QuickCheck:
        if not isinstance(options, list) or not options:
            raise _Unsupported("anyOf")
        compiled = tuple(self.compile(option) for option in options)
        return lambda x: any(option(x) for option in compiled)


def compile_quick_check(schema: dict[str, Any]) -> QuickCheck | None:
    """A quick check for *schema* (a tool's parameters schema), or ``None`` when the schema
    uses anything beyond the subset described in the module docstring.

    The returned function never raises for any JSON-like instance and returns ``True`` only
    for instances *schema* accepts.
    """
    if not isinstance(schema, dict) or "$schema" in schema or "$id" in schema:
        return None
    try:
        compiler = _Compiler(schema)
        return compiler.compile(schema)
    except (_Unsupported, TypeError):
        return None
