"""The offline voice: :class:`EspeakTTSModel`, eSpeak NG with no key, no network and no
download at run time."""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from typing import Any

from ..message import Msg
from ._espeak import ESPEAK_RATE, speak
from ._tts_base import TTSModelBase
from ._tts_response import AudioBuffer, TTSResponse

__all__ = ["EspeakTTSModel"]

# A sentence ends at . ! ? ; : or a newline followed by white space (or CJK full stops).
_SENTENCE_END = re.compile(r"(?:[.!?;:](?=\s)|[。！？；\n])\s*")


def _complete_part(text: str) -> str:
    """The part of *text* up to its last sentence end (``""`` when there is none)."""
    end = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end()
    return text[:end]


def _sentences(text: str) -> list[str]:
    parts, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        parts.append(text[start : match.end()])
        start = match.end()
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


class EspeakTTSModel(TTSModelBase):
    """Offline text to speech with eSpeak NG (robotic, but it needs nothing but the
    ``voice`` extra).

    It takes streaming input: :meth:`push` speaks each sentence as soon as the text so far
    completes it, so an agent's reply is heard while the model still writes; :meth:`synthesize`
    speaks the rest. Audio is 16-bit mono PCM at 22,050 Hz (``audio/pcm;rate=22050``).

    :param model_name: shown in reprs only.
    :param voice: an eSpeak NG voice (``"en-us"``, ``"en"``, ``"de"``, ``"cmn"``, ...).
    :param stream: whether :meth:`synthesize` yields sentence by sentence.
    :param speed: words per minute (80 to 450).
    :param pitch: 0 to 99.
    :raises ValueError: for a speed or pitch out of range.
    """

    supports_streaming_input: bool = True
    media_type = f"audio/pcm;rate={ESPEAK_RATE}"

    def __init__(
        self,
        model_name: str = "espeak-ng",
        voice: str = "en-us",
        stream: bool = True,
        speed: int = 175,
        pitch: int = 50,
    ) -> None:
        super().__init__(model_name, stream)
        if not 80 <= speed <= 450:
            raise ValueError(f"speed must be between 80 and 450 words per minute, not {speed}")
        if not 0 <= pitch <= 99:
            raise ValueError(f"pitch must be between 0 and 99, not {pitch}")
        self.voice = voice
        self.speed = speed
        self.pitch = pitch
        self._reset()

    def _reset(self) -> None:
        self._msg_id: str | None = None
        self._spoken = ""
        self._buffer = AudioBuffer(self.media_type)

    async def connect(self) -> None:
        """Start a new message (there is no connection to open)."""
        self._reset()

    async def close(self) -> None:
        """Forget the message in progress."""
        self._reset()

    def _take(self, msg: Msg) -> str:
        """*msg*'s text not spoken yet (a new message starts afresh)."""
        if msg.id != self._msg_id:
            self._reset()
            self._msg_id = msg.id
        text = msg.get_text_content() or ""
        return text[len(self._spoken) :] if text.startswith(self._spoken) else text

    async def _say(self, text: str) -> None:
        self._buffer.add(await speak(text, self.voice, self.speed, self.pitch))
        self._spoken += text

    async def push(self, msg: Msg, **kwargs: Any) -> TTSResponse:
        """Speak the sentences *msg*'s text has completed since the last call; the audio of
        this message so far.

        :raises ValueError: for a voice eSpeak NG does not have.
        :raises RuntimeError: when eSpeak NG is not installed.
        """
        complete = _complete_part(self._take(msg))
        if complete.strip():
            await self._say(complete)
        return TTSResponse(content=self._buffer.block(), is_last=False)

    async def synthesize(
        self, msg: Msg | None = None, **kwargs: Any
    ) -> TTSResponse | AsyncGenerator[TTSResponse, None]:
        """Speak the rest of *msg*'s text; all the audio of the message (sentence by
        sentence with ``stream=True``).

        :raises ValueError: for a voice eSpeak NG does not have.
        :raises RuntimeError: when eSpeak NG is not installed.
        """
        if msg is None or not msg.get_text_content():
            self._reset()
            return TTSResponse(content=None)
        rest = _sentences(self._take(msg))
        if self.stream:
            return self._stream(rest)
        for sentence in rest:
            await self._say(sentence)
        response = self._buffer.response(final=True)
        self._reset()
        return response

    async def _stream(self, sentences: list[str]) -> AsyncGenerator[TTSResponse, None]:
        buffer = self._buffer
        for sentence in sentences:
            await self._say(sentence)
            yield buffer.response(final=False)
        self._reset()
        yield buffer.response(final=True)
