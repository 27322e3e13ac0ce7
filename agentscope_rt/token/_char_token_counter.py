"""A character count that needs no tokenizer and no network, the same as AgentScope's."""

from __future__ import annotations

import math
from typing import Any

from ._token_base import TokenCounterBase

__all__ = ["CharTokenCounter"]


class CharTokenCounter(TokenCounterBase):
    """Count one token per character of the prompt's text, as AgentScope's ``CharTokenCounter``.

    The text is what AgentScope counts: ``str()`` of each message dict (Python's ``repr`` form,
    quotes, keys and escapes included) and of the tool list when there is one, joined by
    newlines. By default the count is that text's length, so a compression threshold or token
    budget written for AgentScope means the same here (pinned against AgentScope 1.0.21's own
    numbers by ``tests/token/data/char_token_counts.json``).

    It overestimates real tokenizers several times over (about 4 characters make a token in
    English text) and base64 media count by their length. For an estimate closer to a real
    tokenizer, pass *chars_per_token*: the count becomes ``ceil(characters / chars_per_token)``.

    :param chars_per_token: ``None`` (the default) for AgentScope's count, one per character;
        otherwise characters per token, > 0 (e.g. ``4.0``).
    :raises ValueError: when *chars_per_token* is not a positive number.
    """

    def __init__(self, chars_per_token: float | None = None) -> None:
        if chars_per_token is not None and (
            isinstance(chars_per_token, bool)
            or not isinstance(chars_per_token, int | float)
            or not chars_per_token > 0
            or math.isinf(chars_per_token)
        ):
            raise ValueError(
                "chars_per_token must be a positive number, or None for one token per "
                f"character (AgentScope's count), not {chars_per_token!r}"
            )
        self.chars_per_token = None if chars_per_token is None else float(chars_per_token)

    async def count(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> int:
        """Count the characters of ``"\\n".join(str(m) for m in messages)``, plus a newline and
        ``str(tools)`` when *tools* is not empty; divided by *chars_per_token* (rounded up)
        when one was given. Further keyword arguments are accepted and ignored, as in
        AgentScope.

        :param messages: the formatted messages (any objects: each counts by its ``str()``).
        :param tools: tool JSON schemas; an empty list counts nothing.
        """
        texts = [str(message) for message in messages]
        if tools:
            texts.append(str(tools))
        # The length of "\n".join(texts), without building the joined string.
        chars = sum(map(len, texts)) + max(len(texts) - 1, 0)
        if self.chars_per_token is None:
            return chars
        return math.ceil(chars / self.chars_per_token)

    def __repr__(self) -> str:
        if self.chars_per_token is None:
            return "CharTokenCounter()"
        return f"CharTokenCounter(chars_per_token={self.chars_per_token!r})"
