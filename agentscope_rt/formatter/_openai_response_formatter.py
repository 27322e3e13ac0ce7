"""Formatters for OpenAI's Responses API (:class:`~agentscope_rt.model.OpenAIResponseModel`).

The Responses API takes a list of input items. Text goes into message items as ``input_text``
parts (``output_text`` for the assistant's own words), images as ``input_image`` parts with an
``image_url`` string, user audio as ``input_audio``; a tool call is a top-level
``function_call`` item after its message and a tool result a ``function_call_output`` item, as
in AgentScope. A thinking block that carries the API's encrypted reasoning (see
:func:`~agentscope_rt.model._openai_response_model.reasoning_signature`) goes back as the
``reasoning`` item it came from, right before the items it led to; other thinking is left out.
"""

from __future__ import annotations

from typing import Any

from .._provider import reasoning_input_item
from ..message import ImageBlock, Msg, ThinkingBlock
from ._formatter_base import (
    ImagePromotingChatFormatterBase,
    MediaPromotingMultiAgentFormatterBase,
    history_items,
    state_only_through_current_call,
)
from ._media import current_call
from ._openai_formatter import (
    _AUDIO,
    _BLOCK_KINDS,
    _IMAGE,
    _TEXT,
    _TOOL_RESULT,
    _TOOL_USE,
    _block_kind,
    _encode_json,
    _openai_history_message,
    _openai_input_audio,
    format_openai_image_block,
)

__all__ = ["OpenAIResponseChatFormatter", "OpenAIResponseMultiAgentFormatter"]


async def format_openai_response_image_block(block: ImageBlock) -> dict[str, Any]:
    """An image block as a Responses API ``input_image`` part.

    Web and data URLs pass through; local paths and ``file://`` URLs are read (without
    blocking) and sent as a base64 data URL.

    :raises FormatterError: for a missing local file or one that is not an image.
    """
    part = await format_openai_image_block(block)
    return {"type": "input_image", "image_url": part["image_url"]["url"]}


async def _response_image(msg: Msg, block: ImageBlock) -> dict[str, Any]:
    return await format_openai_response_image_block(block)


class OpenAIResponseChatFormatter(ImagePromotingChatFormatterBase):
    """Responses API formatter for a conversation between a user and one agent.

    Each message becomes a ``{"role", "content"}`` item, followed by its tool calls
    (``function_call``) and tool results (``function_call_output``). Accepted blocks: text,
    image, audio (user messages; an assistant's own audio output is left out, as in
    AgentScope), tool_use, tool_result, and thinking that carries encrypted reasoning (sent
    back as a ``reasoning`` item before the message); other thinking is left out silently,
    video is dropped with an :class:`UnsupportedBlockWarning`.

    :param promote_tool_result_images: also show images from tool results in a user message
        right after the ``function_call_output`` (which carries text only).
    :param token_counter: counts tokens for truncation.
    :param max_tokens: the token budget; ``None`` means no truncation.
    """

    support_tools_api: bool = True
    support_multiagent: bool = True
    support_vision: bool = True

    @state_only_through_current_call
    async def _format(self, msgs: list[Msg]) -> list[dict[str, Any]]:
        promote = self._promoted_kinds()
        items: list[dict[str, Any]] = []
        # enumerate() sees the messages tool_result_text inserts after the current one.
        for i, msg in enumerate(msgs):
            text_type = "output_text" if msg.role == "assistant" else "input_text"
            raw = msg.content
            if raw.__class__ is str:
                items.append({"role": msg.role, "content": [{"type": text_type, "text": raw}]})
                continue
            reasoning: list[dict[str, Any]] = []
            content: list[dict[str, Any]] = []
            trailing: list[dict[str, Any]] = []
            block: Any
            for block in raw:
                kind = _BLOCK_KINDS.get(block.__class__) or _block_kind(block)
                if kind == _TEXT:
                    content.append({"type": text_type, "text": block.text})
                elif kind == _TOOL_USE:
                    trailing.append(
                        {
                            "type": "function_call",
                            "call_id": block.id,
                            "name": block.name,
                            "arguments": _encode_json(block.input),
                        }
                    )
                elif kind == _TOOL_RESULT:
                    text = await self.tool_result_text(block, msgs, i, promote)
                    trailing.append(
                        {"type": "function_call_output", "call_id": block.id, "output": text}
                    )
                elif kind == _IMAGE:
                    content.append(await format_openai_response_image_block(block))
                elif kind == _AUDIO:
                    audio = await _openai_input_audio(msg, block)
                    if audio is not None:
                        content.append(audio)
                elif isinstance(block, ThinkingBlock):
                    item = reasoning_input_item(block) if msg.role == "assistant" else None
                    if item is not None:
                        reasoning.append(item)
                else:
                    current_call().drop(block.type)
            # The API takes reasoning back only right before the output it led to.
            items.extend(reasoning)
            if content:
                items.append({"role": msg.role, "content": content})
            items.extend(trailing)
        return items


class OpenAIResponseMultiAgentFormatter(MediaPromotingMultiAgentFormatterBase):
    """Responses API formatter for conversations with several named speakers.

    Plain messages are folded into one user message per run, ``name: text`` lines inside
    ``<history>...</history>`` as one ``input_text`` part, with images and then audio appended
    as parts; tool calls and results keep the API's native items (formatted by
    :class:`OpenAIResponseChatFormatter`).

    :param conversation_history_prompt: text before the first ``<history>`` block.
    :param promote_tool_result_images: see :class:`OpenAIResponseChatFormatter`.
    :param token_counter: counts tokens for truncation.
    :param max_tokens: the token budget; ``None`` means no truncation.
    """

    support_tools_api: bool = True
    support_multiagent: bool = True
    support_vision: bool = True

    chat_formatter_class = OpenAIResponseChatFormatter

    async def _format_system_message(self, msg: Msg) -> dict[str, Any]:
        return {
            "role": "system",
            "content": [
                {"type": "input_text", "text": b.text} for b in msg.get_content_blocks("text")
            ],
        }

    async def _format_agent_message(self, msgs: list[Msg], prompt: str) -> list[dict[str, Any]]:
        items = await history_items(msgs, {"image": _response_image, "audio": _openai_input_audio})
        return _openai_history_message(items, prompt, "input_text", "input_image")
