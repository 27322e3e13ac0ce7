"""AgentScope's server events: what a realtime agent (or the backend) tells the frontend and the
other agents. Pydantic models with AgentScope's names, fields and ``type`` values; each agent
event carries the ``agent_id`` and ``agent_name`` of the agent that sent it."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._model_events import AudioFormat, ModelEvents

__all__ = ["ServerEventType", "ServerEvents"]


class ServerEventType(str, Enum):  # noqa: UP042 (AgentScope's base classes)
    """The types of the server events (AgentScope's values)."""

    SERVER_SESSION_CREATED = "server_session_created"
    SERVER_SESSION_UPDATED = "server_session_updated"
    SERVER_SESSION_ENDED = "server_session_ended"
    AGENT_READY = "agent_ready"
    AGENT_ENDED = "agent_ended"
    AGENT_RESPONSE_CREATED = "agent_response_created"
    AGENT_RESPONSE_DONE = "agent_response_done"
    AGENT_RESPONSE_AUDIO_DELTA = "agent_response_audio_delta"
    AGENT_RESPONSE_AUDIO_DONE = "agent_response_audio_done"
    AGENT_RESPONSE_AUDIO_TRANSCRIPT_DELTA = "agent_response_audio_transcript_delta"
    AGENT_RESPONSE_AUDIO_TRANSCRIPT_DONE = "agent_response_audio_transcript_done"
    AGENT_RESPONSE_TOOL_USE_DELTA = "agent_response_tool_use_delta"
    AGENT_RESPONSE_TOOL_USE_DONE = "agent_response_tool_use_done"
    AGENT_RESPONSE_TOOL_RESULT = "agent_response_tool_result"
    AGENT_INPUT_TRANSCRIPTION_DELTA = "agent_input_transcription_delta"
    AGENT_INPUT_TRANSCRIPTION_DONE = "agent_input_transcription_done"
    AGENT_INPUT_STARTED = "agent_input_started"
    AGENT_INPUT_DONE = "agent_input_done"
    AGENT_ERROR = "agent_error"


_T = ServerEventType


class ServerEvents:
    """The server events (a namespace, as AgentScope's)."""

    class EventBase(BaseModel):
        """A server event."""

        model_config = ConfigDict(arbitrary_types_allowed=True)

    class ServerSessionCreatedEvent(EventBase):
        session_id: str
        type: Literal[_T.SERVER_SESSION_CREATED] = _T.SERVER_SESSION_CREATED

    class ServerSessionUpdatedEvent(EventBase):
        session_id: str
        type: Literal[_T.SERVER_SESSION_UPDATED] = _T.SERVER_SESSION_UPDATED

    class ServerSessionEndedEvent(EventBase):
        session_id: str
        type: Literal[_T.SERVER_SESSION_ENDED] = _T.SERVER_SESSION_ENDED

    class AgentReadyEvent(EventBase):
        agent_id: str
        agent_name: str
        type: Literal[_T.AGENT_READY] = _T.AGENT_READY

    class AgentEndedEvent(EventBase):
        agent_id: str
        agent_name: str
        type: Literal[_T.AGENT_ENDED] = _T.AGENT_ENDED

    class AgentResponseCreatedEvent(EventBase):
        response_id: str
        agent_id: str
        agent_name: str
        type: Literal[_T.AGENT_RESPONSE_CREATED] = _T.AGENT_RESPONSE_CREATED

    class AgentResponseDoneEvent(EventBase):
        response_id: str
        input_tokens: int
        output_tokens: int
        metadata: dict[str, str] = Field(default_factory=dict)
        agent_id: str
        agent_name: str
        type: Literal[_T.AGENT_RESPONSE_DONE] = _T.AGENT_RESPONSE_DONE

    class AgentResponseAudioDeltaEvent(EventBase):
        response_id: str
        item_id: str
        delta: str
        """Base64 audio."""
        format: AudioFormat
        agent_id: str
        agent_name: str
        type: Literal[_T.AGENT_RESPONSE_AUDIO_DELTA] = _T.AGENT_RESPONSE_AUDIO_DELTA

    class AgentResponseAudioDoneEvent(EventBase):
        response_id: str
        item_id: str
        agent_id: str
        agent_name: str
        type: Literal[_T.AGENT_RESPONSE_AUDIO_DONE] = _T.AGENT_RESPONSE_AUDIO_DONE

    class AgentResponseAudioTranscriptDeltaEvent(EventBase):
        response_id: str
        item_id: str
        delta: str
        agent_id: str
        agent_name: str
        type: Literal[_T.AGENT_RESPONSE_AUDIO_TRANSCRIPT_DELTA] = (
            _T.AGENT_RESPONSE_AUDIO_TRANSCRIPT_DELTA
        )

    class AgentResponseAudioTranscriptDoneEvent(EventBase):
        response_id: str
        item_id: str
        agent_id: str
        agent_name: str
        type: Literal[_T.AGENT_RESPONSE_AUDIO_TRANSCRIPT_DONE] = (
            _T.AGENT_RESPONSE_AUDIO_TRANSCRIPT_DONE
        )

    class AgentResponseToolUseDeltaEvent(EventBase):
        response_id: str
        item_id: str
        tool_use: Any
        """A :class:`ToolUseBlock` whose ``raw_input`` holds the arguments so far."""
        agent_id: str
        agent_name: str
        type: Literal[_T.AGENT_RESPONSE_TOOL_USE_DELTA] = _T.AGENT_RESPONSE_TOOL_USE_DELTA

    class AgentResponseToolUseDoneEvent(EventBase):
        response_id: str
        item_id: str
        tool_use: Any
        """The complete :class:`ToolUseBlock`."""
        agent_id: str
        agent_name: str
        type: Literal[_T.AGENT_RESPONSE_TOOL_USE_DONE] = _T.AGENT_RESPONSE_TOOL_USE_DONE

    class AgentResponseToolResultEvent(EventBase):
        tool_result: Any
        """The :class:`ToolResultBlock`."""
        agent_id: str
        agent_name: str
        type: Literal[_T.AGENT_RESPONSE_TOOL_RESULT] = _T.AGENT_RESPONSE_TOOL_RESULT

    class AgentInputTranscriptionDeltaEvent(EventBase):
        item_id: str
        delta: str
        agent_id: str
        agent_name: str
        type: Literal[_T.AGENT_INPUT_TRANSCRIPTION_DELTA] = _T.AGENT_INPUT_TRANSCRIPTION_DELTA

    class AgentInputTranscriptionDoneEvent(EventBase):
        transcript: str
        item_id: str
        input_tokens: int | None = None
        output_tokens: int | None = None
        agent_id: str
        agent_name: str
        type: Literal[_T.AGENT_INPUT_TRANSCRIPTION_DONE] = _T.AGENT_INPUT_TRANSCRIPTION_DONE

    class AgentInputStartedEvent(EventBase):
        item_id: str
        audio_start_ms: int
        agent_id: str
        agent_name: str
        type: Literal[_T.AGENT_INPUT_STARTED] = _T.AGENT_INPUT_STARTED

    class AgentInputDoneEvent(EventBase):
        item_id: str
        audio_end_ms: int
        agent_id: str
        agent_name: str
        type: Literal[_T.AGENT_INPUT_DONE] = _T.AGENT_INPUT_DONE

    class AgentErrorEvent(EventBase):
        error_type: str
        code: str
        message: str
        agent_id: str
        agent_name: str
        type: Literal[_T.AGENT_ERROR] = _T.AGENT_ERROR

    @classmethod
    def from_model_event(
        cls, model_event: ModelEvents.EventBase, agent_id: str, agent_name: str
    ) -> ServerEvents.EventBase:
        """The agent event of a model event (``Model...Event`` -> ``Agent...Event``, its type's
        ``model_`` prefix -> ``agent_``), with *agent_id* and *agent_name* added.

        :raises ValueError: for a model event that has no agent counterpart (the session and
            WebSocket events).
        """
        target = getattr(cls, type(model_event).__name__.replace("Model", "Agent", 1), None)
        if not isinstance(target, type) or not issubclass(target, ServerEvents.EventBase):
            raise ValueError(f"{type(model_event).__name__} has no agent event")
        # Fields are copied as they are (not dumped): a tool-use block stays a block.
        fields = {name: getattr(model_event, name) for name in type(model_event).model_fields}
        fields.pop("type", None)
        return target.model_validate({**fields, "agent_id": agent_id, "agent_name": agent_name})
