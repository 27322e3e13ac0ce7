"""Chat models: the provider-independent interface, real providers and test doubles."""

from ._model_base import ChatModelBase, ToolChoice, validate_tool_choice
from ._model_response import ChatResponse, ChatUsage, ResponseBlock

__all__ = [
    "ChatModelBase",
    "ChatResponse",
    "ChatUsage",
    "ResponseBlock",
    "ToolChoice",
    "validate_tool_choice",
]
