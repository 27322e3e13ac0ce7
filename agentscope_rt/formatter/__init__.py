"""Formatters: turn messages into each provider's chat payload, within a token budget.

For every provider there is a chat formatter (one user, one agent; speakers kept as roles)
and a multi-agent formatter (several named speakers folded into ``<history>`` blocks). All
formatters are async (media are read without blocking) and accept a ``token_counter`` and
``max_tokens`` to drop the oldest turns, never splitting a tool call from its result.

Local media files (a path or ``file://`` URL in a media block) are read only from folders the
application allows with :func:`allow_local_files`; nothing is allowed by default. Embedding
models and tools that read media go through the same functions (:func:`check_local_file`,
:func:`read_local_bytes`, :func:`local_path_of`, :func:`sniff_media_type`), so one allow-list
governs every local read.

AgentScope's ``agentscope.formatter.A2AChatFormatter`` answers here too
(:class:`agentscope_rt.a2a.A2AChatFormatter`, imported with the ``a2a`` extra when first read;
in ``dir()``, not in ``__all__``).
"""

from typing import TYPE_CHECKING, Any

from .._moved import moved_attribute
from ._anthropic_formatter import AnthropicChatFormatter, AnthropicMultiAgentFormatter
from ._dashscope_formatter import DashScopeChatFormatter, DashScopeMultiAgentFormatter
from ._deepseek_formatter import DeepSeekChatFormatter, DeepSeekMultiAgentFormatter
from ._errors import (
    FormatterError,
    LocalFileNotAllowedError,
    TruncationWarning,
    UnsupportedBlockWarning,
)
from ._formatter_base import FormatterBase, MultiAgentFormatterBase, TruncatedFormatterBase
from ._gemini_formatter import GeminiChatFormatter, GeminiMultiAgentFormatter
from ._local_files import (
    LocalFilesGrant,
    allow_local_files,
    allowed_local_folders,
    check_local_file,
    disallow_local_files,
)
from ._media import WEB_IMAGE_TYPES, local_path_of, read_local_bytes, sniff_media_type
from ._ollama_formatter import OllamaChatFormatter, OllamaMultiAgentFormatter
from ._openai_formatter import OpenAIChatFormatter, OpenAIMultiAgentFormatter
from ._openai_response_formatter import (
    OpenAIResponseChatFormatter,
    OpenAIResponseMultiAgentFormatter,
)

__all__ = [
    "WEB_IMAGE_TYPES",
    "AnthropicChatFormatter",
    "AnthropicMultiAgentFormatter",
    "DashScopeChatFormatter",
    "DashScopeMultiAgentFormatter",
    "DeepSeekChatFormatter",
    "DeepSeekMultiAgentFormatter",
    "FormatterBase",
    "FormatterError",
    "GeminiChatFormatter",
    "GeminiMultiAgentFormatter",
    "LocalFileNotAllowedError",
    "LocalFilesGrant",
    "MultiAgentFormatterBase",
    "OllamaChatFormatter",
    "OllamaMultiAgentFormatter",
    "OpenAIChatFormatter",
    "OpenAIMultiAgentFormatter",
    "OpenAIResponseChatFormatter",
    "OpenAIResponseMultiAgentFormatter",
    "TruncatedFormatterBase",
    "TruncationWarning",
    "UnsupportedBlockWarning",
    "allow_local_files",
    "allowed_local_folders",
    "check_local_file",
    "disallow_local_files",
    "local_path_of",
    "read_local_bytes",
    "sniff_media_type",
]

# AgentScope's name for a class of the package above (agentscope_rt._moved says why).
_MOVED = {"A2AChatFormatter": "agentscope_rt.a2a"}

if not TYPE_CHECKING:
    # Hidden from type checkers: to them a module __getattr__ makes every misspelt name of this
    # package an Any; they find these classes, typed, at their own paths.
    def __getattr__(name: str) -> Any:
        return moved_attribute(__name__, name, _MOVED)


def __dir__() -> list[str]:
    return sorted({*globals(), *_MOVED})
