"""eSpeak NG through ctypes: the offline voice.

The library and its voice data come from the ``espeakng-loader`` wheel (the ``voice``
extra: libespeak-ng and its data inside a 10 MB wheel, nothing downloaded at
run time); without it a system libespeak-ng (Debian's ``espeak-ng`` package) is used. eSpeak's
state is process-wide, so one synthesis runs at a time (a lock), in a worker thread; a
cancelled caller makes the library stop at its next audio chunk.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from typing import Any

import anyio.to_thread

__all__ = ["ESPEAK_RATE", "espeak_available", "speak"]

ESPEAK_RATE = 22050
"""eSpeak NG's output: 16-bit mono PCM at this rate."""

_AUDIO_OUTPUT_SYNCHRONOUS = 2
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
_PARAM_RATE = 1
_PARAM_PITCH = 3
_BUFFER_MS = 200

_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)

_lock = threading.Lock()
_callback: Any = None  # set with the library; kept here so ctypes does not free it
_library: Any = None
_state = threading.local()


def _load() -> Any:
    """The initialised library (loaded once).

    :raises RuntimeError: when neither ``espeakng-loader`` nor a system libespeak-ng is there.
    """
    global _library
    if _library is not None:
        return _library
    data_path: bytes | None = None
    try:
        import espeakng_loader

        lib = ctypes.CDLL(espeakng_loader.get_library_path())
        data_path = espeakng_loader.get_data_path().encode()
    except ImportError:
        name = ctypes.util.find_library("espeak-ng")
        if name is None:
            from .._extras import install_command

            raise RuntimeError(
                "the offline voice needs eSpeak NG: install the 'voice' extra with "
                f"{install_command('voice')} (or the system's espeak-ng package)"
            ) from None
        lib = ctypes.CDLL(name)
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.espeak_Synth.argtypes = [
        ctypes.c_char_p,
        ctypes.c_size_t,
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    global _callback
    _callback = _CALLBACK(_on_audio)
    if lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, _BUFFER_MS, data_path, 0) <= 0:
        raise RuntimeError("eSpeak NG failed to initialise (its voice data was not found)")
    # One callback for the process: it appends to the calling thread's list, or asks the
    # library to stop when that call was abandoned.
    lib.espeak_SetSynthCallback(_callback)
    _library = lib
    return lib


def _on_audio(wav: Any, samples: int, _events: Any) -> int:
    if getattr(_state, "stop", None) is not None and _state.stop.is_set():
        return 1
    if samples > 0 and wav:
        _state.chunks.append(ctypes.string_at(wav, samples * 2))
    return 0


def espeak_available() -> bool:
    """Whether eSpeak NG can be loaded here."""
    try:
        _load()
    except (RuntimeError, OSError):
        return False
    return True


def _speak_blocking(text: str, voice: str, speed: int, pitch: int, stop: threading.Event) -> bytes:
    with _lock:
        lib = _load()
        if lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise ValueError(f"eSpeak NG has no voice named {voice!r}")
        lib.espeak_SetParameter(_PARAM_RATE, speed, 0)
        lib.espeak_SetParameter(_PARAM_PITCH, pitch, 0)
        _state.chunks, _state.stop = [], stop
        data = text.encode("utf-8")
        try:
            lib.espeak_Synth(data, len(data) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None)
            return b"".join(_state.chunks)
        finally:
            _state.chunks, _state.stop = [], None


async def speak(text: str, voice: str, speed: int, pitch: int) -> bytes:
    """*text* spoken by eSpeak NG: 16-bit mono PCM at :data:`ESPEAK_RATE`.

    Runs in a worker thread; when the caller is cancelled the thread is told to stop and the
    caller does not wait for it.

    :raises ValueError: for a voice eSpeak NG does not have.
    :raises RuntimeError: when eSpeak NG is not installed.
    """
    stop = threading.Event()
    try:
        return await anyio.to_thread.run_sync(
            _speak_blocking, text, voice, speed, pitch, stop, abandon_on_cancel=True
        )
    finally:
        stop.set()
