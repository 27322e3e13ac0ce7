"""Gemini's Live API (``BidiGenerateContent`` over WebSocket), with AgentScope's setup message
and event mapping.

The session: a ``setup`` message (model, system instruction, voice, transcriptions, tools),
then ``realtimeInput`` audio (16 kHz PCM) and images, ``clientContent`` text and
``toolResponse`` results from the client; ``serverContent`` (model-turn audio at 24 kHz,
transcriptions, ``interrupted``, ``generationComplete``, ``turnComplete``), ``toolCall``,
``usageMetadata`` and ``goAway`` from the server. Gemini sends no response ids: each response
gets one here, when its first output arrives.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any, Literal

from .._ids import new_id
from .._provider import SecretHeaders, Secrets
from ..message import AudioBlock, ImageBlock, TextBlock, ToolResultBlock
from ._base import RealtimeModelBase, error_event
from ._model_events import AudioFormat, ModelEvents, tool_use

__all__ = ["GeminiRealtimeModel"]

logger = logging.getLogger(__name__)

GEMINI_LIVE_URL = (
    "wss://generativelanguage.googleapis.com/ws/"
    "google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContent"
)
_SESSION_ID = "gemini_session"  # AgentScope's: the Live API names no session

_Event = ModelEvents.EventBase


class GeminiRealtimeModel(RealtimeModelBase):
    """Gemini's realtime (Live API) model, as AgentScope's (16 kHz PCM in, 24 kHz out).

    :param model_name: e.g. ``"gemini-2.5-flash-native-audio-preview-09-2025"``.
    :param api_key: the API key; defaults to ``$GEMINI_API_KEY`` (then ``$GOOGLE_API_KEY``).
        It travels in the ``x-goog-api-key`` header, never in the URL.
    :param voice: ``"Puck"``, ``"Charon"``, ``"Kore"``, ``"Fenrir"``, ...
    :param enable_input_audio_transcription: transcribe the user's speech.
    :param websocket_url: the endpoint (default ``$GEMINI_LIVE_URL``, then Google's).
    :raises ValueError: when no API key is given or found.
    """

    support_input_modalities: list[str] = ["audio", "text", "image", "tool_result"]  # noqa: RUF012
    provider = "gemini"

    def __init__(
        self,
        model_name: str,
        api_key: str | None = None,
        voice: Literal["Puck", "Charon", "Kore", "Fenrir"] | str = "Puck",
        enable_input_audio_transcription: bool = True,
        *,
        websocket_url: str | None = None,
    ) -> None:
        super().__init__(model_name)
        key = api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
        if not key:
            raise ValueError(
                "GeminiRealtimeModel needs an API key: pass api_key=... or set GEMINI_API_KEY"
            )
        self.voice = voice
        self.enable_input_audio_transcription = enable_input_audio_transcription
        self.input_sample_rate = 16000
        self.output_sample_rate = 24000
        self.websocket_url = websocket_url or os.environ.get("GEMINI_LIVE_URL", GEMINI_LIVE_URL)
        self.websocket_headers = SecretHeaders(
            {"Content-Type": "application/json", "x-goog-api-key": key}
        )
        self._secrets = Secrets((key,))
        self._response_id: str | None = None
        self._said = {"audio": False, "transcript": False}
        self._heard: list[str] = []
        self._usage = (0, 0)

    def _build_session_config(
        self, instructions: str, tools: list[dict[str, Any]] | None, **kwargs: Any
    ) -> dict[str, Any]:
        setup: dict[str, Any] = {
            "model": f"models/{self.model_name}",
            "systemInstruction": {"parts": [{"text": instructions}]},
            "outputAudioTranscription": {},
        }
        if self.enable_input_audio_transcription:
            setup["inputAudioTranscription"] = {}
        generation: dict[str, Any] = {"responseModalities": ["AUDIO"], **kwargs}
        if self.voice:
            generation["speechConfig"] = {
                "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": self.voice}}
            }
        setup["generationConfig"] = generation
        if tools:
            declarations = [dict(tool["function"]) for tool in tools if "function" in tool]
            setup["tools"] = [{"function_declarations": declarations}]
        return {"setup": setup}

    async def send(self, data: AudioBlock | TextBlock | ImageBlock | ToolResultBlock) -> None:
        """Send user audio (base64 PCM at 16 kHz), an image (base64), text (a complete user
        turn) or a tool result.

        :raises RuntimeError: when not connected.
        :raises ModelAPIError: when the provider has closed the connection.
        :raises ValueError: for audio or an image given by URL (not fetched here).
        """
        if isinstance(data, AudioBlock):
            source = self._inline_source(data, "audio")
            mime = f"audio/pcm;rate={self.input_sample_rate}"
            message: dict[str, Any] = {
                "realtimeInput": {"audio": {"mimeType": mime, "data": source.data}}
            }
        elif isinstance(data, ImageBlock):
            source = self._inline_source(data, "images")
            media = {"mimeType": source.media_type or "image/jpeg", "data": source.data}
            message = {"realtimeInput": {"video": media}}
        elif isinstance(data, TextBlock):
            turn = {"role": "user", "parts": [{"text": data.text}]}
            message = {"clientContent": {"turns": [turn], "turnComplete": True}}
        elif isinstance(data, ToolResultBlock):
            answer = {"id": data.id, "name": data.name, "response": _tool_response(data.output)}
            message = {"toolResponse": {"functionResponses": [answer]}}
        else:
            logger.warning(
                "Gemini Live API does not support %s data input", getattr(data, "type", data)
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
        usage = data.get("usageMetadata")
        if isinstance(usage, dict):
            self._usage = (
                int(usage.get("promptTokenCount") or 0),
                int(usage.get("responseTokenCount") or usage.get("candidatesTokenCount") or 0),
            )
        events: list[_Event] = []
        if "setupComplete" in data:
            events.append(ModelEvents.ModelSessionCreatedEvent(session_id=_SESSION_ID))
        if isinstance(data.get("serverContent"), dict):
            events += self._server_content(data["serverContent"])
        if isinstance(data.get("toolCall"), dict):
            events += self._tool_calls(data["toolCall"])
        if "toolCallCancellation" in data:
            logger.info("Gemini cancelled tool calls: %s", data["toolCallCancellation"])
            events += self._finish_response()
        if isinstance(data.get("goAway"), dict):
            left = data["goAway"].get("timeLeft", "")
            reason = f"the server ends the session (time left: {left or 'none'})"
            events.append(ModelEvents.ModelSessionEndedEvent(session_id=_SESSION_ID, reason=reason))
        if data.get("error"):
            events.append(error_event(data["error"], type_field="status"))
        return events or None

    def _server_content(self, content: dict[str, Any]) -> list[_Event]:
        """The events of one ``serverContent``, in the order a listener needs them: what the
        user said, the barge-in, the response's output, its end."""
        events: list[_Event] = []
        # Both read before anything is kept: a transcript that is not text (kept, it would
        # fail every later turn) skips the message whole.
        heard = _text(content.get("inputTranscription"), "inputTranscription")
        said = _text(content.get("outputTranscription"), "outputTranscription")
        if heard:
            self._heard.append(heard)
            events.append(ModelEvents.ModelInputTranscriptionDeltaEvent(item_id="", delta=heard))
        if content.get("interrupted"):
            # The user spoke over the model: Gemini has stopped this response.
            events.append(ModelEvents.ModelInputStartedEvent(item_id="", audio_start_ms=0))
            events += self._finish_response()
        for part in (content.get("modelTurn") or {}).get("parts") or []:
            events += self._model_part(part)
        if said:
            events += self._transcript_delta(said)
        if content.get("generationComplete"):
            events += self._output_done()
        if content.get("turnComplete"):
            # The turn's end, not the generation's, carries the usage.
            events += self._input_done()
            events += self._finish_response()
        return events

    def _model_part(self, part: dict[str, Any]) -> list[_Event]:
        inline = part.get("inlineData") or {}
        if str(inline.get("mimeType", "")).startswith("audio/") and inline.get("data"):
            if not isinstance(inline["data"], str):
                # Checked before the response starts: the message is skipped whole.
                raise TypeError(f"audio data is {type(inline['data']).__name__}, not base64 text")
            events = self._start_response()
            self._said["audio"] = True
            events.append(
                ModelEvents.ModelResponseAudioDeltaEvent(
                    response_id=self._response_id or "",
                    item_id="",
                    delta=inline["data"],
                    format=AudioFormat(type="audio/pcm", rate=self.output_sample_rate),
                )
            )
            return events
        if part.get("text") and not part.get("thought"):
            return self._transcript_delta(_text(part, "a model turn's part"))
        return []

    def _transcript_delta(self, text: str) -> list[_Event]:
        events = self._start_response()
        self._said["transcript"] = True
        events.append(
            ModelEvents.ModelResponseAudioTranscriptDeltaEvent(
                response_id=self._response_id or "", item_id="", delta=text
            )
        )
        return events

    def _tool_calls(self, call: dict[str, Any]) -> list[_Event]:
        functions = call.get("functionCalls") or []
        if not isinstance(functions, list) or not all(isinstance(f, dict) for f in functions):
            raise TypeError("toolCall.functionCalls is not a list of objects")
        events = self._start_response()
        for function in functions:
            args = function.get("args") or {}
            raw = json.dumps(args, ensure_ascii=False)
            events.append(
                ModelEvents.ModelResponseToolUseDoneEvent(
                    response_id=self._response_id or "",
                    item_id="",
                    tool_use=tool_use(function.get("id", ""), function.get("name", ""), args, raw),
                )
            )
        return events

    def _start_response(self) -> list[_Event]:
        """The user's finished transcript and a ``ModelResponseCreatedEvent`` when this output
        starts a response, else nothing."""
        if self._response_id:
            return []
        events = self._input_done()
        self._response_id = f"resp_{new_id()}"
        events.append(ModelEvents.ModelResponseCreatedEvent(response_id=self._response_id))
        return events

    def _input_done(self) -> list[_Event]:
        if not self._heard:
            return []
        transcript, self._heard = "".join(self._heard), []
        return [ModelEvents.ModelInputTranscriptionDoneEvent(transcript=transcript, item_id="")]

    def _output_done(self) -> list[_Event]:
        """The done events of the audio and the transcript said so far (once each)."""
        events: list[_Event] = []
        response_id = self._response_id or ""
        if self._said["audio"]:
            events.append(
                ModelEvents.ModelResponseAudioDoneEvent(response_id=response_id, item_id="")
            )
        if self._said["transcript"]:
            events.append(
                ModelEvents.ModelResponseAudioTranscriptDoneEvent(
                    response_id=response_id, item_id=""
                )
            )
        self._said = {"audio": False, "transcript": False}
        return events

    def _finish_response(self) -> list[_Event]:
        """The done events of the response in progress (none when there is none)."""
        events = self._output_done()
        response_id, self._response_id = self._response_id, None
        if not response_id:
            return events
        (input_tokens, output_tokens), self._usage = self._usage, (0, 0)
        events.append(
            ModelEvents.ModelResponseDoneEvent(
                response_id=response_id, input_tokens=input_tokens, output_tokens=output_tokens
            )
        )
        return events


def _text(container: Any, what: str) -> str:
    """The ``text`` of *container* (``""`` when it is absent or has none).

    :raises TypeError: when *container* is not an object or its text is not a string.
    """
    if not container:
        return ""
    text = container.get("text", "") if isinstance(container, dict) else None
    if not isinstance(text, str):
        raise TypeError(f"{what} is not an object with a text")
    return text


def _tool_response(output: Any) -> dict[str, Any]:
    """The ``response`` object Gemini wants, from a tool's output (AgentScope's rule: a JSON
    object string as is, other text as ``{"result": text}``)."""
    if isinstance(output, str):
        try:
            value = json.loads(output)
        except ValueError:
            return {"result": output}
        return value if isinstance(value, dict) else {"result": output}
    text = "".join(str(getattr(block, "text", "")) for block in output)
    return {"result": text}
