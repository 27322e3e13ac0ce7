"""What a tool call returns: :class:`ToolResponse`."""

from __future__ import annotations

from typing import Any

import attrs

from .._ids import new_id
from ..message import MediaBlock, TextBlock

__all__ = ["ToolResponse"]


@attrs.define(slots=True)
class ToolResponse:
    """The result (or, for streaming tools, one cumulative chunk) of a tool call.

    :ivar content: text/image/audio/video blocks the model will read.
    :ivar metadata: data for the agent, not shown to the model.
    :ivar stream: whether this is a chunk of a streaming tool's output.
    :ivar is_last: whether this is the final chunk.
    :ivar is_interrupted: whether the call was interrupted (cancelled) before finishing.
    """

    content: list[MediaBlock] = attrs.field(factory=list)
    metadata: dict[str, Any] | None = None
    stream: bool = False
    is_last: bool = True
    is_interrupted: bool = False
    id: str = attrs.field(factory=new_id)

    def get_text(self) -> str:
        """The concatenated text blocks."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))
