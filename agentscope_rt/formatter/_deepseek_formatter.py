"""Formatters for DeepSeek's (OpenAI-compatible, text-only) chat API.

Content is a plain string; an assistant's thinking goes back as ``reasoning_content``; tool
calls follow OpenAI's ``tool_calls`` / ``role: "tool"`` shape. DeepSeek takes no media, so
image, audio and video blocks are dropped with an :class:`UnsupportedBlockWarning`.
"""

from __future__ import annotations

from typing import Any

from ..message import Msg, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from ._formatter_base import (
    MultiAgentFormatterBase,
    TruncatedFormatterBase,
    history_items,
    state_only_through_current_call,
    wrap_history,
)
from ._media import current_call
from ._openai_formatter import openai_tool_call, openai_tool_message

__all__ = ["DeepSeekChatFormatter", "DeepSeekMultiAgentFormatter"]


class DeepSeekChatFormatter(TruncatedFormatterBase):
    """DeepSeek formatter for a conversation between a user and one agent.

    Accepted blocks: text, thinking (as ``reasoning_content``), tool_use, tool_result.

    :param token_counter: counts tokens for truncation.
    :param max_tokens: the token budget; ``None`` means no truncation.
    """

    support_tools_api: bool = True
    support_multiagent: bool = False
    support_vision: bool = False

    @state_only_through_current_call
    async def _format(self, msgs: list[Msg]) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        for index, msg in enumerate(msgs):
            texts: list[str] = []
            reasoning: list[str] = []
            tool_calls: list[dict[str, Any]] = []
            for block in msg.get_content_blocks():
                if isinstance(block, TextBlock):
                    texts.append(block.text)
                elif isinstance(block, ThinkingBlock):
                    reasoning.append(block.thinking)
                elif isinstance(block, ToolUseBlock):
                    tool_calls.append(openai_tool_call(block))
                elif isinstance(block, ToolResultBlock):
                    text = await self.tool_result_text(block, msgs, index)
                    messages.append(openai_tool_message(block, text))
                else:
                    current_call().drop(block.type)
            content = "\n".join(texts)
            message: dict[str, Any] = {
                "role": msg.role,
                "content": content or (None if tool_calls else ""),
            }
            if reasoning:
                message["reasoning_content"] = "\n".join(reasoning)
            if tool_calls:
                message["tool_calls"] = tool_calls
            if message["content"] or tool_calls:
                messages.append(message)
        return messages


class DeepSeekMultiAgentFormatter(MultiAgentFormatterBase):
    """DeepSeek formatter for conversations with several named speakers.

    Plain messages are folded into one user message per run (``name: text`` lines inside
    ``<history>...</history>``, as one string); tool calls and results keep the native shape
    (formatted by :class:`DeepSeekChatFormatter`).

    :param conversation_history_prompt: text before the first ``<history>`` block.
    :param token_counter: counts tokens for truncation.
    :param max_tokens: the token budget; ``None`` means no truncation.
    """

    support_tools_api: bool = True
    support_multiagent: bool = True
    support_vision: bool = False

    chat_formatter_class = DeepSeekChatFormatter

    async def _format_agent_message(self, msgs: list[Msg], prompt: str) -> list[dict[str, Any]]:
        # DeepSeek takes no media: every block but text is dropped.
        items = await history_items(msgs, {})
        if not items:
            return []
        blocks = wrap_history([{"text": "\n".join(map(str, items))}], prompt)
        return [{"role": "user", "content": "\n".join(b["text"] for b in blocks)}]
