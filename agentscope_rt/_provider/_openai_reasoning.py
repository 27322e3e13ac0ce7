"""How a Responses API reasoning item travels in a :class:`~agentscope_rt.message.ThinkingBlock`.

The OpenAI Responses model keeps a reasoning item's encrypted content in the block's
``signature`` (:func:`reasoning_signature`), and its formatter sends it back as a ``reasoning``
input item (:func:`reasoning_input_item`): the two ends of one format, kept side by side here.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..message import ThinkingBlock

__all__ = ["reasoning_input_item", "reasoning_signature"]


def reasoning_signature(item_id: str | None, encrypted_content: str | None) -> str | None:
    """The :attr:`ThinkingBlock.signature` that keeps a reasoning item's encrypted content.

    ``None`` when there is no encrypted content to keep (the API then holds the reasoning
    itself, or the server has none to give).
    """
    if not item_id or not encrypted_content:
        return None
    return json.dumps(
        {"type": "reasoning", "id": item_id, "encrypted_content": encrypted_content},
        separators=(",", ":"),
    )


def reasoning_input_item(block: ThinkingBlock) -> dict[str, Any] | None:
    """The Responses API ``reasoning`` input item that sends *block* back, or ``None`` when
    the block carries no encrypted reasoning from this API (a plain summary, or another
    provider's signature), since the API accepts reasoning back only in encrypted form."""
    signature = block.signature
    if not signature or not signature.startswith('{"type":"reasoning"'):
        return None
    try:
        data = json.loads(signature)
    except ValueError:
        return None
    if not isinstance(data.get("id"), str) or not isinstance(data.get("encrypted_content"), str):
        return None
    return {
        "type": "reasoning",
        "id": data["id"],
        "summary": [{"type": "summary_text", "text": block.thinking}] if block.thinking else [],
        "encrypted_content": data["encrypted_content"],
    }
