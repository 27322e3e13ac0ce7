"""Tool arguments a tool cannot use are refused before anything runs: numbers that are not JSON
(NaN, Infinity) and timeouts a subprocess cannot use."""

from __future__ import annotations

import math
from typing import Any

import jsonschema
import pytest

from agentscope_rt.message import TextBlock, ToolUseBlock
from agentscope_rt.tool import (
    Toolkit,
    ToolResponse,
    execute_python_code,
    execute_shell_command,
)
from agentscope_rt.tool._function_schema import arguments_validator
from agentscope_rt.tool._quick_check import compile_quick_check

BAD_TIMEOUTS = [math.nan, math.inf, -math.inf, -1.0, -0.5, 0, 0.0]


async def _call(toolkit: Toolkit, name: str, **arguments: Any) -> list[ToolResponse]:
    tool_call = ToolUseBlock(id="c1", name=name, input=arguments)
    return [chunk async for chunk in toolkit.call_tool_function(tool_call)]


def _coding_toolkit() -> Toolkit:
    toolkit = Toolkit()
    toolkit.register_tool_function(execute_shell_command)
    toolkit.register_tool_function(execute_python_code)
    return toolkit


# -- unusable timeouts for the coding tools -----------------------------------------------------


@pytest.mark.parametrize("bad_timeout", BAD_TIMEOUTS)
@pytest.mark.parametrize(
    ("name", "argument"),
    [("execute_shell_command", "command"), ("execute_python_code", "code")],
)
async def test_a_coding_tool_refuses_an_unusable_timeout_through_the_toolkit(
    bad_timeout: float, name: str, argument: str
) -> None:
    toolkit = _coding_toolkit()
    program = "echo ran" if argument == "command" else "print('ran')"
    chunks = await _call(toolkit, name, **{argument: program, "timeout": bad_timeout})
    assert len(chunks) == 1 and chunks[0].is_last
    text = chunks[0].get_text()
    assert "timeout" in text
    assert "ExceptionGroup" not in text and "TaskGroup" not in text and "nursery" not in text
    assert "<returncode>" not in text and "ran" not in text


@pytest.mark.parametrize("bad_timeout", BAD_TIMEOUTS)
async def test_a_coding_tool_called_directly_raises_for_an_unusable_timeout(
    bad_timeout: float,
) -> None:
    with pytest.raises(ValueError, match="timeout must be a positive, finite number"):
        await execute_shell_command("echo ran", timeout=bad_timeout)
    with pytest.raises(ValueError, match="timeout must be a positive, finite number"):
        await execute_python_code("print('ran')", timeout=bad_timeout)


async def test_a_negative_timeout_is_refused_by_the_argument_schema() -> None:
    toolkit = _coding_toolkit()
    schema = toolkit.tools["execute_shell_command"].json_schema["function"]["parameters"]
    assert schema["properties"]["timeout"]["exclusiveMinimum"] == 0
    chunks = await _call(toolkit, "execute_shell_command", command="echo ran", timeout=-1)
    assert (
        chunks[0]
        .get_text()
        .startswith(
            "InvalidArgumentsError: Invalid arguments for 'execute_shell_command': argument "
            "'timeout'"
        )
    )


@pytest.mark.parametrize("good_timeout", [5, 2.5])
async def test_usable_timeouts_still_run_the_command(good_timeout: float) -> None:
    toolkit = _coding_toolkit()
    chunks = await _call(toolkit, "execute_shell_command", command="echo ran", timeout=good_timeout)
    assert chunks[-1].get_text().startswith("<returncode>0</returncode><stdout>ran\n")


# -- numbers that are not JSON --------------------------------------------------------------


NUMBER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "x": {"type": "number"},
        "xs": {"type": "array", "items": {"type": "number"}},
        "maybe": {"anyOf": [{"type": "number"}, {"type": "null"}]},
    },
}


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize(
    "arguments",
    [
        lambda v: {"x": v},
        lambda v: {"xs": [1.0, v]},
        lambda v: {"maybe": v},
    ],
)
def test_numbers_that_are_not_json_are_refused(value: float, arguments: Any) -> None:
    args = arguments(value)
    check = compile_quick_check(NUMBER_SCHEMA)
    assert check is not None
    assert not check(args)  # never vouched for by the quick check
    validator = arguments_validator(NUMBER_SCHEMA)
    assert not validator.is_valid(args)
    messages = [error.message for error in validator.iter_errors(args)]
    assert messages and all(repr(value) in message for message in messages)


def test_finite_numbers_are_accepted_by_both_checks() -> None:
    args = {"x": 1.5, "xs": [1, 2.0, -3e10], "maybe": None}
    check = compile_quick_check(NUMBER_SCHEMA)
    assert check is not None and check(args)
    assert arguments_validator(NUMBER_SCHEMA).is_valid(args)


def test_the_arguments_validator_checks_the_schema() -> None:
    with pytest.raises(jsonschema.SchemaError):
        arguments_validator({"type": "object", "properties": {"x": {"type": 5}}})


async def test_a_float_parameter_refuses_nan_and_infinity_from_the_model() -> None:
    from agentscope_rt.message import ToolUseBlock
    from agentscope_rt.tool import Toolkit, ToolResponse

    def scale(x: float) -> ToolResponse:
        """Scale a number.

        Args:
            x: The number.
        """
        return ToolResponse(content=[TextBlock(text=str(x * 2))])

    toolkit = Toolkit()
    toolkit.register_tool_function(scale)

    async def call(value: float) -> str:
        chunks = [
            c
            async for c in await toolkit.call_tool_function(
                ToolUseBlock(id="1", name="scale", input={"x": value})
            )
        ]
        return str(chunks[-1].content[0]["text"])

    assert await call(1.5) == "3.0"
    for bad in (float("nan"), float("inf"), float("-inf")):
        assert "is not of type 'number'" in await call(bad)
