"""Playing an agent's speech without holding up the agent: :class:`SpeechPlayer` and the sinks
it writes to.

The player owns a task group (``async with SpeechPlayer(sink) as player:``). :meth:`feed` is
synchronous and never waits: it decodes what is new in a growing audio block and queues it;
the player's task writes the queue to the sink, which may take as long as the audio lasts (a
sound card plays in real time). :meth:`stop` drops what is queued and cancels the write under
way, then asks the sink to discard what it buffered, so speech stops at once (an agent's
``interrupt()`` calls it).
"""

from __future__ import annotations

import base64
import contextlib
import math
import re
import shutil
import threading
import wave
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, Self, runtime_checkable

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from anyio.streams.memory import MemoryObjectSendStream

from ..message import AudioBlock

__all__ = ["AudioSink", "CommandSink", "SpeechPlayer", "WavFileSink", "default_sink"]

DEFAULT_RATE = 24000
"""The sample rate assumed for audio whose media type names none."""

PLAY_OUT_TIMEOUT = 10.0
"""Seconds a player program may take to exit once its input is closed. The pipe holds at most
64 KiB (1.4 s of 24 kHz speech) and the players buffer a second or two more: one still
running after 10 s is stuck (a sound server that does not answer), and waiting for it would
hold up whoever closes the player, which no cancellation could end."""

_RATE = re.compile(r"rate=(\d+)")


@runtime_checkable
class AudioSink(Protocol):
    """Where a :class:`SpeechPlayer` sends 16-bit mono PCM."""

    async def write(self, pcm: bytes, rate: int) -> None:
        """Play (or store) *pcm* at *rate* Hz; may take as long as the audio lasts."""

    async def discard(self) -> None:
        """Drop audio written but not heard yet."""

    async def aclose(self) -> None:
        """Finish: let what was written play out, release the device or file."""


class WavFileSink:
    """Writes the speech to a WAV file (what the examples do when unattended).

    The file is created at the first write, with that audio's rate; audio of another rate
    later on is refused.

    :param path: the file to write.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: wave.Wave_write | None = None
        self._rate = 0
        self.frames = 0
        """Samples written so far."""

    async def write(self, pcm: bytes, rate: int) -> None:
        """Append *pcm*.

        :raises ValueError: for a rate other than the file's.
        """
        if self._file is None:
            self._file = await anyio.to_thread.run_sync(self._open, rate)
            self._rate = rate
        elif rate != self._rate:
            raise ValueError(f"{self.path}: audio at {rate} Hz in a {self._rate} Hz file")
        await anyio.to_thread.run_sync(self._file.writeframes, pcm)
        self.frames += len(pcm) // 2

    def _open(self, rate: int) -> wave.Wave_write:
        file = wave.open(str(self.path), "wb")  # noqa: SIM115 (closed in aclose)
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(rate)
        return file

    async def discard(self) -> None:
        """Nothing to drop: what was written is in the file."""

    async def aclose(self) -> None:
        """Close the file (its header then holds the length)."""
        file, self._file = self._file, None
        if file is not None:
            await anyio.to_thread.run_sync(file.close)


class CommandSink:
    """Pipes the speech into a player program (``aplay``, ``paplay``, ``ffplay``) started on
    the first write; :meth:`discard` kills it (the next write starts another), which is how
    buffered audio stops at once.

    :param command: the program and its arguments; ``{rate}`` in an argument is replaced by
        the sample rate.
    """

    def __init__(self, command: Sequence[str]) -> None:
        self.command = list(command)
        self._process: anyio.abc.Process | None = None
        self._rate = 0

    async def write(self, pcm: bytes, rate: int) -> None:
        """Send *pcm* to the program (starting it, or restarting it for another rate)."""
        if self._process is not None and rate != self._rate:
            await self.aclose()
        if self._process is None:
            args = [part.replace("{rate}", str(rate)) for part in self.command]
            self._process = await anyio.open_process(args, stdout=None, stderr=None)
            self._rate = rate
        assert self._process.stdin is not None
        await self._process.stdin.send(pcm)

    async def discard(self) -> None:
        """Kill the program: what it buffered is not heard."""
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            await _reap(process, PLAY_OUT_TIMEOUT)

    async def aclose(self) -> None:
        """Close the program's input and wait for it to play out, at most
        :data:`PLAY_OUT_TIMEOUT` seconds (then it is killed); shielded from cancellation."""
        process, self._process = self._process, None
        if process is not None:
            await _reap(process, PLAY_OUT_TIMEOUT)


async def _reap(process: anyio.abc.Process, play_out: float) -> None:
    """Close *process*'s input and wait *play_out* seconds for it to exit, then kill it and
    wait for that; shielded, so a cancelled caller leaves no process behind."""
    with anyio.CancelScope(shield=True):
        with anyio.move_on_after(play_out):
            await process.aclose()
            return
        with contextlib.suppress(ProcessLookupError):  # it exited meanwhile
            process.kill()
        await process.aclose()


def default_sink() -> CommandSink | None:
    """A sink for this machine's sound player (``aplay``, ``paplay`` or ``ffplay``), or
    ``None`` when none is installed."""
    players = {
        "aplay": ["aplay", "-q", "-t", "raw", "-f", "S16_LE", "-c", "1", "-r", "{rate}"],
        "paplay": ["paplay", "--raw", "--format=s16le", "--channels=1", "--rate={rate}"],
        "ffplay": ["ffplay", "-nodisp", "-autoexit", "-loglevel", "quiet", "-f", "s16le",
                   "-ar", "{rate}", "-ch_layout", "mono", "-i", "pipe:0"],
    }  # fmt: skip
    for name, command in players.items():
        if shutil.which(name):
            return CommandSink(command)
    return None


def _rate_of(block: AudioBlock) -> int:
    match = _RATE.search(getattr(block.source, "media_type", "") or "")
    return int(match.group(1)) if match else DEFAULT_RATE


class SpeechPlayer:
    """Plays the growing speech of messages in the background (see the module docstring).

    :param sink: where the audio goes.
    """

    def __init__(self, sink: AudioSink) -> None:
        if not isinstance(sink, AudioSink):
            raise TypeError(
                f"sink must have async write(pcm, rate), discard() and aclose(), not "
                f"{type(sink).__name__}"
            )
        self.sink = sink
        self._send: MemoryObjectSendStream[tuple[int, bytes, int]] | None = None
        self._group: anyio.abc.TaskGroup | None = None
        self._generation = 0
        self._writing: anyio.CancelScope | None = None
        self._key: str | None = None
        self._heard = 0  # base64 characters of the current block already queued
        # The message stop() cut off: its later chunks (a reply may print one more before the
        # interrupt reaches it) are not played.
        self._cut: str | None = None
        self._thread: int | None = None
        self._token: Any = None
        self.stops = 0
        """How often :meth:`stop` dropped audio."""

    async def __aenter__(self) -> Self:
        send, receive = anyio.create_memory_object_stream[tuple[int, bytes, int]](math.inf)
        group = anyio.create_task_group()
        await group.__aenter__()
        group.start_soon(self._run, receive)
        self._send, self._group = send, group
        self._thread = threading.get_ident()
        self._token = anyio.lowlevel.current_token()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        """Let the queued audio play out (cancel it when the block raised), then close the
        sink."""
        send, group = self._send, self._group
        self._send = self._group = None
        assert send is not None and group is not None
        send.close()
        if exc_info[0] is not None:
            group.cancel_scope.cancel()
        try:
            return await group.__aexit__(*exc_info)
        finally:
            await self.sink.aclose()

    def feed(self, key: str, speech: AudioBlock | list[AudioBlock] | None) -> None:
        """Queue what is new in *speech*, the audio so far of the message *key* (a message's
        chunks grow; a new key starts afresh). Never waits; audio fed while the player is
        not running is dropped.

        :raises TypeError: for speech that is not audio blocks.
        """
        if isinstance(speech, list):
            speech = speech[-1] if speech else None
        if speech is None or self._send is None or key == self._cut:
            return
        if not isinstance(speech, AudioBlock):
            raise TypeError(f"speech must be an AudioBlock, not {type(speech).__name__}")
        data = getattr(speech.source, "data", None)
        if not isinstance(data, str):
            return  # audio by URL is not played
        if key != self._key or len(data) < self._heard:
            self._key, self._heard = key, 0
        if len(data) == self._heard:
            return
        new = data[self._heard :] if self._heard % 4 == 0 else None
        pcm = base64.b64decode(new) if new is not None else b""
        if new is None or len(new) % 4:
            # Not cut at a base64 quantum: decode all and take the bytes not heard.
            heard_bytes = len(base64.b64decode(data[: self._heard - self._heard % 4]))
            pcm = base64.b64decode(data)[heard_bytes:]
        self._heard = len(data)
        if len(pcm) % 2:
            pcm = pcm[:-1]
        self._send.send_nowait((self._generation, pcm, _rate_of(speech)))

    def stop(self) -> None:
        """Drop the queued audio and cut off what is playing. Never waits for the sink; may
        be called from another thread (it then waits for the player's event loop to take
        the request)."""
        if self._thread is not None and threading.get_ident() != self._thread:
            anyio.from_thread.run_sync(self._stop, token=self._token)
        else:
            self._stop()

    def _stop(self) -> None:
        self.stops += 1
        self._generation += 1
        self._cut = self._key
        self._key, self._heard = None, 0
        if self._writing is not None:
            self._writing.cancel()
        if self._send is not None:
            # Tells the player's task to empty the sink's own buffer too.
            self._send.send_nowait((self._generation, b"", -1))

    async def _run(self, receive: Any) -> None:
        async with receive:
            async for generation, pcm, rate in receive:
                if generation != self._generation:
                    continue
                if rate < 0:
                    await self.sink.discard()
                    continue
                with anyio.CancelScope() as scope:
                    self._writing = scope
                    await self.sink.write(pcm, rate)
                self._writing = None
