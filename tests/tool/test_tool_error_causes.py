"""A tool that fails inside a task group (or raises an exception group itself) is answered
with the real cause, not the group's wrapper message."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import pytest

from agentscope_rt.message import TextBlock, ToolUseBlock
from agentscope_rt.tool import Toolkit, ToolResponse


async def _call(toolkit: Toolkit, name: str, **arguments: Any) -> list[ToolResponse]:
    tool_call = ToolUseBlock(id="c1", name=name, input=arguments)
    return [chunk async for chunk in toolkit.call_tool_function(tool_call)]


def _sync_group() -> ToolResponse:
    """Fail inside a task group."""
    raise ExceptionGroup("unhandled errors in a TaskGroup", [ValueError("the real cause")])


async def _async_group() -> ToolResponse:
    """Fail inside nested task groups."""
    raise BaseExceptionGroup(
        "outer", [ExceptionGroup("unhandled errors in a TaskGroup", [KeyError("missing")])]
    )


async def _streaming_group() -> AsyncGenerator[ToolResponse, None]:
    """Yield once, then fail inside a task group."""
    yield ToolResponse(content=[TextBlock(text="partial")])
    raise ExceptionGroup("Exceptions from Trio nursery", [OSError("disk full")])


def _two_failures() -> ToolResponse:
    """Fail twice at once."""
    raise ExceptionGroup("two", [ValueError("first"), TypeError("second")])


@pytest.mark.parametrize(
    ("func", "expected"),
    [
        (_sync_group, "Error: ValueError: the real cause"),
        (_async_group, "Error: KeyError: 'missing'"),
        (_streaming_group, "Error: OSError: disk full"),
        (
            _two_failures,
            "Error: ExceptionGroup: two (2 sub-exceptions): ValueError: first; TypeError: second",
        ),
    ],
)
async def test_a_tool_failure_inside_a_task_group_names_the_real_cause(
    func: Any, expected: str
) -> None:
    toolkit = Toolkit()
    toolkit.register_tool_function(func)
    chunks = await _call(toolkit, func.__name__)
    assert chunks[-1].is_last
    assert chunks[-1].get_text().endswith(expected), chunks[-1].get_text()
