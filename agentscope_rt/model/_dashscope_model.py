"""DashScope (Qwen and friends) through its OpenAI-compatible endpoint.

DashScope serves the OpenAI chat completions protocol at
``https://dashscope.aliyuncs.com/compatible-mode/v1``, so this model is
:class:`OpenAIChatModel` pointed there: the same streaming, retries, tool calls and structured
output. Reasoning (``enable_thinking``) arrives as ``reasoning_content`` and becomes
:class:`ThinkingBlock`.

Differences from AgentScope's ``DashScopeChatModel`` (which uses the ``dashscope`` SDK):
``api_key`` may come from ``DASHSCOPE_API_KEY``; ``multimodality`` is accepted for
compatibility but has no effect, because the compatible endpoint serves text and multimodal
models alike; ``base_http_api_url`` replaces the compatible-mode base URL.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ._common import logger, resolve_api_key
from ._openai_model import OpenAIChatModel
from ._retry import RetryConfig

__all__ = ["DASHSCOPE_BASE_URL", "DashScopeChatModel"]

DASHSCOPE_BASE_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"
"""DashScope's OpenAI-compatible endpoint (use the ``dashscope-intl`` host outside China)."""


class DashScopeChatModel(OpenAIChatModel):
    """A chat model served by DashScope's OpenAI-compatible API.

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
