"""DashScope's Qwen TTS (``qwen3-tts-flash``, ``qwen-tts``) over its native HTTP API.

As AgentScope's ``dashscope.MultiModalConversation.call(..., stream=True)``: a POST to
``{base}/services/aigc/multimodal-generation/generation`` with ``X-DashScope-SSE: enable`` and
``{"model", "input": {"text", "voice", "language_type"}, "parameters": generate_kwargs}``;
each SSE event carries base64 PCM (24 kHz) in ``output.audio.data``. ``{base}`` is
``$DASHSCOPE_HTTP_BASE_URL`` when set, else DashScope's.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, ClassVar, Literal

from .._provider import (
    DashScopeEvents,
    RetryConfig,
    response_lines,
)
from ._dashscope_common import (
    dashscope_headers,
    dashscope_http_base_url,
    dashscope_key,
)
from ._http import HttpTTSModel
from ._tts_response import PCM_24K, AudioBuffer

__all__ = ["DashScopeTTSModel"]

_PATH = "/services/aigc/multimodal-generation/generation"


class DashScopeTTSModel(HttpTTSModel):
    """DashScope Qwen TTS, as AgentScope's (no streaming input: the whole text is spoken).

    :param api_key: the API key; defaults to ``$DASHSCOPE_API_KEY``.
    :param model_name: ``"qwen3-tts-flash"``, ``"qwen-tts"``, ...
    :param voice: ``"Cherry"``, ``"Serena"``, ``"Ethan"``, ``"Chelsie"``, ...
    :param language_type: the text's language (``"Auto"``, ``"Chinese"``, ``"English"``, ...).
    :param stream: whether :meth:`synthesize` yields the audio as it arrives.
    :param generate_kwargs: the request's ``parameters``.
    :param client_kwargs: extra arguments for ``httpx.AsyncClient`` (``timeout``, ...).
    :param retry_config: the retry policy (default: 3 retries with backoff).
    :raises ValueError: when no API key is given or found.
    """

    provider: ClassVar[str] = "dashscope"
    media_type: ClassVar[str] = PCM_24K

    def __init__(
        self,
        api_key: str | None = None,
        model_name: str = "qwen3-tts-flash",
        voice: Literal["Cherry", "Serena", "Ethan", "Chelsie"] | str = "Cherry",
        language_type: str = "Auto",
        stream: bool = True,
        generate_kwargs: dict[str, Any] | None = None,
        client_kwargs: dict[str, Any] | None = None,
        retry_config: RetryConfig | None = None,
    ) -> None:
        key = dashscope_key(api_key, "DashScopeTTSModel")
        super().__init__(
            model_name,
            stream,
            base_url=dashscope_http_base_url(),
            headers=dashscope_headers(key),
            secrets=(key,),
            client_kwargs=client_kwargs,
            retry_config=retry_config,
            generate_kwargs=generate_kwargs,
        )
        self.voice = voice
        self.language_type = language_type

    async def _fill(
        self, buffer: AudioBuffer, text: str, options: dict[str, Any], *, stream: bool
    ) -> AsyncGenerator[None, None]:
        # Always streamed, as AgentScope asks: the non-streamed answer is a URL to download.
        body = {
            "model": self.model_name,
            "input": {"text": text, "voice": self.voice, "language_type": self.language_type},
            "parameters": options,
        }
        headers = {"Accept": "text/event-stream", "X-DashScope-SSE": "enable"}
        async with (
            self._open(_PATH, body, headers=headers) as response,
            response_lines(response) as lines,
        ):
            events = DashScopeEvents(_has_output)
            async for line in lines:
                event = events.feed(line)
                if event is not None and _add_audio(buffer, event):
                    yield
            event = events.end()
            if event is not None and _add_audio(buffer, event):
                yield


def _has_output(event: dict[str, Any]) -> bool:
    return "output" in event


def _add_audio(buffer: AudioBuffer, event: dict[str, Any]) -> bool:
    """Add the event's audio to *buffer*; whether it had any."""
    audio = (event.get("output") or {}).get("audio") or {}
    data = audio.get("data") if isinstance(audio, dict) else None
    if not data:
        return False
    buffer.add_base64(data)
    return True
