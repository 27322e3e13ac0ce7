"""What a tool call returns: :class:`ToolResponse`."""

from __future__ import annotations

import os
import random
from typing import Any

import attrs

from ..message import MediaBlock, TextBlock

__all__ = ["ToolResponse"]


# Ids come from a private generator seeded from os.urandom (reseeded in forked children):
# unique like uuid4().hex, a third of the cost of an os.urandom system call per id, and
# unaffected by applications seeding the global `random` module.
_id_rng = random.Random()
if hasattr(os, "register_at_fork"):  # POSIX only; elsewhere there is no fork
    os.register_at_fork(after_in_child=_id_rng.seed)
_id_bits = _id_rng.getrandbits


def _tool_response_id() -> str:
    # 128 random bits as 32 hex digits.
    return _id_bits(128).to_bytes(16, "big").hex()


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
    id: str = attrs.field(factory=_tool_response_id)

    def get_text(self) -> str:
        """The concatenated text blocks."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))
