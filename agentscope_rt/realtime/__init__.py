"""Realtime (speech in, speech out) models: AgentScope's model events and
:class:`RealtimeModelBase` on anyio, and :class:`OpenAIRealtimeModel` (see ``docs/realtime.md``).
"""

from ._base import RealtimeModelBase
from ._dashscope_realtime_model import DashScopeRealtimeModel
from ._gemini_realtime_model import GeminiRealtimeModel
from ._model_events import AudioFormat, ModelEvents, ModelEventType
from ._openai_realtime_model import OpenAIRealtimeModel

__all__ = [
    "AudioFormat",
    "DashScopeRealtimeModel",
    "GeminiRealtimeModel",
    "ModelEventType",
    "ModelEvents",
    "OpenAIRealtimeModel",
    "RealtimeModelBase",
]
