"""Chat models: the provider-independent interface, real providers and test doubles.

* Interface: :class:`ChatModelBase`, :class:`ChatResponse`, :class:`ChatUsage`.
* Retry policy shared by every provider: :class:`RetryConfig`.
* Providers: :class:`OpenAIChatModel`, :class:`OpenAIResponseModel` (the Responses API),
  :class:`DashScopeChatModel`, :class:`AnthropicChatModel`
  (plus the Ollama, Gemini and llama.cpp models below).
* The local model's file: :func:`fetch_local_model` (the ``agentscope-rt-fetch-model``
  command), :func:`default_model_path`, :func:`local_model_folder`.
* Test doubles for users' own tests: :class:`ScriptedChatModel`, :class:`FunctionChatModel`.
"""

from .._provider import RetryConfig
from ._anthropic_model import AnthropicChatModel
from ._dashscope_model import DashScopeChatModel
from ._gemini_model import GeminiChatModel
from ._llamacpp_model import LlamaCppChatModel
from ._local_model_file import default_model_path, fetch_local_model, local_model_folder
from ._model_base import ChatModelBase, ToolChoice, validate_tool_choice
from ._model_response import ChatResponse, ChatUsage, ResponseBlock
from ._ollama_model import OllamaChatModel
from ._openai_model import OpenAIChatModel
from ._openai_response_model import OpenAIResponseModel
from ._testing import (
    FunctionChatModel,
    ModelCall,
    ScriptedChatModel,
    ScriptExhaustedError,
    reply,
    text,
    thinking,
    tool_call,
)

__all__ = [
    "AnthropicChatModel",
    "ChatModelBase",
    "ChatResponse",
    "ChatUsage",
    "DashScopeChatModel",
    "FunctionChatModel",
    "GeminiChatModel",
    "LlamaCppChatModel",
    "ModelCall",
    "OllamaChatModel",
    "OpenAIChatModel",
    "OpenAIResponseModel",
    "ResponseBlock",
    "RetryConfig",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "ToolChoice",
    "default_model_path",
    "fetch_local_model",
    "local_model_folder",
    "reply",
    "text",
    "thinking",
    "tool_call",
    "validate_tool_choice",
]
