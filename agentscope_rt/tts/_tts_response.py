"""What a text-to-speech model returns: :class:`TTSResponse` and its :class:`TTSUsage`, and the
cumulative audio buffer the models share."""

from __future__ import annotations

import base64
from typing import Any, Literal

import attrs

from .._ids import new_id
from ..message import AudioBlock, Base64Source, now_timestamp

__all__ = ["PCM_24K", "AudioBuffer", "TTSResponse", "TTSUsage"]

PCM_24K = "audio/pcm;rate=24000"
"""The media type of the providers' 16-bit mono PCM at 24 kHz (what AgentScope asks them for)."""

# Bytes encoded at a time: a multiple of 2 (whole 16-bit samples) and of 3 (whole base64
# quanta), so that every cumulative chunk's data is a prefix of the next one's.
_ALIGN = 6


@attrs.define(slots=True)
class TTSUsage:
    """The cost of one synthesis.

    :ivar input_tokens: tokens the provider billed for the text (0 when it does not say).
    :ivar output_tokens: tokens the provider billed for the audio (0 when it does not say).
    :ivar time: seconds the synthesis took.
    """

    input_tokens: int
    output_tokens: int
    time: float
    type: Literal["tts"] = "tts"


@attrs.define(slots=True)
class TTSResponse:
    """One answer of a text-to-speech model, as AgentScope's.

    :ivar content: the audio so far (base64 in an :class:`AudioBlock`), or ``None`` when there
        is none yet. In a stream each response holds all the audio of the synthesis up to
        that point (its data is a prefix of the next one's), like the chunks of a streamed
        message.
    :ivar is_last: whether this is the last response of a stream.
    """

    content: AudioBlock | None
    id: str = attrs.field(factory=new_id)
    created_at: str = attrs.field(factory=now_timestamp)
    type: Literal["tts"] = "tts"
    usage: TTSUsage | None = None
    metadata: dict[str, Any] | None = None
    is_last: bool = True


class AudioBuffer:
    """The audio of one synthesis as it arrives, kept as base64 whose earlier values are
    prefixes of the later ones (bytes are encoded six at a time: whole samples, whole
    base64 quanta), so a reader can take what is new by slicing."""

    __slots__ = ("_data", "_pending", "media_type", "size")

    def __init__(self, media_type: str = PCM_24K) -> None:
        self.media_type = media_type
        self._data: list[str] = []
        self._pending = b""
        self.size = 0
        """Bytes received so far."""

    def add(self, audio: bytes) -> None:
        """Append raw *audio* bytes."""
        if not audio:
            return
        self.size += len(audio)
        pending = self._pending + audio
        cut = len(pending) - len(pending) % _ALIGN
        if cut:
            self._data.append(base64.b64encode(pending[:cut]).decode("ascii"))
        self._pending = pending[cut:]

    def add_base64(self, data: str) -> None:
        """Append audio given as base64 (what most providers send)."""
        self.add(base64.b64decode(data))

    def block(self, final: bool = False) -> AudioBlock | None:
        """The audio so far as one block (``None`` when there is none); *final* includes the
        last bytes that do not fill a whole six."""
        data = "".join(self._data)
        self._data = [data]  # joined once: the next call joins only what came since
        if final and self._pending:
            data += base64.b64encode(self._pending).decode("ascii")
        if not data:
            return None
        return AudioBlock(source=Base64Source(media_type=self.media_type, data=data))

    def response(self, *, final: bool, usage: TTSUsage | None = None) -> TTSResponse:
        """A :class:`TTSResponse` of the audio so far (``is_last`` is *final*)."""
        return TTSResponse(content=self.block(final), is_last=final, usage=usage)
