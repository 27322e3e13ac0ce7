"""DashScope's Qwen realtime TTS (``qwen3-tts-flash-realtime``, ``qwen-tts-realtime``): text
in as it streams, audio out as it is made, over one WebSocket.

The protocol is the one AgentScope's ``dashscope.audio.qwen_tts_realtime.QwenTtsRealtime``
speaks, at ``{realtime}?model=<model>`` (``{realtime}`` is ``$DASHSCOPE_REALTIME_BASE_URL``
when set, else DashScope's): the client sends ``session.update`` (voice, ``server_commit``
mode, 24 kHz PCM), ``input_text_buffer.append`` per piece of text, then
``input_text_buffer.commit`` and ``session.finish``; the server answers with
``response.audio.delta`` events (base64 PCM) and ends with ``session.finished``; an ``error``
event fails the synthesis.
"""

from __future__ import annotations

import urllib.parse
import uuid
from typing import Any, ClassVar, Literal

from .._provider import RetryConfig
from ._dashscope_common import (
    RETRYABLE_CODES,
    dashscope_headers,
    dashscope_key,
    dashscope_realtime_url,
)
from ._websocket_tts import READ_TIMEOUT, ProviderError, Session, WebSocketTTSModel, json_event

__all__ = ["DashScopeRealtimeTTSModel"]


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"event_id": f"event_{uuid.uuid4().hex}", "type": kind, **fields}


class DashScopeRealtimeTTSModel(WebSocketTTSModel):
    """DashScope Qwen realtime TTS, as AgentScope's (streaming input; one message at a time).

    :param api_key: the API key; defaults to ``$DASHSCOPE_API_KEY``.
    :param model_name: ``"qwen3-tts-flash-realtime"``, ...
    :param voice: ``"Cherry"``, ``"Nofish"``, ``"Ethan"``, ``"Jennifer"``, ...
    :param stream: whether :meth:`synthesize` yields the audio as it arrives.
    :param cold_start_length: characters the first text needs before it is sent.
    :param cold_start_words: words the first text needs before it is sent.
    :param client_kwargs: ``url`` of the endpoint (else as the module docstring says) and
        ``headers`` added to the upgrade request.
    :param generate_kwargs: more ``session.update`` fields (``language_type``, ...).
    :param max_retries: retries of a refused or failed connection.
    :param retry_delay: seconds before the first retry (doubling after each).
    :param read_timeout: seconds a synthesis waits for the provider's next message (see
        ``READ_TIMEOUT`` in ``docs/tts.md``).
    :raises ValueError: when no API key is given or found, or *read_timeout* is not positive.
    """

    provider: ClassVar[str] = "dashscope"

    def __init__(
        self,
        api_key: str | None = None,
        model_name: str = "qwen3-tts-flash-realtime",
        voice: Literal["Cherry", "Nofish", "Ethan", "Jennifer"] | str = "Cherry",
        stream: bool = True,
        cold_start_length: int | None = None,
        cold_start_words: int | None = None,
        client_kwargs: dict[str, Any] | None = None,
        generate_kwargs: dict[str, Any] | None = None,
        max_retries: int = 3,
        retry_delay: float = 5.0,
        *,
        read_timeout: float = READ_TIMEOUT,
    ) -> None:
        key = dashscope_key(api_key, type(self).__name__)
        super().__init__(
            model_name,
            stream,
            secrets=(key,),
            cold_start_length=cold_start_length,
            cold_start_words=cold_start_words,
            retry_config=RetryConfig(max_retries=max_retries, initial_delay=retry_delay),
            read_timeout=read_timeout,
        )
        self._key_headers = dashscope_headers(key)
        self.voice = voice
        self.mode = "server_commit"
        self.client_kwargs = dict(client_kwargs or {})
        self.generate_kwargs = dict(generate_kwargs or {})
        self.max_retries = max_retries
        self.retry_delay = retry_delay

    def _url(self) -> str:
        base = self.client_kwargs.get("url") or dashscope_realtime_url()
        query = urllib.parse.urlencode({"model": self.model_name})
        return f"{base}{'&' if '?' in base else '?'}{query}"

    def _headers(self) -> dict[str, str]:
        return {**dict(self.client_kwargs.get("headers") or {}), **self._key_headers}

    async def _start(self, session: Session) -> None:
        config = {
            "voice": self.voice,
            "mode": self.mode,
            "response_format": "pcm",
            "sample_rate": 24000,
            **self.generate_kwargs,
        }
        await session.send_json(_event("session.update", session=config))
        session.started.set()

    async def _send_text(self, session: Session, text: str) -> None:
        await session.send_json(_event("input_text_buffer.append", text=text))

    async def _finish_input(self, session: Session) -> None:
        await session.send_json(_event("input_text_buffer.commit"))
        await session.send_json(_event("session.finish"))

    def _on_message(self, session: Session, message: str | bytes) -> None:
        event = json_event(message, "Qwen realtime TTS")
        kind = event.get("type")
        if kind == "response.audio.delta" and event.get("delta"):
            session.buffer.add_base64(event["delta"])
        elif kind == "session.finished":
            session.done = True
        elif kind == "error":
            error = event.get("error") or {}
            code = str(error.get("code") or "error")
            raise ProviderError(
                f"{code}: {error.get('message') or 'no message'}",
                retryable=code.startswith(RETRYABLE_CODES),
            )
