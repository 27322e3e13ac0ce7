"""Formatters for Google's Gemini API.

Messages are ``{"role": "user" | "model", "parts": [...]}`` (the leading system prompt has
role ``"system"``: :class:`~agentscope_rt.model.GeminiChatModel` sends it as the request's
``systemInstruction``, where AgentScope sent it as a user turn); parts are ``{"text"}``,
``{"inline_data": {"data", "mime_type"}}``, ``{"function_call": {"id", "name", "args"}}`` and
``{"function_response": {"id", "name", "response": {"output"}}}`` — the field names AgentScope
uses (the Gemini REST API accepts these snake_case names as well as camelCase). Media is
always sent inline, so local files are read and web URLs downloaded.

A text or tool-use block that carries Gemini's ``thought_signature`` (base64, as the model
stored it) gets it back on its part, unchanged: thinking models reject a later turn whose
function calls lost their signatures.
"""

from __future__ import annotations

from typing import Any

from ..message import (
    AudioBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
    VideoBlock,
)
from ._errors import FormatterError
from ._formatter_base import (
    ImagePromotingChatFormatterBase,
    MediaPromotingMultiAgentFormatterBase,
    history_items,
    state_only_through_current_call,
    wrap_history_items,
)
from ._media import (
    current_call,
    fetch_base64,
    guess_media_type,
    local_path_of,
    read_local_base64,
)

__all__ = ["GeminiChatFormatter", "GeminiMultiAgentFormatter"]

# Gemini's documented media formats by kind; the MIME type is "<kind>/<extension>" as in
# AgentScope. Other extensions fall back to Python's mimetypes table (e.g. .jpg -> image/jpeg).
SUPPORTED_EXTENSIONS: dict[str, list[str]] = {
    "image": ["png", "jpeg", "webp", "heic", "heif"],
    "video": ["mp4", "mpeg", "mov", "avi", "x-flv", "mpg", "webm", "wmv", "3gpp"],
    "audio": ["mp3", "wav", "aiff", "aac", "ogg", "flac"],
}


def _gemini_media_type(url: str) -> str | None:
    extension = url.rsplit(".", 1)[-1].lower()
    for kind, extensions in SUPPORTED_EXTENSIONS.items():
        if extension in extensions:
            return f"{kind}/{extension}"
    return guess_media_type(url)


async def format_gemini_media_block(
    block: ImageBlock | AudioBlock | VideoBlock,
) -> dict[str, Any]:
    """An image/audio/video block as a Gemini ``inline_data`` part.

    :raises FormatterError: for an unknown media type, a missing file or a failed download.
    """
    source = block.source
    if not isinstance(source, URLSource):
        return {"inline_data": {"data": source.data, "mime_type": source.media_type}}
    url = source.url
    path = local_path_of(url)
    media_type = _gemini_media_type(path if path is not None else url.split("?", 1)[0])
    if path is not None:
        data, _ = await read_local_base64(path)
    else:
        data, _, served_type = await fetch_base64(url)
        media_type = media_type or served_type
    if media_type is None:
        raise FormatterError(
            f"cannot determine the media type of {url!r}; Gemini accepts {SUPPORTED_EXTENSIONS}"
        )
    return {"inline_data": {"data": data, "mime_type": media_type}}


def _gemini_role(msg: Msg, index: int) -> str:
    if msg.role == "assistant":
        return "model"
    # Only the leading system prompt becomes systemInstruction; a later system message (a
    # tool result, a hint) stays a user turn in its place.
    return "system" if msg.role == "system" and index == 0 else "user"


class GeminiChatFormatter(ImagePromotingChatFormatterBase):
    """Gemini formatter for a conversation between a user and one agent.

    Accepted blocks: text, image, audio, video, tool_use, tool_result. Thinking is left out
    silently. Assistant messages get role ``model``, a leading system message ``system`` (sent
    as ``systemInstruction`` by the model), everything else ``user``.

    :param promote_tool_result_images: show images from tool results in a following user
        message (function responses carry text only).
    :param token_counter: counts tokens for truncation.
    :param max_tokens: the token budget; ``None`` means no truncation.
    """

    support_tools_api: bool = True
    support_multiagent: bool = False
    support_vision: bool = True
    supported_extensions: dict[str, list[str]] = SUPPORTED_EXTENSIONS

    @state_only_through_current_call
    async def _format(self, msgs: list[Msg]) -> list[dict[str, Any]]:
        promote = self._promoted_kinds()
        messages: list[dict[str, Any]] = []
        i = 0
        while i < len(msgs):
            msg = msgs[i]
            parts: list[dict[str, Any]] = []
            for block in msg.get_content_blocks():
                if isinstance(block, TextBlock):
                    part: dict[str, Any] = {"text": block.text}
                    if block.thought_signature is not None:
                        part["thought_signature"] = block.thought_signature
                    parts.append(part)
                elif isinstance(block, ToolUseBlock):
                    part = {"function_call": {"id": None, "name": block.name, "args": block.input}}
                    if block.thought_signature is not None:
                        part["thought_signature"] = block.thought_signature
                    parts.append(part)
                elif isinstance(block, ToolResultBlock):
                    text = await self.tool_result_text(block, msgs, i, promote)
                    response = {"id": block.id, "name": block.name, "response": {"output": text}}
                    messages.append({"role": "user", "parts": [{"function_response": response}]})
                elif isinstance(block, ImageBlock | AudioBlock | VideoBlock):
                    parts.append(await format_gemini_media_block(block))
                elif block.type != "thinking":
                    current_call().drop(block.type)
            if parts:
                messages.append({"role": _gemini_role(msg, i), "parts": parts})
            i += 1
        return messages


class GeminiMultiAgentFormatter(MediaPromotingMultiAgentFormatterBase):
    """Gemini formatter for conversations with several named speakers.

    The system prompt keeps role ``system`` (sent as ``systemInstruction``); plain messages
    are folded
    into one user message per run (``name: text`` lines inside ``<history>...</history>``,
    media parts kept in place); tool calls and results keep Gemini's native shape.

    :param conversation_history_prompt: text before the first ``<history>`` block.
    :param promote_tool_result_images: see :class:`GeminiChatFormatter`.
    :param token_counter: counts tokens for truncation.
    :param max_tokens: the token budget; ``None`` means no truncation.
    """

    support_tools_api: bool = True
    support_multiagent: bool = True
    support_vision: bool = True

    chat_formatter_class = GeminiChatFormatter

    async def _format_system_message(self, msg: Msg) -> dict[str, Any]:
        return {"role": "system", "parts": [{"text": msg.get_text_content()}]}

    async def _format_agent_message(self, msgs: list[Msg], prompt: str) -> list[dict[str, Any]]:
        media = _gemini_media
        items = await history_items(msgs, {"image": media, "audio": media, "video": media})
        # AgentScope's Gemini layout has no newline after the opening tag.
        parts = wrap_history_items(items, prompt, open_tag="<history>")
        return [{"role": "user", "parts": parts}] if parts else []


async def _gemini_media(msg: Msg, block: ImageBlock | AudioBlock | VideoBlock) -> dict[str, Any]:
    return await format_gemini_media_block(block)
