"""AgentScope's agent-oriented exceptions and type aliases, in this package's hierarchy."""

from __future__ import annotations

import pickle
import typing
from collections.abc import AsyncGenerator
from typing import Any

import pytest

import agentscope_rt.exception as exception
import agentscope_rt.types as types
from agentscope_rt.agent import AgentBase, ReActAgentBase
from agentscope_rt.exception import (
    AgentOrientedExceptionBase,
    AgentScopeRTError,
    ToolError,
    ToolInterruptedError,
    ToolInvalidArgumentsError,
    ToolNotFoundError,
)
from agentscope_rt.tool import ToolResponse
from agentscope_rt.types import (
    AgentHookTypes,
    Embedding,
    JSONPrimitive,
    JSONSerializableObject,
    ReActAgentHookTypes,
    ToolFunction,
)

# AgentScope 1.0.21's agentscope.exception.__all__ and agentscope.types.__all__.
AGENTSCOPE_EXCEPTIONS = [
    "AgentOrientedExceptionBase",
    "ToolInterruptedError",
    "ToolNotFoundError",
    "ToolInvalidArgumentsError",
]
AGENTSCOPE_TYPES = [
    "AgentHookTypes",
    "ReActAgentHookTypes",
    "Embedding",
    "JSONPrimitive",
    "JSONSerializableObject",
    "ToolFunction",
]
TOOL_ERRORS = [ToolNotFoundError, ToolInterruptedError, ToolInvalidArgumentsError]


def test_agentscope_s_exception_names_are_exported() -> None:
    assert set(AGENTSCOPE_EXCEPTIONS) <= set(exception.__all__)
    for name in exception.__all__:
        assert getattr(exception, name).__module__ == "agentscope_rt.exception._exception"


def test_str_names_the_class_as_agentscope_does() -> None:
    error = AgentOrientedExceptionBase("the agent should retry")
    assert error.message == "the agent should retry"
    assert str(error) == "AgentOrientedExceptionBase: the agent should retry"
    assert error.args == ("the agent should retry",)
    not_found = ToolNotFoundError("Cannot find the function named search")
    assert str(not_found) == "ToolNotFoundError: Cannot find the function named search"


@pytest.mark.parametrize("cls", TOOL_ERRORS)
def test_tool_errors_sit_in_both_hierarchies(cls: type[AgentOrientedExceptionBase]) -> None:
    error = cls("bad")
    assert isinstance(error, AgentOrientedExceptionBase)
    assert isinstance(error, ToolError) and isinstance(error, AgentScopeRTError)
    with pytest.raises(AgentScopeRTError, match=f"^{cls.__name__}: bad$"):
        raise error


def test_tool_errors_are_also_the_builtin_errors_they_stand_for() -> None:
    assert isinstance(ToolNotFoundError("x"), LookupError)
    assert isinstance(ToolInvalidArgumentsError("x"), ValueError)
    assert not isinstance(ToolInterruptedError("x"), ValueError | LookupError)


@pytest.mark.parametrize("cls", [AgentOrientedExceptionBase, *TOOL_ERRORS])
def test_agent_oriented_errors_survive_pickling(cls: type[AgentOrientedExceptionBase]) -> None:
    # Errors cross process boundaries (worker pools, distributed agents) by pickling.
    copy = pickle.loads(pickle.dumps(cls("why it failed")))
    assert type(copy) is cls and copy.message == "why it failed"
    assert str(copy) == f"{cls.__name__}: why it failed"


def test_agentscope_s_type_names_are_exported() -> None:
    assert sorted(types.__all__) == sorted(AGENTSCOPE_TYPES)


def test_hook_type_literals_match_the_agents_hook_types() -> None:
    def literals(alias: Any) -> set[str]:
        found: set[str] = set()
        for arg in typing.get_args(alias):
            if typing.get_origin(arg) is typing.Literal:
                found |= set(typing.get_args(arg))
            elif typing.get_args(arg):
                found |= literals(arg)
        return found

    assert str in typing.get_args(AgentHookTypes)  # open to subclasses' own hook types
    assert literals(AgentHookTypes) == set(AgentBase.supported_hook_types)
    assert literals(ReActAgentHookTypes) == set(ReActAgentBase.supported_hook_types)


def test_json_aliases_describe_json_values() -> None:
    assert set(typing.get_args(JSONPrimitive)) == {str, int, float, bool, type(None)}
    args = typing.get_args(JSONSerializableObject)
    assert {str, int, float, bool, type(None)} <= set(args)
    assert {typing.get_origin(a) for a in args} >= {list, dict}
    assert Embedding == list[float]


def test_tool_function_resolves_to_this_package_s_tool_response() -> None:
    async def stream(city: str) -> AsyncGenerator[ToolResponse, None]:
        yield ToolResponse(content=[])

    def annotated(tool: ToolFunction) -> None:
        return None

    # The forward reference names agentscope_rt.tool, resolved by get_type_hints.
    hint = typing.get_type_hints(annotated)["tool"]
    returned = typing.get_args(hint)[1]
    resolved = typing.get_args(returned)
    assert resolved[0] is ToolResponse
    assert typing.get_args(resolved[3]) == (ToolResponse, None)
    tool: ToolFunction = stream  # what a type checker accepts as a tool
    assert callable(tool)
