"""Text to speech: AgentScope's TTS models, an offline voice, and a player that never holds up
the agent.

* :class:`TTSModelBase`, :class:`TTSResponse`, :class:`TTSUsage` — AgentScope's interface.
* Over HTTP (httpx): :class:`OpenAITTSModel`, :class:`GeminiTTSModel`,
  :class:`DashScopeTTSModel`. Over WebSocket (``wsproto``, the ``dashscope`` extra):
  :class:`DashScopeRealtimeTTSModel`, :class:`DashScopeCosyVoiceTTSModel`,
  :class:`DashScopeCosyVoiceRealtimeTTSModel`. All run under asyncio and trio.
* :class:`EspeakTTSModel` — offline, no key (the ``voice`` extra ships eSpeak NG).
* :class:`SpeechPlayer` with :class:`WavFileSink`, :class:`CommandSink`, :func:`default_sink`.

``ReActAgent(tts_model=...)`` speaks its replies as they stream (see ``docs/tts.md``).
"""

from ._dashscope_cosyvoice_tts_model import (
    DashScopeCosyVoiceRealtimeTTSModel,
    DashScopeCosyVoiceTTSModel,
)
from ._dashscope_realtime_tts_model import DashScopeRealtimeTTSModel
from ._dashscope_tts_model import DashScopeTTSModel
from ._espeak_tts_model import EspeakTTSModel
from ._gemini_tts_model import GeminiTTSModel
from ._openai_tts_model import OpenAITTSModel
from ._player import AudioSink, CommandSink, SpeechPlayer, WavFileSink, default_sink
from ._tts_base import TTSModelBase
from ._tts_response import TTSResponse, TTSUsage

__all__ = [
    "AudioSink",
    "CommandSink",
    "DashScopeCosyVoiceRealtimeTTSModel",
    "DashScopeCosyVoiceTTSModel",
    "DashScopeRealtimeTTSModel",
    "DashScopeTTSModel",
    "EspeakTTSModel",
    "GeminiTTSModel",
    "OpenAITTSModel",
    "SpeechPlayer",
    "TTSModelBase",
    "TTSResponse",
    "TTSUsage",
    "WavFileSink",
    "default_sink",
]
