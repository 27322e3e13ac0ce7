"""DashScope's Qwen-Omni realtime API over WebSocket
(``wss://dashscope.aliyuncs.com/api-ws/v1/realtime?model=...``), with AgentScope's session
configuration and event mapping.

The protocol is OpenAI-like JSON events: ``session.update`` and ``input_audio_buffer.append``
/ ``input_image_buffer.append`` from the client; ``response.audio.delta``, the transcript
deltas, the VAD events and ``error`` from the server. As in AgentScope, no tools: the API
takes none.
"""

from __future__ import annotations

import json
import logging
import os
import urllib.parse
from typing import Any, Literal

from .._ids import new_id
from .._provider import SecretHeaders, Secrets, resolve_api_key
from ..message import AudioBlock, ImageBlock, TextBlock, ToolResultBlock
from ._base import RealtimeModelBase, error_event, response_id_of
from ._model_events import AudioFormat, ModelEvents

__all__ = ["DashScopeRealtimeModel"]

logger = logging.getLogger(__name__)

DASHSCOPE_REALTIME_URL = "wss://dashscope.aliyuncs.com/api-ws/v1/realtime"

_Event = ModelEvents.EventBase


class DashScopeRealtimeModel(RealtimeModelBase):
    """DashScope's realtime (Qwen-Omni) model, as AgentScope's: 16 kHz PCM in; 24 kHz out for
    ``qwen3-omni-flash-realtime*`` models, 16 kHz for the others; server VAD.

    :param model_name: e.g. ``"qwen3-omni-flash-realtime"``.
    :param api_key: the API key; defaults to ``$DASHSCOPE_API_KEY`` (sent only in a header).
    :param voice: ``"Cherry"``, ``"Serena"``, ``"Ethan"``, ``"Chelsie"``, ...
    :param enable_input_audio_transcription: transcribe the user's speech (gummy-realtime-v1).
    :param websocket_url: the endpoint (default ``$DASHSCOPE_REALTIME_URL``, then DashScope's).
    :raises ValueError: when no API key is given or found.
    """

    support_input_modalities: list[str] = ["text", "audio", "image"]  # noqa: RUF012
    support_tools: bool = False
    """The API takes no tools (AgentScope's flag)."""
    provider = "dashscope"

    def __init__(
        self,
        model_name: str,
        api_key: str | None = None,
        voice: str | Literal["Cherry", "Serena", "Ethan", "Chelsie"] = "Cherry",
        enable_input_audio_transcription: bool = True,
        *,
        websocket_url: str | None = None,
    ) -> None:
        super().__init__(model_name)
        key = resolve_api_key(api_key, "DASHSCOPE_API_KEY", "DashScopeRealtimeModel")
        self.voice = voice
        self.enable_input_audio_transcription = enable_input_audio_transcription
        self.input_sample_rate = 16000
        self.output_sample_rate = (
            24000 if model_name.startswith("qwen3-omni-flash-realtime") else 16000
        )
        base = websocket_url or os.environ.get("DASHSCOPE_REALTIME_URL", DASHSCOPE_REALTIME_URL)
        query = urllib.parse.urlencode({"model": model_name})
        self.websocket_url = f"{base}{'&' if '?' in base else '?'}{query}"
        self.websocket_headers = SecretHeaders(
            {"Authorization": f"Bearer {key}", "X-DashScope-DataInspection": "disable"}
        )
        self._secrets = Secrets((key or "",))
        self._response_id = ""

    def _build_session_config(
        self, instructions: str, tools: list[dict[str, Any]] | None, **kwargs: Any
    ) -> dict[str, Any]:
        if tools:
            logger.warning(
                "DashScope's realtime API takes no tools: the %d tool(s) are not sent", len(tools)
            )
        session: dict[str, Any] = {
            "instructions": instructions,
            "modalities": ["audio", "text"],
            "input_audio_format": f"pcm{self.input_sample_rate // 1000}",
            "output_audio_format": f"pcm{self.output_sample_rate // 1000}",
            "voice": self.voice,
            **kwargs,
        }
        if self.enable_input_audio_transcription:
            session["input_audio_transcription"] = {"model": "gummy-realtime-v1"}
        session["turn_detection"] = {
            "type": "server_vad",
            "threshold": 0.5,
            "silence_duration_ms": 800,
        }
        return {"type": "session.update", "session": session}

    async def send(self, data: AudioBlock | TextBlock | ImageBlock | ToolResultBlock) -> None:
        """Send user audio (base64 PCM at 16 kHz), an image (base64) or text (as AgentScope:
        a ``response.create`` with the text as instructions); a tool result is not supported by
        the API and is dropped with a warning, as in AgentScope.

        :raises RuntimeError: when not connected.
        :raises ModelAPIError: when the provider has closed the connection.
        :raises ValueError: for audio or an image given by URL (not fetched here).
        """
        if isinstance(data, AudioBlock):
            source = self._inline_source(data, "audio")
            message: dict[str, Any] = {"type": "input_audio_buffer.append", "audio": source.data}
        elif isinstance(data, ImageBlock):
            source = self._inline_source(data, "images")
            message = {"type": "input_image_buffer.append", "image": source.data}
        elif isinstance(data, TextBlock):
            message = {
                "event_id": new_id(),
                "type": "response.create",
                "response": {"instructions": data.text},
            }
        else:
            logger.warning(
                "DashScope Realtime API does not support %s data input. Supported modalities "
                "are: %s",
                getattr(data, "type", data),
                ", ".join(self.support_input_modalities),
            )
            return
        await self._send_json(message)

    async def parse_api_message(self, message: str) -> _Event | list[_Event] | None:
        try:
            data = json.loads(message)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        kind = data.get("type", "")
        handler = _HANDLERS.get(kind)
        if handler is None:
            logger.debug("Unknown DashScope realtime model event type: %s", kind)
            return None
        return handler(self, data)

    # One method per server event type; each returns its model event (or None).

    def _session_created(self, data: dict[str, Any]) -> _Event:
        return ModelEvents.ModelSessionCreatedEvent(
            session_id=(data.get("session") or {}).get("id", "")
        )

    def _session_finished(self, data: dict[str, Any]) -> _Event:
        session = data.get("session") or {}
        return ModelEvents.ModelSessionEndedEvent(
            session_id=session.get("id", ""), reason="the server finished the session"
        )

    def _response_created(self, data: dict[str, Any]) -> _Event:
        self._response_id = response_id_of(data)
        return ModelEvents.ModelResponseCreatedEvent(response_id=self._response_id)

    def _response_done(self, data: dict[str, Any]) -> _Event:
        response = data.get("response") or {}
        usage = response.get("usage") or {}
        response_id = response_id_of(data) or self._response_id
        self._response_id = ""
        return ModelEvents.ModelResponseDoneEvent(
            response_id=response_id,
            input_tokens=usage.get("input_tokens", 0),
            output_tokens=usage.get("output_tokens", 0),
        )

    def _audio_delta(self, data: dict[str, Any]) -> _Event | None:
        if not data.get("delta"):
            return None
        return ModelEvents.ModelResponseAudioDeltaEvent(
            response_id=self._response_id,
            item_id=data.get("item_id", ""),
            delta=data["delta"],
            format=AudioFormat(type="audio/pcm", rate=self.output_sample_rate),
        )

    def _audio_done(self, data: dict[str, Any]) -> _Event:
        return ModelEvents.ModelResponseAudioDoneEvent(
            response_id=self._response_id, item_id=data.get("item_id", "")
        )

    def _transcript_delta(self, data: dict[str, Any]) -> _Event | None:
        if not data.get("delta"):
            return None
        return ModelEvents.ModelResponseAudioTranscriptDeltaEvent(
            response_id=self._response_id, item_id=data.get("item_id", ""), delta=data["delta"]
        )

    def _transcript_done(self, data: dict[str, Any]) -> _Event:
        return ModelEvents.ModelResponseAudioTranscriptDoneEvent(
            response_id=self._response_id, item_id=data.get("item_id", "")
        )

    def _input_transcribed(self, data: dict[str, Any]) -> _Event | None:
        if not data.get("transcript"):
            return None
        return ModelEvents.ModelInputTranscriptionDoneEvent(
            transcript=data["transcript"], item_id=data.get("item_id", "")
        )

    def _speech_started(self, data: dict[str, Any]) -> _Event:
        return ModelEvents.ModelInputStartedEvent(
            item_id=data.get("item_id", ""), audio_start_ms=data.get("audio_start_ms", 0)
        )

    def _speech_stopped(self, data: dict[str, Any]) -> _Event:
        return ModelEvents.ModelInputDoneEvent(
            item_id=data.get("item_id", ""), audio_end_ms=data.get("audio_end_ms", 0)
        )

    def _provider_error(self, data: dict[str, Any]) -> _Event:
        return error_event(data.get("error"))


_HANDLERS: dict[str, Any] = {
    "session.created": DashScopeRealtimeModel._session_created,
    "session.finished": DashScopeRealtimeModel._session_finished,
    "response.created": DashScopeRealtimeModel._response_created,
    "response.done": DashScopeRealtimeModel._response_done,
    "response.audio.delta": DashScopeRealtimeModel._audio_delta,
    "response.audio.done": DashScopeRealtimeModel._audio_done,
    "response.audio_transcript.delta": DashScopeRealtimeModel._transcript_delta,
    "response.audio_transcript.done": DashScopeRealtimeModel._transcript_done,
    "conversation.item.input_audio_transcription.completed": (
        DashScopeRealtimeModel._input_transcribed
    ),
    "input_audio_buffer.speech_started": DashScopeRealtimeModel._speech_started,
    "input_audio_buffer.speech_stopped": DashScopeRealtimeModel._speech_stopped,
    "error": DashScopeRealtimeModel._provider_error,
}
