"""OpenAI's speech endpoint (``POST {base_url}/audio/speech``), spoken over httpx.

The request is AgentScope's: ``{"model", "voice", "input", "response_format": "pcm"}`` plus
``generate_kwargs`` (``instructions``, ``speed``, ...); the answer is raw 16-bit mono PCM at
24 kHz, read as it streams when ``stream=True``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator
from typing import Any, ClassVar, Literal

from .._provider import (
    RetryConfig,
    SecretHeaders,
    header_secrets,
    resolve_api_key,
    response_bytes,
)
from ._http import HttpTTSModel
from ._tts_response import PCM_24K, AudioBuffer

__all__ = ["OpenAITTSModel"]

OPENAI_BASE_URL = "https://api.openai.com/v1"

# The OpenAI SDK client's arguments that mean something here; the rest go to httpx.
_SDK_ONLY = ("max_retries", "organization", "project", "default_headers", "websocket_base_url")


class OpenAITTSModel(HttpTTSModel):
    """OpenAI text to speech (``gpt-4o-mini-tts``, ``tts-1``, ``tts-1-hd``), as AgentScope's.

    :param api_key: the API key; defaults to ``$OPENAI_API_KEY``. Sent only in the
        ``Authorization`` header, never in a repr or an error.
    :param model_name: the speech model.
    :param voice: ``"alloy"``, ``"ash"``, ``"ballad"``, ``"coral"``, ...
    :param stream: whether :meth:`synthesize` yields the audio as it arrives.
    :param client_kwargs: what AgentScope gives ``openai.AsyncOpenAI``: ``base_url``
        (default ``$OPENAI_BASE_URL``, then OpenAI's), ``organization``, ``project``,
        ``default_headers``; other keys go to ``httpx.AsyncClient`` (``timeout``, ...).
    :param generate_kwargs: more fields of every request (``instructions``, ``speed``, ...).
    :param retry_config: the retry policy (default: 3 retries with backoff).
    :raises ValueError: when no API key is given or found.
    """

    provider: ClassVar[str] = "openai"
    media_type: ClassVar[str] = PCM_24K

    def __init__(
        self,
        api_key: str | None = None,
        model_name: str = "gpt-4o-mini-tts",
        voice: Literal["alloy", "ash", "ballad", "coral"] | str = "alloy",
        stream: bool = True,
        client_kwargs: dict[str, Any] | None = None,
        generate_kwargs: dict[str, Any] | None = None,
        retry_config: RetryConfig | None = None,
    ) -> None:
        key = resolve_api_key(api_key, "OPENAI_API_KEY", "OpenAITTSModel")
        client_kwargs = dict(client_kwargs or {})
        base_url = client_kwargs.pop("base_url", None) or os.environ.get(
            "OPENAI_BASE_URL", OPENAI_BASE_URL
        )
        headers = dict(client_kwargs.pop("default_headers", None) or {})
        if organization := client_kwargs.pop("organization", None):
            headers["OpenAI-Organization"] = organization
        if project := client_kwargs.pop("project", None):
            headers["OpenAI-Project"] = project
        for name in _SDK_ONLY:
            client_kwargs.pop(name, None)
        headers = SecretHeaders({**headers, "Authorization": f"Bearer {key}"})
        super().__init__(
            model_name,
            stream,
            base_url=str(base_url),
            headers=headers,
            secrets=(key, *header_secrets(headers)),
            client_kwargs=client_kwargs,
            retry_config=retry_config,
            generate_kwargs=generate_kwargs,
        )
        self.voice = voice

    async def _fill(
        self, buffer: AudioBuffer, text: str, options: dict[str, Any], *, stream: bool
    ) -> AsyncGenerator[None, None]:
        body = {
            "model": self.model_name,
            "voice": self.voice,
            "input": text,
            "response_format": "pcm",
            **options,
        }
        async with (
            self._open("/audio/speech", body) as response,
            response_bytes(response) as pieces,
        ):
            async for piece in pieces:
                buffer.add(piece)
                yield
