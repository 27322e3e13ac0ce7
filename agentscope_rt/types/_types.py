"""AgentScope's shared type aliases, mapped onto this package's classes.

They are plain aliases for annotations: nothing here is checked at run time. The module sits in
the foundation layer, so :data:`ToolFunction` names :class:`~agentscope_rt.tool.ToolResponse`
(core layer) by a forward reference that :func:`typing.get_type_hints` resolves once
``agentscope_rt.tool`` is imported; type checkers see the real class.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, ForwardRef, Literal, TypeAlias, Union

if TYPE_CHECKING:
    from ..tool import ToolResponse
else:
    ToolResponse = ForwardRef("ToolResponse", module="agentscope_rt.tool")

__all__ = [
    "AgentHookTypes",
    "Embedding",
    "JSONPrimitive",
    "JSONSerializableObject",
    "ReActAgentHookTypes",
    "ToolFunction",
]

# ``str |`` as in AgentScope: a subclass may add hook types of its own.
AgentHookTypes: TypeAlias = (
    str
    | Literal[
        "pre_reply",
        "post_reply",
        "pre_print",
        "post_print",
        "pre_observe",
        "post_observe",
    ]
)
"""The hook types every agent accepts (``AgentBase.supported_hook_types``)."""

ReActAgentHookTypes: TypeAlias = (
    AgentHookTypes
    | Literal[
        "pre_reasoning",
        "post_reasoning",
        "pre_acting",
        "post_acting",
    ]
)
"""The hook types a ReAct agent accepts besides the agent ones."""

JSONPrimitive: TypeAlias = str | int | float | bool | None
"""A JSON scalar."""

# Union[...] rather than `|`: the recursive parts are strings, which `|` cannot combine.
JSONSerializableObject: TypeAlias = Union[  # noqa: UP007
    JSONPrimitive,
    list["JSONSerializableObject"],
    dict[str, "JSONSerializableObject"],
]
"""Anything ``json.dumps`` encodes without a ``default``: scalars, lists and str-keyed dicts."""

Embedding: TypeAlias = list[float]
"""An embedding vector."""

ToolFunction: TypeAlias = Callable[
    ...,
    Union[  # noqa: UP007
        # a sync function (the toolkit runs it in a worker thread)
        ToolResponse,
        # an async function
        Awaitable[ToolResponse],
        # a sync generator (each next() in a worker thread): streamed chunks
        Generator[ToolResponse, None, None],
        # an async generator: streamed chunks
        AsyncGenerator[ToolResponse, None],
        # an async function returning a generator of chunks
        Coroutine[Any, Any, AsyncGenerator[ToolResponse, None]],
        Coroutine[Any, Any, Generator[ToolResponse, None, None]],
    ],
]
"""A function the :class:`~agentscope_rt.tool.Toolkit` can register as a tool."""
