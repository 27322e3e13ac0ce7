"""Formatters for Ollama's chat API.

A message's text parts are joined into the ``content`` string; images go into ``images`` as
base64 strings (Ollama takes no image URLs, so local files are read and web URLs
downloaded); tool calls carry their arguments as a JSON object, not a string.
"""

from __future__ import annotations

from typing import Any

from ..message import ImageBlock, Msg, URLSource
from ..token import TokenCounterBase
from ._formatter_base import (
    DEFAULT_CONVERSATION_HISTORY_PROMPT,
    MultiAgentFormatterBase,
    TruncatedFormatterBase,
    wrap_history,
)
from ._media import current_call, fetch_base64, local_path_of, read_local_base64
from ._openai_formatter import openai_tool_call, promoted_media_msg

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


class OllamaChatFormatter(TruncatedFormatterBase):
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

    def __init__(
        self,
        promote_tool_result_images: bool = False,
        token_counter: TokenCounterBase | None = None,
        max_tokens: int | None = None,
    ) -> None:
        super().__init__(token_counter, max_tokens)
        self.promote_tool_result_images = promote_tool_result_images

    async def _format(self, msgs: list[Msg]) -> list[dict[str, Any]]:
        call = current_call()
        messages: list[dict[str, Any]] = []
        i = 0
        while i < len(msgs):
            msg = msgs[i]
            texts: list[str] = []
            tool_calls: list[dict[str, Any]] = []
            images: list[str] = []
            for block in msg.get_content_blocks():
                typ = block.type
                if typ == "text":
                    texts.append(block.text)  # type: ignore[union-attr]
                elif typ == "tool_use":
                    tool_calls.append(openai_tool_call(block, arguments_as_json=False))
                elif typ == "tool_result":
                    text, media = await self.convert_tool_result_to_string(block.output)  # type: ignore[union-attr]
                    messages.append(
                        {
                            "role": "tool",
                            "tool_call_id": block.id,  # type: ignore[union-attr]
                            "content": text,
                            "name": block.name,  # type: ignore[union-attr]
                        }
                    )
                    if self.promote_tool_result_images:
                        promoted = promoted_media_msg(block.name, media, {"image"}, "image")  # type: ignore[union-attr]
                        if promoted is not None:
                            msgs.insert(i + 1, promoted)
                elif typ == "image":
                    images.append(await format_ollama_image_block(block))  # type: ignore[arg-type]
                elif typ != "thinking":
                    call.drop(typ)
            message: dict[str, Any] = {"role": msg.role, "content": "\n".join(texts) or None}
            if tool_calls:
                message["tool_calls"] = tool_calls
            if images:
                message["images"] = images
            if message["content"] or images or tool_calls:
                messages.append(message)
            i += 1
        return messages


class OllamaMultiAgentFormatter(MultiAgentFormatterBase):
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

    def __init__(
        self,
        conversation_history_prompt: str = DEFAULT_CONVERSATION_HISTORY_PROMPT,
        promote_tool_result_images: bool = False,
        token_counter: TokenCounterBase | None = None,
        max_tokens: int | None = None,
    ) -> None:
        super().__init__(token_counter=token_counter, max_tokens=max_tokens)
        self.conversation_history_prompt = conversation_history_prompt
        self.promote_tool_result_images = promote_tool_result_images
        self._chat = OllamaChatFormatter(promote_tool_result_images=promote_tool_result_images)

    async def _format_system_message(self, msg: Msg) -> dict[str, Any]:
        return {"role": "system", "content": msg.get_text_content()}

    async def _format_tool_sequence(self, msgs: list[Msg]) -> list[dict[str, Any]]:
        return await self._chat._format(list(msgs))

    async def _format_agent_message(
        self, msgs: list[Msg], is_first: bool = True
    ) -> list[dict[str, Any]]:
        call = current_call()
        prompt = self.conversation_history_prompt if is_first else ""
        # Image positions stay in the block list as empty text, so the joined history keeps
        # a blank line where each image was (AgentScope's layout).
        blocks: list[dict[str, Any]] = []
        lines: list[str] = []
        images: list[str] = []
        for msg in msgs:
            for block in msg.get_content_blocks():
                typ = block.type
                if typ == "text":
                    lines.append(f"{msg.name}: {block.text}")  # type: ignore[union-attr]
                elif typ == "image":
                    if lines:
                        blocks.append({"text": "\n".join(lines)})
                        lines = []
                    images.append(await format_ollama_image_block(block))  # type: ignore[arg-type]
                    blocks.append({"image": True})
                elif typ != "thinking":
                    call.drop(typ)
        if lines:
            blocks.append({"text": "\n".join(lines)})
        if not blocks:
            return []
        blocks = wrap_history(blocks, prompt)
        message: dict[str, Any] = {
            "role": "user",
            "content": "\n".join(b.get("text", "") for b in blocks),
        }
        if images:
            message["images"] = images
        return [message]
