"""AgentScope's client events: what the frontend sends to the backend. Pydantic models with
AgentScope's names, fields and ``type`` values, and :meth:`ClientEvents.from_json`."""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ..exception import MessageFormatError
from ._model_events import AudioFormat

__all__ = ["ClientEventType", "ClientEvents"]


class ClientEventType(str, Enum):  # noqa: UP042 (AgentScope's base classes)
    """The types of the client events (AgentScope's values)."""

    CLIENT_SESSION_CREATE = "client_session_create"
    CLIENT_SESSION_END = "client_session_end"
    CLIENT_RESPONSE_CREATE = "client_response_create"
    CLIENT_RESPONSE_CANCEL = "client_response_cancel"
    CLIENT_IMAGE_APPEND = "client_image_append"
    CLIENT_TEXT_APPEND = "client_text_append"
    CLIENT_AUDIO_APPEND = "client_audio_append"
    CLIENT_AUDIO_COMMIT = "client_audio_commit"
    CLIENT_TOOL_RESULT = "client_tool_result"


_T = ClientEventType


class ClientEvents:
    """The client events (a namespace, as AgentScope's)."""

    class EventBase(BaseModel):
        """A client event."""

        model_config = ConfigDict(arbitrary_types_allowed=True)

    class ClientSessionCreateEvent(EventBase):
        type: ClientEventType = _T.CLIENT_SESSION_CREATE
        config: dict[str, Any]

    class ClientSessionEndEvent(EventBase):
        type: ClientEventType = _T.CLIENT_SESSION_END
        session_id: str

    class ClientResponseCreateEvent(EventBase):
        type: ClientEventType = _T.CLIENT_RESPONSE_CREATE
        session_id: str

    class ClientResponseCancelEvent(EventBase):
        type: ClientEventType = _T.CLIENT_RESPONSE_CANCEL
        session_id: str

    class ClientImageAppendEvent(EventBase):
        type: ClientEventType = _T.CLIENT_IMAGE_APPEND
        session_id: str
        image: str
        """Base64 image data."""
        format: dict[str, Any]

    class ClientTextAppendEvent(EventBase):
        type: ClientEventType = _T.CLIENT_TEXT_APPEND
        session_id: str
        text: str

    class ClientAudioAppendEvent(EventBase):
        type: ClientEventType = _T.CLIENT_AUDIO_APPEND
        session_id: str
        audio: str
        """Base64 audio data."""
        format: AudioFormat

    class ClientAudioCommitEvent(EventBase):
        type: ClientEventType = _T.CLIENT_AUDIO_COMMIT
        session_id: str

    class ClientToolResultEvent(EventBase):
        type: ClientEventType = _T.CLIENT_TOOL_RESULT
        session_id: str
        id: str
        name: str
        output: Any
        """A string or a list of text/image/audio/video blocks."""

    MAPPING: ClassVar[dict[ClientEventType, type[EventBase]]] = {
        _T.CLIENT_SESSION_CREATE: ClientSessionCreateEvent,
        _T.CLIENT_SESSION_END: ClientSessionEndEvent,
        _T.CLIENT_RESPONSE_CREATE: ClientResponseCreateEvent,
        _T.CLIENT_RESPONSE_CANCEL: ClientResponseCancelEvent,
        _T.CLIENT_IMAGE_APPEND: ClientImageAppendEvent,
        _T.CLIENT_TEXT_APPEND: ClientTextAppendEvent,
        _T.CLIENT_AUDIO_APPEND: ClientAudioAppendEvent,
        _T.CLIENT_AUDIO_COMMIT: ClientAudioCommitEvent,
        _T.CLIENT_TOOL_RESULT: ClientToolResultEvent,
    }

    @classmethod
    def from_json(cls, json_data: dict[str, Any]) -> ClientEvents.EventBase:
        """The client event of a JSON object (the frontend's message).

        :raises ValueError: (a :class:`MessageFormatError`) when *json_data* is not an object
            with a known ``type``, or its fields do not fit that event.
        """
        if not isinstance(json_data, dict) or "type" not in json_data:
            raise MessageFormatError(f"a client event is an object with a 'type': {json_data!r}")
        try:
            event_class = cls.MAPPING[ClientEventType(json_data["type"])]
        except ValueError:
            raise MessageFormatError(f"unknown client event type: {json_data['type']!r}") from None
        try:
            return event_class(**json_data)
        except ValidationError as exc:
            raise MessageFormatError(f"bad {json_data['type']} event: {exc}") from None
