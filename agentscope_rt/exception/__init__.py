"""Errors raised by agentscope-rt; all derive from :class:`AgentScopeRTError`.

AgentScope's agent-oriented errors (:class:`AgentOrientedExceptionBase` and the tool errors
derived from it) are part of the same hierarchy.
"""

from ._exception import (
    A2AError,
    AgentError,
    AgentOrientedExceptionBase,
    AgentScopeRTError,
    DurableRunError,
    EvaluationError,
    FunctionInactiveError,
    FunctionNotFoundError,
    MCPError,
    MessageFormatError,
    ModelAPIError,
    ModelError,
    ModelResponseError,
    MsgHubError,
    ReaderError,
    RunDivergedError,
    SessionError,
    StateError,
    ToolError,
    ToolGroupError,
    ToolInterruptedError,
    ToolInvalidArgumentsError,
    ToolNotFoundError,
    ToolRegistrationError,
)

__all__ = [
    "A2AError",
    "AgentError",
    "AgentOrientedExceptionBase",
    "AgentScopeRTError",
    "DurableRunError",
    "EvaluationError",
    "FunctionInactiveError",
    "FunctionNotFoundError",
    "MCPError",
    "MessageFormatError",
    "ModelAPIError",
    "ModelError",
    "ModelResponseError",
    "MsgHubError",
    "ReaderError",
    "RunDivergedError",
    "SessionError",
    "StateError",
    "ToolError",
    "ToolGroupError",
    "ToolInterruptedError",
    "ToolInvalidArgumentsError",
    "ToolNotFoundError",
    "ToolRegistrationError",
]
