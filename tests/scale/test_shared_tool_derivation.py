"""What a toolkit derives from a function (schema, validator, quick check) is computed once
per function and options and shared by every toolkit that registers it: sharing must never
leak one registration's choices into another, and a changed function is derived again."""

from __future__ import annotations

import functools
import gc
import weakref

import pytest

from agentscope_rt.exception import StateError
from agentscope_rt.message import TextBlock, ToolUseBlock
from agentscope_rt.module import StateModule
from agentscope_rt.tool import Toolkit, ToolResponse


def weather(city: str, unit: str = "C") -> ToolResponse:
    """Get the weather.

    Args:
        city: the city.
        unit: C or F.
    """
    return ToolResponse(content=[TextBlock(text=f"{city} {unit}")])


def _schema(toolkit: Toolkit, name: str) -> dict:
    (schema,) = [s for s in toolkit.get_json_schemas() if s["function"]["name"] == name]
    return schema


def test_toolkits_share_what_is_derived_but_not_names_or_descriptions() -> None:
    first, second, third = Toolkit(), Toolkit(), Toolkit()
    first.register_tool_function(weather)
    second.register_tool_function(weather)
    third.register_tool_function(weather, func_description="Other words.")
    a, b, c = (t.tools["weather"] for t in (first, second, third))
    assert a.validator is b.validator is c.validator
    assert a.json_schema["function"]["parameters"] is b.json_schema["function"]["parameters"]
    assert _schema(third, "weather")["function"]["description"] == "Other words."
    assert _schema(first, "weather")["function"]["description"] == "Get the weather."

    # Renaming in one toolkit leaves the other's schema alone.
    second.register_tool_function(weather, namesake_strategy="rename")
    assert sorted(_schema_names(second)) != ["weather"] and len(second.tools) == 2
    assert _schema(first, "weather")["function"]["name"] == "weather"
    assert [s["function"]["name"] for s in first.get_json_schemas()] == ["weather"]


def _schema_names(toolkit: Toolkit) -> list[str]:
    return [s["function"]["name"] for s in toolkit.get_json_schemas()]


def test_presets_and_partials_are_derived_per_set_of_hidden_arguments() -> None:
    plain, preset, partial = Toolkit(), Toolkit(), Toolkit()
    plain.register_tool_function(weather)
    preset.register_tool_function(weather, preset_kwargs={"unit": "F"})
    partial.register_tool_function(functools.partial(weather, "Paris"))
    assert set(_schema(plain, "weather")["function"]["parameters"]["properties"]) == {
        "city",
        "unit",
    }
    assert set(_schema(preset, "weather")["function"]["parameters"]["properties"]) == {"city"}
    assert set(_schema(partial, "weather")["function"]["parameters"]["properties"]) == {"unit"}


async def test_a_function_changed_after_registration_is_derived_again() -> None:
    def tool(count: int) -> ToolResponse:
        """Count things."""
        return ToolResponse(content=[TextBlock(text=str(count))])

    before = Toolkit()
    before.register_tool_function(tool)
    tool.__doc__ = "Count other things."
    tool.__annotations__["count"] = str
    after = Toolkit()
    after.register_tool_function(tool)
    assert _schema(after, "tool")["function"]["description"] == "Count other things."
    assert _schema(after, "tool")["function"]["parameters"]["properties"]["count"]["type"] == (
        "string"
    )
    assert _schema(before, "tool")["function"]["parameters"]["properties"]["count"]["type"] == (
        "integer"
    )
    # Each toolkit validates against its own derivation.
    call = ToolUseBlock(id="1", name="tool", input={"count": "three"})
    refused = [chunk async for chunk in await before.call_tool_function(call)]
    assert "'three' is not of type 'integer'" in refused[-1].content[0].text
    chunks = [chunk async for chunk in await after.call_tool_function(call)]
    assert chunks[-1].content[0].text == "three"


class _Counter:
    def __init__(self, start: int) -> None:
        self.start = start

    def add(self, amount: int) -> ToolResponse:
        """Add to the counter.

        Args:
            amount: how much.
        """
        return ToolResponse(content=[TextBlock(text=str(self.start + amount))])


class _Callable:
    def __call__(self, text: str) -> ToolResponse:
        """Echo."""
        return ToolResponse(content=[TextBlock(text=text)])


def test_bound_methods_share_their_function_and_callable_objects_work() -> None:
    one, two = Toolkit(), Toolkit()
    one.register_tool_function(_Counter(1).add)
    two.register_tool_function(_Counter(2).add)
    assert one.tools["add"].validator is two.tools["add"].validator
    assert set(_schema(one, "add")["function"]["parameters"]["properties"]) == {"amount"}
    assert one.tools["add"].original_func.__self__.start == 1
    assert two.tools["add"].original_func.__self__.start == 2

    echo = _Callable()
    echo.__doc__ = "Only this one."
    three = Toolkit()
    three.register_tool_function(echo, func_name="echo")
    assert _schema(three, "echo")["function"]["description"] == "Only this one."


def test_the_shared_derivation_does_not_keep_a_function_alive() -> None:
    def short_lived(x: int) -> ToolResponse:
        """Short."""
        return ToolResponse(content=[])

    toolkit = Toolkit()
    toolkit.register_tool_function(short_lived)
    ref = weakref.ref(short_lived)
    del toolkit, short_lived
    gc.collect()
    assert ref() is None


def test_state_types_follow_annotations_added_to_a_class_later() -> None:
    class Holder(StateModule):
        def __init__(self) -> None:
            super().__init__()
            self.items: list = []
            self.register_state("items")

    untyped = Holder()  # resolved once without an annotation for items: plain JSON
    untyped.load_state_dict({"items": ["x", 2]})
    assert untyped.items == ["x", 2]
    Holder.__annotations__["items"] = list[int]
    typed = Holder()
    with pytest.raises(StateError, match="expected an integer"):
        typed.load_state_dict({"items": ["x", 2]})
    typed.load_state_dict({"items": [1, 2]})
    assert typed.items == [1, 2]
