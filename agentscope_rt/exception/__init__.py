"""Errors raised by agentscope-rt; all derive from :class:`AgentScopeRTError`."""

from ._exception import (
    AgentError,
    AgentScopeRTError,
    FunctionInactiveError,
    FunctionNotFoundError,
    MCPError,
    MessageFormatError,
    ModelAPIError,
    ModelError,
    ModelResponseError,
    MsgHubError,
    StateError,
    ToolError,
    ToolGroupError,
    ToolRegistrationError,
)

__all__ = [
    "AgentError",
    "AgentScopeRTError",
    "FunctionInactiveError",
    "FunctionNotFoundError",
    "MCPError",
    "MessageFormatError",
    "ModelAPIError",
    "ModelError",
    "ModelResponseError",
    "MsgHubError",
    "StateError",
    "ToolError",
    "ToolGroupError",
    "ToolRegistrationError",
]
