"""Formatters for Ollama's chat API.

A message's text parts are joined into the ``content`` string; images go into ``images`` as
base64 strings (Ollama takes no image URLs, so local files are read and web URLs
downloaded); tool calls carry their arguments as a JSON object, not a string.
"""

from __future__ import annotations

from typing import Any

from ..message import ImageBlock, Msg, TextBlock, ToolResultBlock, ToolUseBlock, URLSource
from ._formatter_base import (
    ImagePromotingChatFormatterBase,
    MediaPromotingMultiAgentFormatterBase,
    history_items,
    state_only_through_current_call,
    wrap_history_items,
)
from ._media import current_call, fetch_base64, local_path_of, read_local_base64
from ._openai_formatter import openai_tool_call, openai_tool_message

__all__ = ["OllamaChatFormatter", "OllamaMultiAgentFormatter"]


async def format_ollama_image_block(block: ImageBlock) -> str:
    """An image block as the base64 string Ollama's ``images`` list takes.

    :raises FormatterError: for a missing local file or a failed download.
    """
    source = block.source
    if not isinstance(source, URLSource):
        return source.data
    path = local_path_of(source.url)
    if path is not None:
        data, _ = await read_local_base64(path)
        return data
    data, _, _ = await fetch_base64(source.url)
    return data


class OllamaChatFormatter(ImagePromotingChatFormatterBase):
    """Ollama formatter for a conversation between a user and one agent.

    Accepted blocks: text, image, tool_use, tool_result. Thinking is left out silently;
    audio and video are dropped with an :class:`UnsupportedBlockWarning`.

    :param promote_tool_result_images: show images from tool results in a following user
        message (tool messages carry text only).
    :param token_counter: counts tokens for truncation.
    :param max_tokens: the token budget; ``None`` means no truncation.
    """

    support_tools_api: bool = True
    support_multiagent: bool = False
    support_vision: bool = True

    @state_only_through_current_call
    async def _format(self, msgs: list[Msg]) -> list[dict[str, Any]]:
        promote = self._promoted_kinds()
        messages: list[dict[str, Any]] = []
        i = 0
        while i < len(msgs):
            msg = msgs[i]
            texts: list[str] = []
            tool_calls: list[dict[str, Any]] = []
            images: list[str] = []
            for block in msg.get_content_blocks():
                if isinstance(block, TextBlock):
                    texts.append(block.text)
                elif isinstance(block, ToolUseBlock):
                    tool_calls.append(openai_tool_call(block, arguments_as_json=False))
                elif isinstance(block, ToolResultBlock):
                    text = await self.tool_result_text(block, msgs, i, promote)
                    messages.append(openai_tool_message(block, text))
                elif isinstance(block, ImageBlock):
                    images.append(await format_ollama_image_block(block))
                elif block.type != "thinking":
                    current_call().drop(block.type)
            message: dict[str, Any] = {"role": msg.role, "content": "\n".join(texts) or None}
            if tool_calls:
                message["tool_calls"] = tool_calls
            if images:
                message["images"] = images
            if message["content"] or images or tool_calls:
                messages.append(message)
            i += 1
        return messages


class OllamaMultiAgentFormatter(MediaPromotingMultiAgentFormatterBase):
    """Ollama formatter for conversations with several named speakers.

    Plain messages are folded into one user message per run (``name: text`` lines inside
    ``<history>...</history>``, their images in ``images``); tool calls and results keep the
    native shape (formatted by :class:`OllamaChatFormatter`). The system prompt is sent as a
    plain string.

    :param conversation_history_prompt: text before the first ``<history>`` block.
    :param promote_tool_result_images: see :class:`OllamaChatFormatter`.
    :param token_counter: counts tokens for truncation.
    :param max_tokens: the token budget; ``None`` means no truncation.
    """

    support_tools_api: bool = True
    support_multiagent: bool = True
    support_vision: bool = True

    chat_formatter_class = OllamaChatFormatter

    async def _format_system_message(self, msg: Msg) -> dict[str, Any]:
        return {"role": "system", "content": msg.get_text_content()}

    async def _format_agent_message(self, msgs: list[Msg], prompt: str) -> list[dict[str, Any]]:
        items = await history_items(msgs, {"image": _ollama_image})
        if not items:
            return []
        # Each image leaves an empty block in its place, so the joined history keeps a blank
        # line where the image was (AgentScope's layout).
        blocks = wrap_history_items(items, prompt)
        message: dict[str, Any] = {
            "role": "user",
            "content": "\n".join(b.get("text", "") for b in blocks),
        }
        images = [i["image"] for i in items if not isinstance(i, str)]
        if images:
            message["images"] = images
        return [message]


async def _ollama_image(msg: Msg, block: ImageBlock) -> dict[str, str]:
    return {"image": await format_ollama_image_block(block)}
