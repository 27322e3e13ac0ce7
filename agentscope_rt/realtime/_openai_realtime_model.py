"""OpenAI's Realtime API over WebSocket (``wss://api.openai.com/v1/realtime?model=...``), with
AgentScope's session configuration and event mapping."""

from __future__ import annotations

import json
import logging
import os
import urllib.parse
from typing import Any, Literal

from .._provider import Secrets, resolve_api_key
from ..message import AudioBlock, ImageBlock, TextBlock, ToolResultBlock
from ._base import RealtimeModelBase, error_event, response_id_of
from ._model_events import AudioFormat, ModelEvents, tool_use

__all__ = ["OpenAIRealtimeModel"]

logger = logging.getLogger(__name__)

OPENAI_REALTIME_URL = "wss://api.openai.com/v1/realtime"


class OpenAIRealtimeModel(RealtimeModelBase):
    """OpenAI's realtime model, as AgentScope's (24 kHz PCM in and out, server VAD).

    :param model_name: e.g. ``"gpt-realtime"``.
    :param api_key: the API key; defaults to ``$OPENAI_API_KEY`` (sent only in a header).
    :param voice: ``"alloy"``, ``"echo"``, ``"marin"``, ``"cedar"``, ...
    :param enable_input_audio_transcription: transcribe the user's speech (whisper-1).
    :param websocket_url: the endpoint (default ``$OPENAI_REALTIME_URL``, then OpenAI's).
    :raises ValueError: when no API key is given or found.
    """

    support_input_modalities: list[str] = ["audio", "text", "tool_result"]  # noqa: RUF012
    provider = "openai"

    def __init__(
        self,
        model_name: str,
        api_key: str | None = None,
        voice: Literal["alloy", "echo", "marin", "cedar"] | str = "alloy",
        enable_input_audio_transcription: bool = True,
        *,
        websocket_url: str | None = None,
    ) -> None:
        super().__init__(model_name)
        key = resolve_api_key(api_key, "OPENAI_API_KEY", "OpenAIRealtimeModel")
        self.voice = voice
        self.enable_input_audio_transcription = enable_input_audio_transcription
        self.input_sample_rate = 24000
        self.output_sample_rate = 24000
        base = websocket_url or os.environ.get("OPENAI_REALTIME_URL", OPENAI_REALTIME_URL)
        query = urllib.parse.urlencode({"model": model_name})
        self.websocket_url = f"{base}{'&' if '?' in base else '?'}{query}"
        self.websocket_headers = _Headers(
            {"Authorization": f"Bearer {key}", "OpenAI-Beta": "realtime=v1"}
        )
        self._secrets = Secrets((key or "",))
        self._response_id = ""
        self._tool_args: dict[str, str] = {}

    def _build_session_config(
        self, instructions: str, tools: list[dict[str, Any]] | None, **kwargs: Any
    ) -> dict[str, Any]:
        audio_input: dict[str, Any] = {
            "turn_detection": {"type": "server_vad", "create_response": True}
        }
        if self.enable_input_audio_transcription:
            audio_input["transcription"] = {"model": "whisper-1"}
        session: dict[str, Any] = {
            "type": "realtime",
            "output_modalities": ["audio"],
            "audio": {"input": audio_input, "output": {"voice": self.voice}},
            "instructions": instructions,
            **kwargs,
        }
        if tools:
            # The Realtime API wants the function definition at the top level.
            session["tools"] = [{"type": "function", **tool["function"]} for tool in tools]
        return {"type": "session.update", "session": session}

    async def send(self, data: AudioBlock | TextBlock | ImageBlock | ToolResultBlock) -> None:
        """Send user audio (base64 PCM at 24 kHz), text or a tool result; an image is not
        supported by the API and is dropped with a warning, as in AgentScope.

        :raises RuntimeError: when not connected.
        :raises ValueError: for audio given by URL (not fetched here).
        """
        if isinstance(data, AudioBlock):
            message: dict[str, Any] = {
                "type": "input_audio_buffer.append",
                "audio": self._inline_source(data, "audio").data,
            }
        elif isinstance(data, TextBlock):
            content = [{"type": "input_text", "text": data.text}]
            message = {
                "type": "conversation.item.create",
                "item": {"type": "message", "role": "user", "content": content},
            }
        elif isinstance(data, ToolResultBlock):
            output = data.output
            if not isinstance(output, str):
                output = "\n".join(getattr(b, "text", "") for b in output)
            message = {
                "type": "conversation.item.create",
                "item": {"type": "function_call_output", "call_id": data.id, "output": output},
            }
        else:
            logger.warning(
                "OpenAI Realtime API does not support %s data input", getattr(data, "type", data)
            )
            return
        await self._send_json(message)

    async def truncate(self, item_id: str, audio_end_ms: int) -> bool:
        """Send ``conversation.item.truncate``: the server drops the item's audio after
        *audio_end_ms* and the transcript the user did not hear.

        :raises RuntimeError: when not connected.
        """
        await self._send_json(
            {
                "type": "conversation.item.truncate",
                "item_id": item_id,
                "content_index": 0,
                "audio_end_ms": max(0, int(audio_end_ms)),
            }
        )
        return True

    async def parse_api_message(
        self, message: str
    ) -> ModelEvents.EventBase | list[ModelEvents.EventBase] | None:
        try:
            data = json.loads(message)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        kind = data.get("type", "")
        item_id = data.get("item_id", "")
        response_id = self._response_id
        if kind == "session.created":
            return ModelEvents.ModelSessionCreatedEvent(
                session_id=(data.get("session") or {}).get("id", "")
            )
        if kind == "response.created":
            self._response_id = response_id_of(data)
            return ModelEvents.ModelResponseCreatedEvent(response_id=self._response_id)
        if kind == "response.done":
            response = data.get("response") or {}
            usage = response.get("usage") or {}
            self._response_id = ""
            return ModelEvents.ModelResponseDoneEvent(
                response_id=response_id_of(data) or response_id,
                input_tokens=usage.get("input_tokens", 0),
                output_tokens=usage.get("output_tokens", 0),
            )
        if kind == "response.output_audio.delta" and data.get("delta"):
            return ModelEvents.ModelResponseAudioDeltaEvent(
                response_id=response_id,
                item_id=item_id,
                delta=data["delta"],
                format=AudioFormat(type="audio/pcm", rate=self.output_sample_rate),
            )
        if kind == "response.output_audio.done":
            return ModelEvents.ModelResponseAudioDoneEvent(response_id=response_id, item_id=item_id)
        if kind == "response.output_audio_transcript.delta" and data.get("delta"):
            return ModelEvents.ModelResponseAudioTranscriptDeltaEvent(
                response_id=response_id, item_id=item_id, delta=data["delta"]
            )
        if kind == "response.output_audio_transcript.done":
            return ModelEvents.ModelResponseAudioTranscriptDoneEvent(
                response_id=response_id, item_id=item_id
            )
        if kind == "response.function_call_arguments.delta" and data.get("delta"):
            call_id = data.get("call_id", "")
            raw = self._tool_args[call_id] = self._tool_args.get(call_id, "") + data["delta"]
            return ModelEvents.ModelResponseToolUseDeltaEvent(
                response_id=response_id,
                item_id=item_id,
                tool_use=tool_use(call_id, data.get("name", ""), {}, raw),
            )
        if kind == "response.function_call_arguments.done":
            call_id = data.get("call_id", "")
            raw = data.get("arguments") or self._tool_args.pop(call_id, "")
            self._tool_args.pop(call_id, None)
            return ModelEvents.ModelResponseToolUseDoneEvent(
                response_id=response_id,
                item_id=item_id,
                tool_use=tool_use(call_id, data.get("name", ""), _arguments(raw), raw),
            )
        if kind == "conversation.item.input_audio_transcription.delta" and data.get("delta"):
            return ModelEvents.ModelInputTranscriptionDeltaEvent(
                item_id=item_id, delta=data["delta"]
            )
        if kind == "conversation.item.input_audio_transcription.completed" and data.get(
            "transcript"
        ):
            return ModelEvents.ModelInputTranscriptionDoneEvent(
                transcript=data["transcript"], item_id=item_id
            )
        if kind == "input_audio_buffer.speech_started":
            return ModelEvents.ModelInputStartedEvent(
                item_id=item_id, audio_start_ms=data.get("audio_start_ms", 0)
            )
        if kind == "input_audio_buffer.speech_stopped":
            return ModelEvents.ModelInputDoneEvent(
                item_id=item_id, audio_end_ms=data.get("audio_end_ms", 0)
            )
        if kind == "error":
            return error_event(data.get("error"))
        logger.debug("Unknown OpenAI realtime model event type: %s", kind)
        return None


def _arguments(raw: str) -> dict[str, Any]:
    """The tool call's arguments (``{}`` when they are not a JSON object, which the tool's
    own validation then reports)."""
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class _Headers(dict[str, str]):
    def __repr__(self) -> str:
        return "{'Authorization': '***', ...}"
