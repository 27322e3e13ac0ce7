"""A character-based token estimate that needs no tokenizer and no network."""

from __future__ import annotations

import json
import math
from typing import Any

from ._token_base import TokenCounterBase

__all__ = ["CharTokenCounter"]


class CharTokenCounter(TokenCounterBase):
    """Estimate tokens as characters / *chars_per_token* (rounded up).

    The text counted is the JSON of the messages (and of the tools), so keys and structure
    count too. About 4 characters per token is OpenAI's rule of thumb for English; AgentScope's
    ``CharTokenCounter`` counts one token per character — pass ``chars_per_token=1`` for that.
    Base64 media count by their length, which overestimates them heavily.

    :param chars_per_token: characters per token, > 0.
    :raises ValueError: when *chars_per_token* is not positive.
    """

    def __init__(self, chars_per_token: float = 4.0) -> None:
        if isinstance(chars_per_token, bool) or not chars_per_token > 0:
            raise ValueError(f"chars_per_token must be > 0, not {chars_per_token!r}")
        self.chars_per_token = float(chars_per_token)

    async def count(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> int:
        """Count ``ceil(len(json) / chars_per_token)`` over the messages and tools
        (values JSON cannot encode are counted by their ``str()``)."""
        chars = sum(len(json.dumps(m, ensure_ascii=False, default=str)) for m in messages)
        if tools:
            chars += len(json.dumps(tools, ensure_ascii=False, default=str))
        return math.ceil(chars / self.chars_per_token)

    def __repr__(self) -> str:
        return f"CharTokenCounter(chars_per_token={self.chars_per_token!r})"
