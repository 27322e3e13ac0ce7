"""DashScope's endpoints, keys and error texts, shared by its speech models."""

from __future__ import annotations

import os

from .._provider import DASHSCOPE_RETRYABLE_CODES, SecretHeaders, resolve_api_key

__all__ = [
    "DASHSCOPE_HTTP_BASE_URL",
    "DASHSCOPE_REALTIME_URL",
    "DASHSCOPE_WEBSOCKET_URL",
    "RETRYABLE_CODES",
    "dashscope_headers",
    "dashscope_http_base_url",
    "dashscope_key",
    "dashscope_realtime_url",
    "dashscope_websocket_url",
]

DASHSCOPE_HTTP_BASE_URL = "https://dashscope.aliyuncs.com/api/v1"
"""DashScope's native HTTP API (``DASHSCOPE_HTTP_BASE_URL`` overrides it)."""

DASHSCOPE_WEBSOCKET_URL = "wss://dashscope.aliyuncs.com/api-ws/v1/inference"
"""DashScope's duplex WebSocket endpoint, CosyVoice's (``DASHSCOPE_WEBSOCKET_BASE_URL``
overrides it)."""

DASHSCOPE_REALTIME_URL = "wss://dashscope.aliyuncs.com/api-ws/v1/realtime"
"""DashScope's realtime WebSocket endpoint, Qwen realtime TTS's
(``DASHSCOPE_REALTIME_BASE_URL`` overrides it)."""

RETRYABLE_CODES = DASHSCOPE_RETRYABLE_CODES
"""Error codes another attempt may get past."""


def dashscope_key(api_key: str | None, model_class: str) -> str:
    """The key given, else ``$DASHSCOPE_API_KEY``.

    :raises ValueError: when neither is set.
    """
    key = resolve_api_key(api_key, "DASHSCOPE_API_KEY", model_class)
    assert key is not None  # required=True raises instead
    return key


def dashscope_headers(key: str) -> SecretHeaders:
    """The headers of every DashScope request (the key shows as ``***`` in reprs)."""
    return SecretHeaders({"Authorization": f"Bearer {key}", "user-agent": "agentscope-rt"})


def dashscope_http_base_url() -> str:
    return os.environ.get("DASHSCOPE_HTTP_BASE_URL", DASHSCOPE_HTTP_BASE_URL).rstrip("/")


def dashscope_websocket_url() -> str:
    return os.environ.get("DASHSCOPE_WEBSOCKET_BASE_URL", DASHSCOPE_WEBSOCKET_URL)


def dashscope_realtime_url() -> str:
    return os.environ.get("DASHSCOPE_REALTIME_BASE_URL", DASHSCOPE_REALTIME_URL)
