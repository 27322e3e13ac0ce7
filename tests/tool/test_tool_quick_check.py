"""The compiled quick argument check agrees with jsonschema: it accepts only valid arguments,
and accepts the common valid ones without asking jsonschema."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentscope_rt.message import ToolUseBlock
from agentscope_rt.tool import Toolkit, ToolResponse
from agentscope_rt.tool._quick_check import compile_quick_check

GOLDEN = json.loads(pathlib.Path(__file__).with_name("golden_schemas.json").read_text())
PARAMETER_SCHEMAS = [entry["function"]["parameters"] for entry in GOLDEN.values()]

SCHEMAS: list[dict[str, Any]] = [
    *PARAMETER_SCHEMAS,
    {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False},
    {"type": "object", "additionalProperties": {"type": "number"}},
    {"type": ["string", "null"]},
    {
        "type": "object",
        "properties": {
            "a": {"type": "boolean", "description": "a flag"},
            "b": {"type": "null"},
            "x": {"type": "array"},
            "y": {"type": "object", "title": "any object"},
            "k": {"type": "integer", "default": 1},
            "n": {"type": "number"},
            "name": {"type": "string"},
        },
        "required": ["a"],
    },
    {"enum": ["a", "b", 1, True]},
    {"type": "array", "items": {"anyOf": [{"type": "boolean"}, {"type": "array"}]}},
    {"required": ["k"]},
    {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                "required": ["children"],
            }
        },
        "$ref": "#/$defs/node",
    },
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(-5, 5, allow_nan=False)
    | st.sampled_from(["a", "b", "red", "green", "x", "k", ""]),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["a", "b", "k", "n", "x", "y", "city", "key", "name", "children", "person", "tags"]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
@settings(max_examples=300, deadline=None)
@given(instance=json_values)
def test_quick_check_accepts_only_valid_instances(schema: dict[str, Any], instance: Any) -> None:
    check = compile_quick_check(schema)
    assert check is not None
    if check(instance):
        assert jsonschema.validators.validator_for(schema)(schema).is_valid(instance)


def test_quick_check_accepts_typical_valid_arguments() -> None:
    schema = GOLDEN["bound_method"]["function"]["parameters"]
    check = compile_quick_check(schema)
    assert check is not None
    assert check({"key": "k"}) and check({"key": "k", "fresh": True})
    assert not check({"key": 1}) and not check({"fresh": True})
    nested = compile_quick_check(GOLDEN["extended_model"]["function"]["parameters"])
    assert nested is not None
    assert nested(
        {
            "person": {"name": "Ann", "address": {"street": "Main", "zip_code": None}},
            "name": "s",
            "points": [{"x": 1.5}, {"x": 2, "y": 0.5}],
            "color": "green",
        }
    )
    assert not nested({"person": {"name": "Ann"}, "name": "s", "points": []})


def test_members_of_one_exact_type_are_checked_inline() -> None:
    schema = SCHEMAS[len(PARAMETER_SCHEMAS) + 3]
    check = compile_quick_check(schema)
    assert check is not None
    valid = {"a": True, "b": None, "x": [1], "y": {}, "k": 2, "n": 0.5, "name": "Ann"}
    assert check(valid) and check({"a": False})
    for key, wrong in [("a", 1), ("b", 0), ("x", ()), ("y", []), ("k", True), ("name", b"A")]:
        assert not check({**valid, key: wrong}), key
    assert not check({"b": None})  # "a" is required
    assert not check([("a", True)])  # the parameters must be an object


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"s": {"type": "string", "pattern": "^a"}}},
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        {"$ref": "https://example.com/schema.json"},
    ],
)
def test_schemas_beyond_the_subset_get_no_quick_check(schema: dict[str, Any]) -> None:
    assert compile_quick_check(schema) is None


async def test_a_keyword_beyond_the_subset_is_still_enforced() -> None:
    async def pick(n: int) -> ToolResponse:
        """Pick."""
        return ToolResponse(content=[])

    toolkit = Toolkit()
    toolkit.register_tool_function(
        pick,
        json_schema={
            "type": "function",
            "function": {
                "name": "pick",
                "description": "Pick.",
                "parameters": {
                    "type": "object",
                    "properties": {"n": {"type": "integer", "minimum": 1}},
                    "required": ["n"],
                },
            },
        },
    )
    call = ToolUseBlock(id="1", name="pick", input={"n": 0})
    chunks = [c async for c in toolkit.call_tool_function(call)]
    text = chunks[-1].get_text()
    assert text.startswith("InvalidArgumentsError: Invalid arguments for 'pick':")
    assert "argument 'n'" in text and "minimum" in text


async def test_integral_float_for_an_integer_is_accepted_as_jsonschema_does() -> None:
    async def count(n: int) -> ToolResponse:
        """Count.

        Args:
            n: how many.
        """
        return ToolResponse(content=[])

    toolkit = Toolkit()
    toolkit.register_tool_function(count)
    call = ToolUseBlock(id="1", name="count", input={"n": 3.0})
    chunks = [c async for c in toolkit.call_tool_function(call)]
    assert "Error" not in chunks[-1].get_text()
