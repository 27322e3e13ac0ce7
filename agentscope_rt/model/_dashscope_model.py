"""DashScope (Qwen and friends) through its OpenAI-compatible endpoint.

DashScope serves the OpenAI chat completions protocol at
``https://dashscope.aliyuncs.com/compatible-mode/v1``, so this model is
:class:`OpenAIChatModel` pointed there: the same streaming, retries, tool calls and structured
output. Reasoning (``enable_thinking``) arrives as ``reasoning_content`` and becomes
:class:`ThinkingBlock`.

The DashScope formatters produce DashScope-native content parts (``{"text": ...}``,
``{"image": url}``, ``{"audio": url}``, ``{"video": url}``), as AgentScope's do; this model
turns them into the parts the compatible endpoint documents before sending (see
:func:`compatible_messages`). Messages already in that shape are sent as they are.

Differences from AgentScope's ``DashScopeChatModel`` (which uses the ``dashscope`` SDK):
``api_key`` may come from ``DASHSCOPE_API_KEY``; ``multimodality`` is accepted for
compatibility but has no effect, because the compatible endpoint serves text and multimodal
models alike; ``base_http_api_url`` replaces the compatible-mode base URL.
"""

from __future__ import annotations

import posixpath
import urllib.parse
from typing import Any, ClassVar

from .._schema import StructuredModel
from ._common import check_formatted_messages, logger, resolve_api_key
from ._model_base import ToolChoice
from ._openai_model import OpenAIChatModel
from ._retry import RetryConfig

__all__ = ["DASHSCOPE_BASE_URL", "DashScopeChatModel", "compatible_messages"]

DASHSCOPE_BASE_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"
"""DashScope's OpenAI-compatible endpoint (use the ``dashscope-intl`` host outside China)."""

# MIME subtypes whose ``input_audio`` format name differs from the subtype.
_AUDIO_FORMATS = {"mpeg": "mp3", "x-wav": "wav", "wave": "wav", "x-m4a": "m4a", "mp4": "m4a"}


def _audio_format(url: str) -> str | None:
    """The ``input_audio`` format of a data URL or a file URL, from its MIME type or its
    extension; ``None`` when neither tells."""
    if url.startswith("data:"):
        media_type = url[5:].split(";", 1)[0].split(",", 1)[0].lower()
        if "/" not in media_type:
            return None
        subtype = media_type.split("/", 1)[1]
        return _AUDIO_FORMATS.get(subtype, subtype)
    extension = posixpath.splitext(urllib.parse.urlsplit(url).path)[1].lower().lstrip(".")
    return extension or None


def _compatible_part(part: Any) -> Any:
    """One DashScope-native part in the compatible endpoint's shape; a part that already
    has a ``type`` (or is not a native part) is returned as is."""
    if not isinstance(part, dict) or "type" in part or len(part) != 1:
        return part
    ((kind, value),) = part.items()
    if kind == "text":
        return {"type": "text", "text": value}
    if kind == "image":
        return {"type": "image_url", "image_url": {"url": value}}
    if kind == "audio" and isinstance(value, str):
        audio: dict[str, str] = {"data": value}
        fmt = _audio_format(value)
        if fmt:
            audio["format"] = fmt
        return {"type": "input_audio", "input_audio": audio}
    if kind == "video":
        if isinstance(value, list):
            # A video given as its frames (image URLs).
            return {"type": "video", "video": value}
        return {"type": "video_url", "video_url": {"url": value}}
    return part


def compatible_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """*messages* with DashScope-native content parts in the compatible endpoint's shape.

    ``{"text": t}`` becomes ``{"type": "text", "text": t}``, ``{"image": url}`` becomes
    ``{"type": "image_url", "image_url": {"url": url}}``, ``{"audio": url}`` becomes
    ``{"type": "input_audio", "input_audio": {"data": url, "format": ...}}`` (the format taken
    from the data URL's MIME type or the file extension), ``{"video": url}`` becomes
    ``{"type": "video_url", "video_url": {"url": url}}`` and ``{"video": [frame URLs]}``
    becomes ``{"type": "video", "video": [...]}``, as DashScope's compatible mode documents.
    URLs and data URLs are passed on unchanged.

    Copy-on-write: messages whose content is a string, or whose parts are already typed, are
    not copied, and when no message needs a change *messages* itself is returned. The
    caller's messages are never modified.
    """
    result: list[dict[str, Any]] | None = None
    for index, message in enumerate(messages):
        content = message.get("content")
        converted = message
        if isinstance(content, list):
            parts: list[Any] | None = None
            for position, part in enumerate(content):
                new = _compatible_part(part)
                if parts is None:
                    if new is part:
                        continue
                    parts = content[:position]
                parts.append(new)
            if parts is not None:
                converted = {**message, "content": parts}
        if result is None:
            if converted is message:
                continue
            result = messages[:index]
        result.append(converted)
    return messages if result is None else result


class DashScopeChatModel(OpenAIChatModel):
    """A chat model served by DashScope's OpenAI-compatible API.

    Takes the messages of :class:`~agentscope_rt.formatter.DashScopeChatFormatter` and
    :class:`~agentscope_rt.formatter.DashScopeMultiAgentFormatter` (native parts are converted
    by :func:`compatible_messages`) as well as OpenAI-shaped messages.

    :param model_name: the model, e.g. ``"qwen-max"``.
    :param api_key: the API key; defaults to the ``DASHSCOPE_API_KEY`` environment variable.
    :param stream: whether calls return an async generator of cumulative chunks (forced on when
        ``enable_thinking`` is true, as DashScope requires).
    :param enable_thinking: sent as ``enable_thinking`` (Qwen3, QwQ, DeepSeek-R1 on DashScope).
    :param multimodality: accepted for AgentScope compatibility; has no effect.
    :param generate_kwargs: sent with every request, e.g. ``{"temperature": 0}``.
    :param base_http_api_url: the endpoint; defaults to :data:`DASHSCOPE_BASE_URL`.
    :param stream_tool_parsing: parse partial tool arguments in intermediate stream chunks.
    :param client_kwargs: passed to the ``openai`` SDK client.
    :param retry_config: the retry policy; ``None`` means ``RetryConfig()``.
    :raises ValueError: when no API key is available.
    """

    provider: ClassVar[str] = "dashscope"
    api_key_env: ClassVar[str] = "DASHSCOPE_API_KEY"

    def __init__(
        self,
        model_name: str,
        api_key: str | None = None,
        stream: bool = True,
        enable_thinking: bool | None = None,
        multimodality: bool | None = None,
        generate_kwargs: dict[str, Any] | None = None,
        base_http_api_url: str | None = None,
        stream_tool_parsing: bool = True,
        client_kwargs: dict[str, Any] | None = None,
        retry_config: RetryConfig | None = None,
        **kwargs: Any,
    ) -> None:
        if enable_thinking and not stream:
            logger.info("DashScopeChatModel: enable_thinking requires streaming; stream=True")
            stream = True
        # Resolve here so that the error names DASHSCOPE_API_KEY even with a base URL given.
        key = resolve_api_key(api_key, self.api_key_env, "DashScopeChatModel")
        client_kwargs = dict(client_kwargs or {})
        client_kwargs.setdefault("base_url", base_http_api_url or DASHSCOPE_BASE_URL)
        generate_kwargs = dict(generate_kwargs or {})
        if enable_thinking is not None:
            extra_body = dict(generate_kwargs.get("extra_body") or {})
            extra_body.setdefault("enable_thinking", enable_thinking)
            generate_kwargs["extra_body"] = extra_body
        self.enable_thinking = enable_thinking
        self.multimodality = multimodality
        super().__init__(
            model_name,
            api_key=key,
            stream=stream,
            stream_tool_parsing=stream_tool_parsing,
            client_kwargs=client_kwargs,
            generate_kwargs=generate_kwargs,
            retry_config=retry_config,
            **kwargs,
        )

    def _request_kwargs(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: ToolChoice | None,
        structured_model: StructuredModel | None,
        generate_kwargs: dict[str, Any],
    ) -> dict[str, Any]:
        check_formatted_messages(messages)
        return super()._request_kwargs(
            compatible_messages(messages), tools, tool_choice, structured_model, generate_kwargs
        )
