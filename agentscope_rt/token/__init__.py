"""Token counters: how many tokens a formatted prompt costs, for truncation and budgets.

All counters are async. :class:`OpenAITokenCounter` counts offline with tiktoken,
:class:`AnthropicTokenCounter` asks Anthropic's ``count_tokens`` endpoint, and
:class:`CharTokenCounter` is a tokenizer-free estimate.
"""

from ._anthropic_token_counter import AnthropicTokenCounter
from ._char_token_counter import CharTokenCounter
from ._openai_token_counter import OpenAITokenCounter
from ._token_base import TokenCounterBase

__all__ = [
    "AnthropicTokenCounter",
    "CharTokenCounter",
    "OpenAITokenCounter",
    "TokenCounterBase",
]
