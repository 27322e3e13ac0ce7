"""AgentScope's type aliases: JSON values, embeddings, tool functions and hook names.

Use them in annotations exactly as in AgentScope (``from agentscope_rt.types import
JSONSerializableObject``); they name this package's own classes.
"""

from ._types import (
    AgentHookTypes,
    Embedding,
    JSONPrimitive,
    JSONSerializableObject,
    ReActAgentHookTypes,
    ToolFunction,
)

__all__ = [
    "AgentHookTypes",
    "Embedding",
    "JSONPrimitive",
    "JSONSerializableObject",
    "ReActAgentHookTypes",
    "ToolFunction",
]
