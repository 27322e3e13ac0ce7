"""What a chat model returns: :class:`ChatResponse` and its :class:`ChatUsage`."""

from __future__ import annotations

from typing import Any

import attrs

from .._ids import new_id
from ..message import (
    AudioBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    now_timestamp,
)

__all__ = ["ChatResponse", "ChatUsage", "ResponseBlock"]

ResponseBlock = TextBlock | ThinkingBlock | ToolUseBlock | AudioBlock


@attrs.define(slots=True)
class ChatUsage:
    """Token usage and wall time of one model call.

    :ivar input_tokens: prompt tokens.
    :ivar output_tokens: generated tokens.
    :ivar time: seconds from request to the last chunk.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    time: float = 0.0
    type: str = "chat"

    def __add__(self, other: ChatUsage) -> ChatUsage:
        return ChatUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.time + other.time,
        )


@attrs.define(slots=True)
class ChatResponse:
    """One model response, or, when streaming, everything generated so far.

    Streaming models yield *cumulative* chunks that share one ``id``: each holds the whole
    content so far, and the final chunk has ``is_last=True`` (and the usage).

    :ivar content: text, thinking, tool-use (and audio) blocks, in the order produced.
    :ivar metadata: the parsed structured output, when a ``structured_model`` was requested.
    """

    content: list[ResponseBlock] = attrs.field(factory=list)
    id: str = attrs.field(factory=new_id)
    created_at: str = attrs.field(factory=now_timestamp)
    stream: bool = False
    is_last: bool = True
    usage: ChatUsage | None = None
    metadata: dict[str, Any] | None = None

    def get_text(self) -> str:
        """The concatenated text blocks."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_calls(self) -> list[ToolUseBlock]:
        """The tool-use blocks, in order."""
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    def to_msg(self, name: str, role: str = "assistant") -> Msg:
        """An assistant :class:`Msg` holding a copy of this response's content blocks
        (and its metadata)."""
        return Msg(
            name,
            [b.copy() for b in self.content],
            role,  # type: ignore[arg-type]
            metadata=dict(self.metadata) if self.metadata else None,
        )
