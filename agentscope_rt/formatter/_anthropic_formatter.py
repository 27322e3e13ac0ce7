"""Formatters for Anthropic's Messages API.

Content is a list of typed blocks (``text``, ``thinking``, ``image``, ``tool_use``); a tool
result is a ``tool_result`` block in a user message. The system prompt stays the first
message with ``role: "system"``, exactly as AgentScope returns it; the Anthropic model (and
:class:`~agentscope_rt.token.AnthropicTokenCounter`) take it out and send it as the separate
``system`` parameter the API requires.
"""

from __future__ import annotations

from typing import Any

from ..message import (
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
)
from ._formatter_base import (
    MultiAgentFormatterBase,
    TruncatedFormatterBase,
    history_items,
    state_only_through_current_call,
    wrap_history_items,
)
from ._media import current_call, local_path_of, read_local_image

__all__ = ["AnthropicChatFormatter", "AnthropicMultiAgentFormatter"]


async def format_anthropic_image_block(block: ImageBlock) -> dict[str, Any]:
    """An image block in Anthropic's shape: base64 passes through, web URLs become a ``url``
    source, local files are read and sent as base64.

    :raises FormatterError: for a missing local file or one that is not an image.
    """
    source = block.source
    if not isinstance(source, URLSource):
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": source.media_type, "data": source.data},
        }
    path = local_path_of(source.url)
    if path is None:
        return {"type": "image", "source": {"type": "url", "url": source.url}}
    media_type, data = await read_local_image(path, source.url, "Anthropic")
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def format_anthropic_thinking_block(block: ThinkingBlock) -> dict[str, Any]:
    """A thinking block in Anthropic's shape, with its ``signature`` when it has one.

    Anthropic verifies the signature and rejects a thinking block that comes back changed,
    so it is passed on exactly as the model returned it. A block without a signature (from
    another provider, or written by hand) keeps AgentScope's ``{"type", "thinking"}`` shape;
    the API refuses such a block, so :class:`~agentscope_rt.model.AnthropicChatModel` leaves
    it out of the request (Anthropic allows earlier turns' thinking to be omitted).
    """
    if block.signature:
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    return {"type": "thinking", "thinking": block.thinking}


class AnthropicChatFormatter(TruncatedFormatterBase):
    """Anthropic formatter for a conversation between a user and one agent.

    Accepted blocks: text, thinking (passed back with its ``signature``, as Anthropic
    requires; see :func:`format_anthropic_thinking_block`), image, tool_use,
    tool_result (text and images inside). Audio and video are dropped with an
    :class:`UnsupportedBlockWarning`. A system message other than the first becomes a user
    message (the API allows one system prompt).

    :param token_counter: counts tokens for truncation.
    :param max_tokens: the token budget; ``None`` means no truncation.
    """

    support_tools_api: bool = True
    support_multiagent: bool = False
    support_vision: bool = True

    @state_only_through_current_call
    async def _format(self, msgs: list[Msg]) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        for index, msg in enumerate(msgs):
            content: list[dict[str, Any]] = []
            for block in msg.get_content_blocks():
                if isinstance(block, TextBlock):
                    content.append({"type": "text", "text": block.text})
                elif isinstance(block, ThinkingBlock):
                    content.append(format_anthropic_thinking_block(block))
                elif isinstance(block, ImageBlock):
                    content.append(await format_anthropic_image_block(block))
                elif isinstance(block, ToolUseBlock):
                    content.append(
                        {
                            "id": block.id,
                            "type": "tool_use",
                            "name": block.name,
                            "input": block.input,
                        }
                    )
                elif isinstance(block, ToolResultBlock):
                    result = {
                        "type": "tool_result",
                        "tool_use_id": block.id,
                        "content": await self._tool_result_content(block.output),
                    }
                    messages.append({"role": "user", "content": [result]})
                else:
                    current_call().drop(block.type)
            role = "user" if msg.role == "system" and index != 0 else msg.role
            if content:
                messages.append({"role": role, "content": content})
        return messages

    @staticmethod
    async def _tool_result_content(output: Any) -> list[dict[str, Any]]:
        if output is None:
            return [{"type": "text", "text": ""}]
        if isinstance(output, str):
            return [{"type": "text", "text": output}]
        content: list[dict[str, Any]] = []
        for item in output:
            if item.type == "text":
                content.append({"type": "text", "text": item.text})
            elif item.type == "image":
                content.append(await format_anthropic_image_block(item))
            else:
                # Anthropic tool results carry text and images only.
                current_call().drop(item.type)
        return content


class AnthropicMultiAgentFormatter(MultiAgentFormatterBase):
    """Anthropic formatter for conversations with several named speakers.

    Plain messages are folded into one user message per run: ``name: text`` lines inside
    ``<history>...</history>``, images kept in place between the text blocks. Tool calls and
    results keep Anthropic's native shape (formatted by :class:`AnthropicChatFormatter`).

    :param conversation_history_prompt: text before the first ``<history>`` block.
    :param token_counter: counts tokens for truncation.
    :param max_tokens: the token budget; ``None`` means no truncation.
    """

    support_tools_api: bool = True
    support_multiagent: bool = True
    support_vision: bool = True

    chat_formatter_class = AnthropicChatFormatter

    async def _format_agent_message(self, msgs: list[Msg], prompt: str) -> list[dict[str, Any]]:
        items = await history_items(msgs, {"image": _anthropic_image})
        blocks = wrap_history_items(items, prompt, text_block={"type": "text"})
        return [{"role": "user", "content": blocks}] if blocks else []


async def _anthropic_image(msg: Msg, block: ImageBlock) -> dict[str, Any]:
    return await format_anthropic_image_block(block)
