"""Gemini's speech generation (``models/{model}:generateContent`` with audio output), over
httpx.

The request asks for ``responseModalities: ["AUDIO"]`` with the prebuilt voice, as AgentScope's
``GenerateContentConfig`` does; the audio comes back as base64 ``inlineData`` parts (16-bit
PCM, 24 kHz, ``audio/L16;codec=pcm;rate=24000``). With ``stream=True`` the request goes to
``:streamGenerateContent?alt=sse`` and each event's audio is added as it arrives.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator
from typing import Any, ClassVar, Literal

from .._provider import (
    BadResponse,
    RetryConfig,
    SecretHeaders,
    header_secrets,
    parse_answer,
    response_lines,
)
from ._http import HttpTTSModel
from ._tts_response import PCM_24K, AudioBuffer

__all__ = ["GeminiTTSModel"]

GEMINI_BASE_URL = "https://generativelanguage.googleapis.com"


class GeminiTTSModel(HttpTTSModel):
    """Gemini text to speech (``gemini-2.5-flash-preview-tts``, ...), as AgentScope's.

    :param api_key: the API key; defaults to ``$GEMINI_API_KEY`` (then ``$GOOGLE_API_KEY``).
        Sent only as the ``x-goog-api-key`` header.
    :param model_name: the speech model.
    :param voice: a prebuilt voice: ``"Zephyr"``, ``"Kore"``, ``"Orus"``, ``"Autonoe"``, ...
    :param stream: whether :meth:`synthesize` yields the audio as it arrives.
    :param client_kwargs: ``base_url`` and ``api_version`` (default ``v1beta``) of the
        endpoint, plus extra arguments for ``httpx.AsyncClient``.
    :param generate_kwargs: more ``generationConfig`` fields (``temperature``, ``seed``, ...;
        snake_case or camelCase).
    :param retry_config: the retry policy (default: 3 retries with backoff).
    :raises ValueError: when no API key is given or found.
    """

    provider: ClassVar[str] = "gemini"
    media_type: ClassVar[str] = PCM_24K

    def __init__(
        self,
        api_key: str | None = None,
        model_name: str = "gemini-2.5-flash-preview-tts",
        voice: Literal["Zephyr", "Kore", "Orus", "Autonoe"] | str = "Kore",
        stream: bool = True,
        client_kwargs: dict[str, Any] | None = None,
        generate_kwargs: dict[str, Any] | None = None,
        retry_config: RetryConfig | None = None,
    ) -> None:
        key = api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
        if not key:
            raise ValueError(
                "GeminiTTSModel needs an API key: pass api_key=... or set GEMINI_API_KEY"
            )
        client_kwargs = dict(client_kwargs or {})
        base_url = str(client_kwargs.pop("base_url", None) or GEMINI_BASE_URL).rstrip("/")
        api_version = client_kwargs.pop("api_version", None) or "v1beta"
        headers = SecretHeaders(
            {**dict(client_kwargs.pop("headers", None) or {}), "x-goog-api-key": key}
        )
        super().__init__(
            model_name,
            stream,
            base_url=f"{base_url}/{api_version}",
            headers=headers,
            secrets=(key, *header_secrets(headers)),
            client_kwargs=client_kwargs,
            retry_config=retry_config,
            generate_kwargs=generate_kwargs,
        )
        self.voice = voice

    def _body(self, text: str, options: dict[str, Any]) -> dict[str, Any]:
        config = {_camel(k): v for k, v in options.items()}
        config["responseModalities"] = ["AUDIO"]
        config["speechConfig"] = {
            "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": self.voice}},
        }
        contents = [{"role": "user", "parts": [{"text": text}]}]
        return {"contents": contents, "generationConfig": config}

    async def _fill(
        self, buffer: AudioBuffer, text: str, options: dict[str, Any], *, stream: bool
    ) -> AsyncGenerator[None, None]:
        body = self._body(text, options)
        if not stream:
            async with self._open(f"/models/{self.model_name}:generateContent", body) as response:
                data = json.loads(await response.aread())
            _add_audio(buffer, data)
            yield
            return
        path = f"/models/{self.model_name}:streamGenerateContent"
        async with (
            self._open(path, body, params={"alt": "sse"}) as response,
            response_lines(response) as lines,
        ):
            async for line in lines:
                if line.startswith("data:"):
                    _add_audio(buffer, json.loads(line[5:]))
                    yield


def _add_audio(buffer: AudioBuffer, data: Any) -> None:
    """Add the audio parts of one ``GenerateContentResponse`` to *buffer*.

    :raises BadResponse: for an answer of another shape, or an error event.
    """
    if isinstance(data, dict) and "error" in data:
        raise BadResponse(f"Gemini reported an error: {json.dumps(data['error'])}")

    def parts() -> list[dict[str, Any]]:
        candidates = data.get("candidates") or []
        if not candidates:
            return []
        return list((candidates[0].get("content") or {}).get("parts") or [])

    for part in parse_answer(data, parts):
        inline = part.get("inlineData") or part.get("inline_data")
        if inline and inline.get("data"):
            if not buffer.size and inline.get("mimeType"):
                buffer.media_type = inline["mimeType"]
            buffer.add_base64(inline["data"])


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)
