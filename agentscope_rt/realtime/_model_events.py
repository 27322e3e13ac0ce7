"""The model events of AgentScope's realtime module: what a realtime model API said, in one
provider-neutral form (pydantic models with AgentScope's names, fields and ``type`` values)."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..message import ToolUseBlock

__all__ = ["AudioFormat", "ModelEventType", "ModelEvents"]


class AudioFormat(BaseModel):
    """The format of audio data: ``type`` (e.g. ``audio/pcm``) and sample ``rate``."""

    model_config = ConfigDict(extra="allow")
    type: str
    rate: int


class ModelEventType(str, Enum):  # noqa: UP042 (AgentScope's base classes)
    """The types of the model events (AgentScope's values)."""

    MODEL_SESSION_CREATED = "model_session_created"
    MODEL_SESSION_ENDED = "model_session_ended"
    MODEL_RESPONSE_CREATED = "model_response_created"
    MODEL_RESPONSE_DONE = "model_response_done"
    MODEL_RESPONSE_AUDIO_DELTA = "model_response_audio_delta"
    MODEL_RESPONSE_AUDIO_DONE = "model_response_audio_done"
    MODEL_RESPONSE_AUDIO_TRANSCRIPT_DELTA = "model_response_audio_transcript_delta"
    MODEL_RESPONSE_AUDIO_TRANSCRIPT_DONE = "model_response_audio_transcript_done"
    MODEL_RESPONSE_TOOL_USE_DELTA = "model_response_tool_use_delta"
    MODEL_RESPONSE_TOOL_USE_DONE = "model_response_tool_use_done"
    MODEL_INPUT_TRANSCRIPTION_DELTA = "model_input_transcription_delta"
    MODEL_INPUT_TRANSCRIPTION_DONE = "model_input_transcription_done"
    MODEL_INPUT_STARTED = "model_input_started"
    MODEL_INPUT_DONE = "model_input_done"
    MODEL_ERROR = "model_error"
    MODEL_WEBSOCKET_CONNECT = "model_websocket_connect"
    MODEL_WEBSOCKET_DISCONNECT = "model_websocket_disconnect"


_T = ModelEventType


class ModelEvents:
    """The model events (a namespace, as AgentScope's)."""

    class EventBase(BaseModel):
        """A model event."""

        model_config = ConfigDict(arbitrary_types_allowed=True)

    class ModelSessionCreatedEvent(EventBase):
        session_id: str
        type: Literal[_T.MODEL_SESSION_CREATED] = _T.MODEL_SESSION_CREATED

    class ModelSessionEndedEvent(EventBase):
        session_id: str
        reason: str
        type: Literal[_T.MODEL_SESSION_ENDED] = _T.MODEL_SESSION_ENDED

    class ModelResponseCreatedEvent(EventBase):
        response_id: str
        type: Literal[_T.MODEL_RESPONSE_CREATED] = _T.MODEL_RESPONSE_CREATED

    class ModelResponseDoneEvent(EventBase):
        response_id: str
        input_tokens: int
        output_tokens: int
        metadata: dict[str, str] = Field(default_factory=dict)
        type: Literal[_T.MODEL_RESPONSE_DONE] = _T.MODEL_RESPONSE_DONE

    class ModelResponseAudioDeltaEvent(EventBase):
        response_id: str
        item_id: str
        delta: str
        format: AudioFormat
        type: Literal[_T.MODEL_RESPONSE_AUDIO_DELTA] = _T.MODEL_RESPONSE_AUDIO_DELTA

    class ModelResponseAudioDoneEvent(EventBase):
        response_id: str
        item_id: str
        type: Literal[_T.MODEL_RESPONSE_AUDIO_DONE] = _T.MODEL_RESPONSE_AUDIO_DONE

    class ModelResponseAudioTranscriptDeltaEvent(EventBase):
        response_id: str
        item_id: str
        delta: str
        type: Literal[_T.MODEL_RESPONSE_AUDIO_TRANSCRIPT_DELTA] = (
            _T.MODEL_RESPONSE_AUDIO_TRANSCRIPT_DELTA
        )

    class ModelResponseAudioTranscriptDoneEvent(EventBase):
        response_id: str
        item_id: str
        type: Literal[_T.MODEL_RESPONSE_AUDIO_TRANSCRIPT_DONE] = (
            _T.MODEL_RESPONSE_AUDIO_TRANSCRIPT_DONE
        )

    class ModelResponseToolUseDeltaEvent(EventBase):
        response_id: str
        item_id: str
        tool_use: Any
        """A :class:`ToolUseBlock` whose ``raw_input`` holds the arguments so far."""
        type: Literal[_T.MODEL_RESPONSE_TOOL_USE_DELTA] = _T.MODEL_RESPONSE_TOOL_USE_DELTA

    class ModelResponseToolUseDoneEvent(EventBase):
        response_id: str
        item_id: str
        tool_use: Any
        """The complete :class:`ToolUseBlock`."""
        type: Literal[_T.MODEL_RESPONSE_TOOL_USE_DONE] = _T.MODEL_RESPONSE_TOOL_USE_DONE

    class ModelInputTranscriptionDeltaEvent(EventBase):
        item_id: str
        delta: str
        type: Literal[_T.MODEL_INPUT_TRANSCRIPTION_DELTA] = _T.MODEL_INPUT_TRANSCRIPTION_DELTA

    class ModelInputTranscriptionDoneEvent(EventBase):
        transcript: str
        item_id: str
        input_tokens: int | None = None
        output_tokens: int | None = None
        type: Literal[_T.MODEL_INPUT_TRANSCRIPTION_DONE] = _T.MODEL_INPUT_TRANSCRIPTION_DONE

    class ModelInputStartedEvent(EventBase):
        item_id: str
        audio_start_ms: int
        type: Literal[_T.MODEL_INPUT_STARTED] = _T.MODEL_INPUT_STARTED

    class ModelInputDoneEvent(EventBase):
        item_id: str
        audio_end_ms: int
        type: Literal[_T.MODEL_INPUT_DONE] = _T.MODEL_INPUT_DONE

    class ModelErrorEvent(EventBase):
        error_type: str
        code: str
        message: str
        type: Literal[_T.MODEL_ERROR] = _T.MODEL_ERROR

    class WebsocketConnectEvent(EventBase):
        type: Literal[_T.MODEL_WEBSOCKET_CONNECT] = _T.MODEL_WEBSOCKET_CONNECT

    class WebsocketDisconnectEvent(EventBase):
        type: Literal[_T.MODEL_WEBSOCKET_DISCONNECT] = _T.MODEL_WEBSOCKET_DISCONNECT


def tool_use(call_id: str, name: str, arguments: Any, raw: str) -> ToolUseBlock:
    """The tool call block a tool-use event carries."""
    return ToolUseBlock(id=call_id, name=name, input=arguments, raw_input=raw)
