"""DashScope's Qwen TTS (``qwen3-tts-flash``, ``qwen-tts``) over its native HTTP API.

As AgentScope's ``dashscope.MultiModalConversation.call(..., stream=True)``: a POST to
``{base}/services/aigc/multimodal-generation/generation`` with ``X-DashScope-SSE: enable`` and
``{"model", "input": {"text", "voice", "language_type"}, "parameters": generate_kwargs}``;
each SSE event carries base64 PCM (24 kHz) in ``output.audio.data``. ``{base}`` is
``$DASHSCOPE_HTTP_BASE_URL`` when set, else DashScope's.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any, ClassVar, Literal

from .._provider import (
    RETRYABLE_STATUS,
    BadResponse,
    RetryConfig,
    StreamErrorEvent,
    excerpt,
    response_lines,
)
from ._dashscope_common import (
    RETRYABLE_CODES,
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
            events = _SseEvents()
            async for line in lines:
                event = events.feed(line)
                if event is not None and _add_audio(buffer, event):
                    yield
            event = events.end()
            if event is not None and _add_audio(buffer, event):
                yield


class _SseEvents:
    """DashScope's server-sent events, one JSON object each; an error event raises."""

    def __init__(self) -> None:
        self.data: list[str] = []
        self.is_error = False
        self.status: int | None = None

    def feed(self, line: str) -> dict[str, Any] | None:
        if line.startswith("data:"):
            self.data.append(line[5:].strip())
        elif line.startswith("event:"):
            self.is_error = line[6:].strip() == "error"
        elif line.startswith(":HTTP_STATUS/"):
            status = line.split("/", 1)[1].strip()
            self.status = int(status) if status.isdigit() else None
        elif not line.strip():
            return self.end()
        return None

    def end(self) -> dict[str, Any] | None:
        """The event read so far (``None`` when there is none).

        :raises StreamErrorEvent: for an error event.
        :raises BadResponse: for data that is not a JSON object.
        """
        if not self.data:
            return None
        text = "\n".join(self.data)
        is_error, status = self.is_error, self.status
        self.data, self.is_error, self.status = [], False, None
        try:
            event = json.loads(text)
        except ValueError:
            raise BadResponse(f"malformed event in the stream: {excerpt(text)}") from None
        if not isinstance(event, dict):
            raise BadResponse(f"unexpected event in the stream: {excerpt(text)}")
        if is_error or (event.get("code") and "output" not in event):
            code = str(event.get("code") or "")
            message = f"{code}: {event.get('message')}" if code else str(event.get("message"))
            if status is not None and status != 200:
                retryable = status in RETRYABLE_STATUS or status >= 500
            else:
                status, retryable = None, code.startswith(RETRYABLE_CODES)
            raise StreamErrorEvent(message, status, retryable)
        return event


def _add_audio(buffer: AudioBuffer, event: dict[str, Any]) -> bool:
    """Add the event's audio to *buffer*; whether it had any."""
    audio = (event.get("output") or {}).get("audio") or {}
    data = audio.get("data") if isinstance(audio, dict) else None
    if not data:
        return False
    buffer.add_base64(data)
    return True
