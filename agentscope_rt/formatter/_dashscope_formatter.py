"""Formatters for DashScope (Qwen) chat models.

DashScope content parts are ``{"text": ...}``, ``{"image": url}``, ``{"audio": url}`` and
``{"video": url}``; web URLs pass through, local files become data URLs. Tool calls follow
OpenAI's ``tool_calls`` / ``role: "tool"`` shape. A message whose parts are all text is sent
with its text joined into one string (AgentScope does this for token counters that expect
plain strings).
"""

from __future__ import annotations

from typing import Any

import anyio

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
from ..token import TokenCounterBase
from ._errors import FormatterError
from ._formatter_base import (
    DEFAULT_CONVERSATION_HISTORY_PROMPT,
    MultiAgentFormatterBase,
    TruncatedFormatterBase,
    history_items,
    state_only_through_current_call,
    wrap_history_items,
)
from ._media import current_call, guess_media_type, local_path_of, read_local_base64
from ._openai_formatter import openai_tool_call, openai_tool_message

__all__ = ["DashScopeChatFormatter", "DashScopeMultiAgentFormatter"]


async def format_dashscope_media_block(
    block: ImageBlock | AudioBlock | VideoBlock,
) -> dict[str, str]:
    """An image/audio/video block as a DashScope part ``{type: url or data URL}``.

    :raises FormatterError: for a missing local file or one whose type is unknown.
    """
    typ = block.type
    source = block.source
    if not isinstance(source, URLSource):
        return {typ: f"data:{source.media_type};base64,{source.data}"}
    path = local_path_of(source.url)
    if path is None:
        return {typ: source.url}
    abs_path = str(await anyio.Path(path).absolute())
    media_type = guess_media_type(abs_path)
    if not media_type:
        raise FormatterError(
            f"cannot determine the media type of {abs_path!r}; use a file with a recognised "
            "extension (e.g. .png, .jpg, .mp3, .mp4)"
        )
    data, _ = await read_local_base64(abs_path)
    return {typ: f"data:{media_type};base64,{data}"}


def join_text_parts(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replace a content list made only of text parts by the non-empty texts joined by
    newlines (other messages are left as they are)."""
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        texts: list[str] = []
        for item in content:
            if not isinstance(item, dict) or "text" not in item:
                break
            if item.get("type", "text") != "text":
                break
            if item["text"]:
                texts.append(item["text"])
        else:
            if texts:
                message["content"] = "\n".join(texts)
    return messages


class DashScopeChatFormatter(TruncatedFormatterBase):
    """DashScope formatter for a conversation between a user and one agent.

    Accepted blocks: text, image, audio, video, tool_use, tool_result. Thinking is left out
    silently. A message without content parts gets ``content: []`` rather than ``None``
    (Qwen-VL models fail on a missing or ``None`` content).

    :param promote_tool_result_images: show images from tool results in a following user
        message (tool messages carry text only).
    :param promote_tool_result_audios: the same for audio.
    :param promote_tool_result_videos: the same for video.
    :param token_counter: counts tokens for truncation.
    :param max_tokens: the token budget; ``None`` means no truncation.
    """

    support_tools_api: bool = True
    support_multiagent: bool = False
    support_vision: bool = True

    def __init__(
        self,
        promote_tool_result_images: bool = False,
        promote_tool_result_audios: bool = False,
        promote_tool_result_videos: bool = False,
        token_counter: TokenCounterBase | None = None,
        max_tokens: int | None = None,
    ) -> None:
        super().__init__(token_counter, max_tokens)
        self.promote_tool_result_images = promote_tool_result_images
        self.promote_tool_result_audios = promote_tool_result_audios
        self.promote_tool_result_videos = promote_tool_result_videos

    def _promoted_kinds(self) -> tuple[str, ...]:
        flags = (
            ("image", self.promote_tool_result_images),
            ("audio", self.promote_tool_result_audios),
            ("video", self.promote_tool_result_videos),
        )
        return tuple(kind for kind, on in flags if on)

    @state_only_through_current_call
    async def _format(self, msgs: list[Msg]) -> list[dict[str, Any]]:
        promote = self._promoted_kinds()
        formatted: list[dict[str, Any]] = []
        i = 0
        while i < len(msgs):
            msg = msgs[i]
            content: list[dict[str, Any]] = []
            tool_calls: list[dict[str, Any]] = []
            for block in msg.get_content_blocks():
                if isinstance(block, TextBlock):
                    content.append({"text": block.text})
                elif isinstance(block, ImageBlock | AudioBlock | VideoBlock):
                    content.append(await format_dashscope_media_block(block))
                elif isinstance(block, ToolUseBlock):
                    tool_calls.append(openai_tool_call(block))
                elif isinstance(block, ToolResultBlock):
                    text = await self.tool_result_text(block, msgs, i, promote, "media")
                    formatted.append(openai_tool_message(block, text))
                elif block.type != "thinking":
                    current_call().drop(block.type)
            message: dict[str, Any] = {"role": msg.role, "content": content}
            if tool_calls:
                message["tool_calls"] = tool_calls
            if content or tool_calls:
                formatted.append(message)
            i += 1
        return join_text_parts(formatted)


class DashScopeMultiAgentFormatter(MultiAgentFormatterBase):
    """DashScope formatter for conversations with several named speakers.

    Plain messages are folded into one user message per run (``name: text`` lines inside
    ``<history>...</history>``, media parts kept in place); tool calls and results keep the
    native shape (formatted by :class:`DashScopeChatFormatter`). The system prompt is sent as
    a plain string.

    :param conversation_history_prompt: text before the first ``<history>`` block.
    :param promote_tool_result_images: see :class:`DashScopeChatFormatter`.
    :param promote_tool_result_audios: see :class:`DashScopeChatFormatter`.
    :param promote_tool_result_videos: see :class:`DashScopeChatFormatter`.
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
        promote_tool_result_audios: bool = False,
        promote_tool_result_videos: bool = False,
        token_counter: TokenCounterBase | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self.promote_tool_result_images = promote_tool_result_images
        self.promote_tool_result_audios = promote_tool_result_audios
        self.promote_tool_result_videos = promote_tool_result_videos
        super().__init__(conversation_history_prompt, token_counter, max_tokens)

    chat_formatter_class = DashScopeChatFormatter

    def _new_chat_formatter(self) -> DashScopeChatFormatter:
        return DashScopeChatFormatter(
            promote_tool_result_images=self.promote_tool_result_images,
            promote_tool_result_audios=self.promote_tool_result_audios,
            promote_tool_result_videos=self.promote_tool_result_videos,
        )

    async def _format_system_message(self, msg: Msg) -> dict[str, Any]:
        return {"role": "system", "content": msg.get_text_content()}

    async def _format_agent_message(self, msgs: list[Msg], prompt: str) -> list[dict[str, Any]]:
        media = _dashscope_media
        items = await history_items(msgs, {"image": media, "audio": media, "video": media})
        blocks = wrap_history_items(items, prompt)
        return join_text_parts([{"role": "user", "content": blocks}]) if blocks else []


async def _dashscope_media(msg: Msg, block: ImageBlock | AudioBlock | VideoBlock) -> dict[str, str]:
    return await format_dashscope_media_block(block)
