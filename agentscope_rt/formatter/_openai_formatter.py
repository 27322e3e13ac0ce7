"""Formatters for OpenAI's Chat Completions API (and OpenAI-compatible servers).

Text and images go into ``content`` parts (``text``, ``image_url``), user audio into
``input_audio``; tool calls become the assistant message's ``tool_calls`` and each tool
result its own ``role: "tool"`` message. The ``name`` field carries the speaker.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..message import (
    AudioBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
)
from ._errors import FormatterError
from ._formatter_base import (
    ImagePromotingChatFormatterBase,
    MediaPromotingMultiAgentFormatterBase,
    history_items,
    state_only_through_current_call,
    wrap_history,
)
from ._media import current_call, fetch_base64, local_path_of, read_local_base64, read_local_image

__all__ = ["OpenAIChatFormatter", "OpenAIMultiAgentFormatter"]

# Audio formats ``input_audio`` accepts, by MIME type.
_OPENAI_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/mp3": "mp3",
    "audio/mpeg": "mp3",
}


async def format_openai_image_block(block: ImageBlock) -> dict[str, Any]:
    """An image block as an OpenAI ``image_url`` part.

    Web and data URLs pass through; local paths and ``file://`` URLs are read (without
    blocking) and sent as a base64 data URL.

    :raises FormatterError: for a missing local file or one that is not an image.
    """
    source = block.source
    if isinstance(source, URLSource):
        url = await _to_openai_image_url(source.url)
    else:
        url = f"data:{source.media_type};base64,{source.data}"
    return {"type": "image_url", "image_url": {"url": url}}


async def _to_openai_image_url(url: str) -> str:
    path = local_path_of(url)
    if path is None:
        return url
    media_type, data = await read_local_image(path, url, "OpenAI")
    return f"data:{media_type};base64,{data}"


async def format_openai_audio_data(block: AudioBlock) -> dict[str, str]:
    """An audio block as OpenAI's ``input_audio`` payload ``{"data", "format"}``.

    ``input_audio`` takes base64 wav or mp3 only, so web URLs are downloaded.

    :raises FormatterError: for other formats, missing files or failed downloads.
    """
    source = block.source
    if isinstance(source, URLSource):
        url = source.url
        path = local_path_of(url)
        extension = (path or url).rsplit(".", 1)[-1].lower()
        if extension not in ("wav", "mp3"):
            raise FormatterError(
                f"audio {url!r} has extension {extension!r}; OpenAI input_audio accepts wav and mp3"
            )
        if path is not None:
            data, _ = await read_local_base64(path)
        else:
            data, _, _ = await fetch_base64(url)
        return {"data": data, "format": extension}
    audio_format = _OPENAI_AUDIO_FORMATS.get(source.media_type)
    if audio_format is None:
        raise FormatterError(
            f"audio media type {source.media_type!r} is not accepted by OpenAI input_audio "
            "(use audio/wav or audio/mp3)"
        )
    return {"data": source.data, "format": audio_format}


# Numbered from 1, so no kind is false: ``_BLOCK_KINDS.get(block.__class__) or
# _block_kind(block)`` is the whole lookup, in both OpenAI formatters.
_TEXT, _TOOL_USE, _TOOL_RESULT, _IMAGE, _AUDIO, _OTHER = range(1, 7)
_KIND_CLASSES = (
    (TextBlock, _TEXT),
    (ToolUseBlock, _TOOL_USE),
    (ToolResultBlock, _TOOL_RESULT),
    (ImageBlock, _IMAGE),
    (AudioBlock, _AUDIO),
)
# Exact block classes resolved by one dict lookup; subclasses by isinstance, in this order.
_BLOCK_KINDS: dict[type, int] = {cls: kind for cls, kind in _KIND_CLASSES}


def _block_kind(block: Any) -> int:
    for cls, kind in _KIND_CLASSES:
        if isinstance(block, cls):
            return kind
    return _OTHER


def _json_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False)`` for the arguments of every tool call.

    ``JSONEncoder.encode`` builds a new C encoder on every call (most of its cost for a small
    dict); this one is built once. It skips the circular-reference check: tool arguments are
    JSON data (a cycle ends in ``RecursionError`` instead of ``ValueError``).
    """
    encoder = json.JSONEncoder(ensure_ascii=False)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator (another interpreter): the standard path
        return encoder.encode
    chunks = make(
        None,
        encoder.default,
        json.encoder.encode_basestring,
        None,
        encoder.key_separator,
        encoder.item_separator,
        False,
        False,
        True,
    )

    def encode(value: Any) -> str:
        return "".join(chunks(value, 0))

    return encode


_encode_json = _json_encoder()


def openai_tool_call(block: ToolUseBlock, *, arguments_as_json: bool = True) -> dict[str, Any]:
    """A tool_use block as an OpenAI ``tool_calls`` entry (Ollama takes the arguments as an
    object: ``arguments_as_json=False``)."""
    arguments: Any = block.input
    if arguments_as_json:
        arguments = _encode_json(arguments)
    return {
        "id": block.id,
        "type": "function",
        "function": {"name": block.name, "arguments": arguments},
    }


def openai_tool_message(block: ToolResultBlock, text: str) -> dict[str, Any]:
    """A tool result as an OpenAI-style ``role: "tool"`` message (also DashScope, DeepSeek,
    Ollama)."""
    return {"role": "tool", "tool_call_id": block.id, "content": text, "name": block.name}


async def _openai_input_audio(msg: Msg, block: AudioBlock) -> dict[str, Any] | None:
    # An assistant's audio output cannot be sent back as input.
    if msg.role == "assistant":
        return None
    return {"type": "input_audio", "input_audio": await format_openai_audio_data(block)}


async def _openai_image(msg: Msg, block: ImageBlock) -> dict[str, Any]:
    return await format_openai_image_block(block)


def _openai_history_message(
    items: list[str | dict[str, Any]], prompt: str, text_type: str, image_type: str
) -> list[dict[str, Any]]:
    """The user message of a multi-agent history run (Chat Completions and Responses API):
    the ``name: text`` lines wrapped in ``<history>`` as one *text_type* part, then the
    *image_type* parts, then the ``input_audio`` parts; no message when there is no part."""
    texts = [item for item in items if isinstance(item, str)]
    blocks = wrap_history([{"text": "\n".join(texts)}] if texts else [], prompt)
    text = "\n".join(b["text"] for b in blocks)
    content: list[dict[str, Any]] = [{"type": text_type, "text": text}] if text else []
    # Images first, then audio, as AgentScope orders them.
    content.extend(i for i in items if isinstance(i, dict) and i["type"] == image_type)
    content.extend(i for i in items if isinstance(i, dict) and i["type"] == "input_audio")
    return [{"role": "user", "content": content}] if content else []


class OpenAIChatFormatter(ImagePromotingChatFormatterBase):
    """OpenAI formatter for a conversation between a user and one agent.

    Each message keeps its role and its speaker in ``name``. Accepted blocks: text, image,
    audio (user messages; an assistant's own audio output is left out, as in AgentScope),
    tool_use and tool_result. Thinking is left out silently; video is dropped with an
    :class:`UnsupportedBlockWarning`.

    :param promote_tool_result_images: also show images from tool results in a following user
        message (tool messages carry text only).
    :param token_counter: counts tokens for truncation.
    :param max_tokens: the token budget; ``None`` means no truncation.
    """

    support_tools_api: bool = True
    support_multiagent: bool = True
    support_vision: bool = True

    @state_only_through_current_call
    async def _format(self, msgs: list[Msg]) -> list[dict[str, Any]]:
        promote = self._promoted_kinds()
        messages: list[dict[str, Any]] = []
        # enumerate() sees the messages tool_result_text inserts after the current one.
        for i, msg in enumerate(msgs):
            raw = msg.content
            if raw.__class__ is str:
                messages.append(
                    {"role": msg.role, "name": msg.name, "content": [{"type": "text", "text": raw}]}
                )
                continue
            content: list[dict[str, Any]] = []
            tool_calls: list[dict[str, Any]] = []
            block: Any
            for block in raw:
                kind = _BLOCK_KINDS.get(block.__class__) or _block_kind(block)
                if kind == _TEXT:
                    content.append({"type": "text", "text": block.text})
                elif kind == _TOOL_USE:
                    tool_calls.append(openai_tool_call(block))
                elif kind == _TOOL_RESULT:
                    text = await self.tool_result_text(block, msgs, i, promote)
                    messages.append(openai_tool_message(block, text))
                elif kind == _IMAGE:
                    content.append(await format_openai_image_block(block))
                elif kind == _AUDIO:
                    audio = await _openai_input_audio(msg, block)
                    if audio is not None:
                        content.append(audio)
                elif block.type != "thinking":
                    current_call().drop(block.type)
            formatted: dict[str, Any] = {
                "role": msg.role,
                "name": msg.name,
                "content": content or None,
            }
            if tool_calls:
                formatted["tool_calls"] = tool_calls
            if content or tool_calls:
                messages.append(formatted)
        return messages


class OpenAIMultiAgentFormatter(MediaPromotingMultiAgentFormatterBase):
    """OpenAI formatter for conversations with several named speakers.

    Plain messages are folded into one user message per run, ``name: text`` lines inside
    ``<history>...</history>``, with images and audio appended as parts; tool calls and
    results keep OpenAI's native shape (formatted by :class:`OpenAIChatFormatter`).

    :param conversation_history_prompt: text before the first ``<history>`` block.
    :param promote_tool_result_images: see :class:`OpenAIChatFormatter`.
    :param token_counter: counts tokens for truncation.
    :param max_tokens: the token budget; ``None`` means no truncation.
    """

    support_tools_api: bool = True
    support_multiagent: bool = True
    support_vision: bool = True

    chat_formatter_class = OpenAIChatFormatter

    async def _format_agent_message(self, msgs: list[Msg], prompt: str) -> list[dict[str, Any]]:
        items = await history_items(msgs, {"image": _openai_image, "audio": _openai_input_audio})
        return _openai_history_message(items, prompt, "text", "image_url")
