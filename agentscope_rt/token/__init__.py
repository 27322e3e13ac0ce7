"""Token counters: how many tokens a formatted prompt costs, for truncation and budgets.

All counters are async. :class:`OpenAITokenCounter` counts offline with tiktoken,
:class:`HuggingFaceTokenCounter` offline with a local Hugging Face tokenizer and its chat
template, :class:`AnthropicTokenCounter` and :class:`GeminiTokenCounter` ask their provider's
token-counting endpoint, and :class:`CharTokenCounter` counts characters as AgentScope does.
Each loads its provider's library only when it is built.
"""

from ._anthropic_token_counter import AnthropicTokenCounter
from ._char_token_counter import CharTokenCounter
from ._gemini_token_counter import GeminiTokenCounter
from ._huggingface_token_counter import HuggingFaceTokenCounter
from ._openai_token_counter import OpenAITokenCounter
from ._token_base import TokenCounterBase

__all__ = [
    "AnthropicTokenCounter",
    "CharTokenCounter",
    "GeminiTokenCounter",
    "HuggingFaceTokenCounter",
    "OpenAITokenCounter",
    "TokenCounterBase",
]
