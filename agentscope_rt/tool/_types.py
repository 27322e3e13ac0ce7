"""What the toolkit stores per tool function and per tool group."""

from __future__ import annotations

import enum
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import attrs
import jsonschema

from ..message import ToolUseBlock
from ._response import ToolResponse

__all__ = ["PostprocessFunc", "RegisteredToolFunction", "ToolGroup", "ToolKind"]

PostprocessFunc = (
    Callable[[ToolUseBlock, ToolResponse], ToolResponse | None]
    | Callable[[ToolUseBlock, ToolResponse], Awaitable[ToolResponse | None]]
)
"""``postprocess_func(tool_call, response)``: return a replacement response, or ``None``."""


class ToolKind(enum.Enum):
    """How a tool function is run, decided once at registration."""

    COROUTINE = "coroutine"  # awaited in the caller's task
    ASYNC_GENERATOR = "async_generator"  # iterated in the caller's task
    SYNC = "sync"  # called in a worker thread
    SYNC_GENERATOR = "sync_generator"  # each next() in a worker thread
    INLINE = "inline"  # the toolkit's own quick sync methods: called in the event loop


def tool_kind(func: Callable[..., Any]) -> ToolKind:
    """Classify *func* (a function, bound method, or callable object)."""
    target: Any = func
    if not (inspect.isroutine(target) or inspect.isclass(target)):
        # A callable object: what matters is how its __call__ is defined.
        target = type(target).__call__
    if inspect.isasyncgenfunction(target):
        return ToolKind.ASYNC_GENERATOR
    if inspect.iscoroutinefunction(target):
        return ToolKind.COROUTINE
    if inspect.isgeneratorfunction(target):
        return ToolKind.SYNC_GENERATOR
    return ToolKind.SYNC


@attrs.define(eq=False)
class ToolGroup:
    """A named set of tools that is shown to the model only while active.

    :ivar notes: usage notes shown to the agent when the group is activated.
    """

    name: str
    active: bool
    description: str
    notes: str | None = None


@attrs.define(eq=False)
class RegisteredToolFunction:
    """A tool function with everything a call needs, computed at registration.

    :ivar json_schema: the OpenAI function schema shown to the model (preset kwargs removed).
    :ivar extended_json_schema: ``json_schema`` merged with the extended model, if one is set.
    :ivar accepted_names: the argument names a model may send, those the schema shows
        (``None`` when the given ``json_schema`` decides, as for MCP tools).
    :ivar quick_check: a compiled conservative check of the arguments against the parameters
        schema (see :mod:`._quick_check`); ``None`` when the schema needs ``validator``.
    """

    name: str
    group: str
    source: Literal["function", "mcp_server", "function_group"]
    original_func: Callable[..., Any]
    json_schema: dict[str, Any]
    kind: ToolKind
    validator: jsonschema.protocols.Validator
    preset_kwargs: dict[str, Any] = attrs.field(factory=dict)
    accepted_names: frozenset[str] | None = None
    original_name: str | None = None
    extended_model: Any = None
    extended_json_schema: dict[str, Any] = attrs.field(default=None)
    mcp_name: str | None = None
    postprocess_func: PostprocessFunc | None = None
    async_execution: bool = False
    timeout: float | None = None
    base_accepted_names: frozenset[str] | None = None
    quick_check: Callable[[Any], bool] | None = None

    def __attrs_post_init__(self) -> None:
        if self.extended_json_schema is None:
            self.extended_json_schema = self.json_schema
        if self.base_accepted_names is None:
            self.base_accepted_names = self.accepted_names
