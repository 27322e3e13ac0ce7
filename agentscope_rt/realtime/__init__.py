"""Realtime (speech in, speech out): AgentScope's model, server and client events,
:class:`RealtimeModelBase` on anyio, the OpenAI, Gemini and DashScope realtime models,
:class:`RealtimeAgent` (with barge-in) and :class:`ChatRoom` (see ``docs/realtime.md``).
"""

from ._base import RealtimeModelBase
from ._chat_room import ChatRoom
from ._client_events import ClientEvents, ClientEventType
from ._dashscope_realtime_model import DashScopeRealtimeModel
from ._gemini_realtime_model import GeminiRealtimeModel
from ._model_events import AudioFormat, ModelEvents, ModelEventType
from ._openai_realtime_model import OpenAIRealtimeModel
from ._realtime_agent import RealtimeAgent
from ._server_events import ServerEvents, ServerEventType

__all__ = [
    "AudioFormat",
    "ChatRoom",
    "ClientEventType",
    "ClientEvents",
    "DashScopeRealtimeModel",
    "GeminiRealtimeModel",
    "ModelEventType",
    "ModelEvents",
    "OpenAIRealtimeModel",
    "RealtimeAgent",
    "RealtimeModelBase",
    "ServerEventType",
    "ServerEvents",
]
