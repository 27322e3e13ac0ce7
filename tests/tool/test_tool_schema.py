"""Tool JSON schemas from signatures and docstrings, checked against a golden file.

Regenerate the golden file after an intended change with ``UPDATE_GOLDEN=1 pytest ...`` and
review the diff.
"""

from __future__ import annotations

import enum
import functools
import json
import os
import pathlib
from typing import Any, Literal, Union

import attrs
import jsonschema
import pydantic
import pytest

from agentscope_rt.exception import ToolRegistrationError
from agentscope_rt.tool import Toolkit, ToolResponse

GOLDEN = pathlib.Path(__file__).with_name("golden_schemas.json")


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Point(pydantic.BaseModel):
    """A point."""

    x: float
    y: float = 0.0


class Shape(pydantic.BaseModel):
    name: str = pydantic.Field(description="The shape's name")
    points: list[Point]
    color: Color = Color.RED


class TreeNode(pydantic.BaseModel):
    value: int
    children: list[TreeNode] = []


@attrs.define
class Address:
    street: str
    zip_code: str | None = None


@attrs.define
class Person:
    name: str
    address: Address
    tags: list[str] = attrs.Factory(list)


def google_style(city: str, days: int = 3, unit: Literal["c", "f"] = "c") -> ToolResponse:
    """Get the weather forecast.

    The forecast comes from a made-up service.

    Args:
        city (`str`):
            The city name.
        days (`int`, defaults to 3):
            How many days to forecast.
        unit:
            Temperature unit.

    Returns:
        `ToolResponse`: the forecast.
    """
    return ToolResponse()


def numpy_style(
    query: str, limit: int | None = None, tags: list[str] | None = None
) -> ToolResponse:
    """Search documents.

    Parameters
    ----------
    query : str
        The search query.
    limit : int, optional
        Maximum number of hits.
    tags : list of str, optional
        Only documents with these tags.
    """
    return ToolResponse()


def rest_style(
    path: str, mode: str | None = "r", flags: dict[str, bool] | None = None
) -> ToolResponse:
    """Open a file.

    :param path: Path of the file.
    :param mode: Open mode.
    :param flags: Extra flags by name.
    :returns: the file handle.
    """
    return ToolResponse()


def unions_and_enums(value: Union[int, str], color: Color, ratio: float = 0.5) -> ToolResponse:  # noqa: UP007
    """Mix types.

    Args:
        value: An int or a string.
        color: A color.
        ratio: A ratio.
    """
    return ToolResponse()


def nested_pydantic(shape: Shape, scale: float = 1.0) -> ToolResponse:
    """Draw a shape.

    Args:
        shape: The shape to draw.
        scale: Scale factor.
    """
    return ToolResponse()


def recursive_model(tree: TreeNode) -> ToolResponse:
    """Sum a tree.

    Args:
        tree: The tree.
    """
    return ToolResponse()


def nested_attrs(person: Person, notify: bool = False) -> ToolResponse:
    """Register a person.

    Args:
        person: The person.
        notify: Send a notification.
    """
    return ToolResponse()


def preset_hidden(query: str, api_key: str, client: object) -> ToolResponse:
    """Search with credentials.

    Args:
        query: The query.
        api_key: Secret key.
        client: An HTTP client.
    """
    return ToolResponse()


def var_args(name: str, *items: int, **options: str) -> ToolResponse:
    """Variadic.

    Args:
        name: A name.
        *items: Some items.
        **options: Some options.
    """
    return ToolResponse()


def no_doc(a, b: int = 1):  # type: ignore[no-untyped-def]
    return ToolResponse()


class Service:
    def lookup(self, key: str, fresh: bool = False) -> ToolResponse:
        """Look up a key.

        Args:
            key: The key.
            fresh: Bypass the cache.
        """
        return ToolResponse()


def _register(toolkit: Toolkit, case: str) -> None:
    if case == "google":
        toolkit.register_tool_function(google_style)
    elif case == "google_short_only":
        toolkit.register_tool_function(google_style, include_long_description=False)
    elif case == "numpy":
        toolkit.register_tool_function(numpy_style)
    elif case == "rest":
        toolkit.register_tool_function(rest_style)
    elif case == "unions_and_enums":
        toolkit.register_tool_function(unions_and_enums)
    elif case == "nested_pydantic":
        toolkit.register_tool_function(nested_pydantic)
    elif case == "recursive_model":
        toolkit.register_tool_function(recursive_model)
    elif case == "nested_attrs":
        toolkit.register_tool_function(nested_attrs)
    elif case == "preset_hidden":
        toolkit.register_tool_function(
            preset_hidden, preset_kwargs={"api_key": "sk-secret", "client": object()}
        )
    elif case == "partial":
        toolkit.register_tool_function(
            functools.partial(preset_hidden, "q", client=object()), preset_kwargs={"api_key": "k"}
        )
    elif case == "var_args_hidden":
        toolkit.register_tool_function(var_args)
    elif case == "var_args_included":
        toolkit.register_tool_function(
            var_args, include_var_positional=True, include_var_keyword=True
        )
    elif case == "no_doc":
        toolkit.register_tool_function(no_doc)
    elif case == "bound_method":
        toolkit.register_tool_function(Service().lookup)
    elif case == "renamed_described":
        toolkit.register_tool_function(
            google_style, func_name="forecast", func_description="Forecast."
        )
    elif case == "extended_model":
        toolkit.register_tool_function(nested_attrs)
        toolkit.set_extended_model("nested_attrs", Shape)
    else:
        raise AssertionError(case)


CASES = [
    "google",
    "google_short_only",
    "numpy",
    "rest",
    "unions_and_enums",
    "nested_pydantic",
    "recursive_model",
    "nested_attrs",
    "preset_hidden",
    "partial",
    "var_args_hidden",
    "var_args_included",
    "no_doc",
    "bound_method",
    "renamed_described",
    "extended_model",
]


def _schema(case: str) -> dict[str, Any]:
    toolkit = Toolkit()
    _register(toolkit, case)
    (schema,) = toolkit.get_json_schemas()
    return schema


def test_golden_schemas() -> None:
    actual = {case: _schema(case) for case in CASES}
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(actual, indent=2, sort_keys=True) + "\n")
    expected = json.loads(GOLDEN.read_text())
    assert sorted(expected) == sorted(CASES)
    for case in CASES:
        assert actual[case] == expected[case], case


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in _keys(v)}
    if isinstance(node, list):
        return {k for v in node for k in _keys(v)}
    return set()


@pytest.mark.parametrize("case", CASES)
def test_schema_is_what_providers_accept(case: str) -> None:
    schema = _schema(case)
    # OpenAI function format with a name the APIs accept.
    assert schema["type"] == "function"
    function = schema["function"]
    assert set(function) <= {"name", "description", "parameters"}
    assert 1 <= len(function["name"]) <= 64
    assert all(c.isalnum() or c in "_-" for c in function["name"])
    parameters = function["parameters"]
    # Both providers require an object at the top, without combinators there.
    assert parameters["type"] == "object"
    assert isinstance(parameters["properties"], dict)
    assert not {"anyOf", "oneOf", "allOf", "not"} & set(parameters)
    assert set(parameters.get("required", [])) <= set(parameters["properties"])
    # Every $ref points into the top-level $defs (the only form both document).
    defs = parameters.get("$defs", {})
    for ref in _refs(parameters):
        assert ref.startswith("#/$defs/") and ref.removeprefix("#/$defs/") in defs
    # pydantic's generated titles are noise for the model.
    assert "title" not in _keys({k: v for k, v in parameters.items() if k != "properties"})
    jsonschema.Draft202012Validator.check_schema(parameters)


def test_recursive_model_keeps_defs_and_validates_data() -> None:
    parameters = _schema("recursive_model")["function"]["parameters"]
    assert "$defs" in parameters
    validator = jsonschema.Draft202012Validator(parameters)
    assert validator.is_valid({"tree": {"value": 1, "children": [{"value": 2}]}})
    assert not validator.is_valid({"tree": {"value": 1, "children": [{"value": "x"}]}})


def test_preset_values_never_appear_in_schema() -> None:
    text = json.dumps(_schema("preset_hidden"))
    assert "sk-secret" not in text and "api_key" not in text and "client" not in text


def test_unsupported_type_names_the_parameter() -> None:
    class Opaque:
        pass

    def uses_opaque(thing: Opaque, n: int) -> ToolResponse:
        return ToolResponse()

    toolkit = Toolkit()
    with pytest.raises(ToolRegistrationError, match="'thing'"):
        toolkit.register_tool_function(uses_opaque)
    # Presetting the argument removes the need for a schema.
    toolkit.register_tool_function(uses_opaque, preset_kwargs={"thing": Opaque()})
    assert list(toolkit.get_json_schemas()[0]["function"]["parameters"]["properties"]) == ["n"]


def test_given_json_schema_is_copied_and_presets_removed() -> None:
    given = {
        "type": "function",
        "function": {
            "name": "whatever",
            "description": "Given.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "string"}, "secret": {"type": "string"}},
                "required": ["a", "secret"],
            },
        },
    }
    snapshot = json.loads(json.dumps(given))
    toolkit = Toolkit()
    toolkit.register_tool_function(
        google_style, json_schema=given, preset_kwargs={"secret": "s"}, func_name="given"
    )
    (schema,) = toolkit.get_json_schemas()
    assert schema["function"]["name"] == "given"
    assert schema["function"]["parameters"]["properties"] == {"a": {"type": "string"}}
    assert schema["function"]["parameters"]["required"] == ["a"]
    assert given == snapshot


@pytest.mark.parametrize(
    "bad",
    [
        {"function": {}},
        {"type": "function", "function": "x"},
        {"type": "function", "function": {"name": "x", "parameters": {"type": "array"}}},
        {
            "type": "function",
            "function": {"name": "x", "parameters": {"type": "object", "properties": 3}},
        },
    ],
)
def test_invalid_given_schema_is_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(ToolRegistrationError):
        Toolkit().register_tool_function(google_style, json_schema=bad)


def test_extended_model_clash_is_rejected() -> None:
    class Clash(pydantic.BaseModel):
        notify: int

    toolkit = Toolkit()
    toolkit.register_tool_function(nested_attrs)
    with pytest.raises(ValueError, match="notify"):
        toolkit.set_extended_model("nested_attrs", Clash)
    with pytest.raises(ValueError, match="not found"):
        toolkit.set_extended_model("missing", Clash)
    with pytest.raises(TypeError):
        toolkit.set_extended_model("nested_attrs", 3)  # type: ignore[arg-type]
    toolkit.set_extended_model("nested_attrs", Shape)
    toolkit.set_extended_model("nested_attrs", None)
    assert "shape" not in toolkit.get_json_schemas()[0]["function"]["parameters"]["properties"]


class _Page(pydantic.BaseModel):
    title: str
    properties: dict[str, str] = {}


def test_titles_stripped_but_data_and_field_names_kept() -> None:
    def tool(
        meta: dict[str, str] | None = None,
        page: _Page | None = None,
        properties: str = "x",
        style: dict[str, str] = {"title": "bold"},  # noqa: B006
    ) -> ToolResponse:
        """Tool.

        Args:
            meta: Meta.
            page: Page.
            properties: A field named like the keyword.
            style: A default value holding a "title" key.
        """
        return ToolResponse()

    toolkit = Toolkit()
    toolkit.register_tool_function(tool)
    params = toolkit.get_json_schemas()[0]["function"]["parameters"]
    assert params["properties"]["style"]["default"] == {"title": "bold"}
    assert "title" not in params["properties"]["properties"]
    page = next(b for b in params["properties"]["page"]["anyOf"] if b.get("type") == "object")
    assert set(page["properties"]) == {"title", "properties"}
    assert "title" not in page["properties"]["properties"]
    assert "title" not in page["properties"]["title"]
