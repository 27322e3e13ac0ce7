"""The ReAct agent's reply spoken as it streams: a TTS model fed each reasoning step's text,
the speech printed with the text and handed to the speech player."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING

from ..message import AudioBlock, Msg
from ..model import ChatResponse
from ..tts import TTSModelBase, TTSResponse
from ._react_blocks import _fill_from, _speech

if TYPE_CHECKING:
    from ._react_agent import ReActAgent


async def receive_speaking(
    agent: ReActAgent,
    res: ChatResponse | AsyncGenerator[ChatResponse, None],
    msg: Msg,
    tts: TTSModelBase,
) -> None:
    """:meth:`_receive` with a TTS model, as AgentScope's: inside ``async with tts``, each
    streamed chunk's text is pushed to a streaming-input model and printed with the audio
    so far; then ``synthesize`` gives the rest of the speech, printed as it comes, and the
    last print carries all of it. The speech player (if any) is fed every print's audio.
    An interrupt cancels the synthesis with the reply (the model's connection closes on
    the way out of ``async with``)."""
    speech: AudioBlock | list[AudioBlock] | None = None
    async with tts:
        if isinstance(res, ChatResponse):
            agent._take_response(res, msg)
        else:
            last: ChatResponse | None = None
            async with aclosing(res) as stream:
                async for chunk in stream:
                    last = chunk
                    _fill_from(msg, chunk)
                    speech = _speech(msg)
                    if tts.supports_streaming_input:
                        speech = (await tts.push(msg)).content
                    await _print_speech(agent, msg, False, speech)
            if last is not None:
                agent._add_usage(last.usage)
        result = await tts.synthesize(msg)
        if isinstance(result, TTSResponse):
            speech = result.content
        else:
            async with aclosing(result) as chunks:
                async for tts_chunk in chunks:
                    speech = tts_chunk.content
                    if not tts_chunk.is_last:
                        await _print_speech(agent, msg, False, speech)
        await _print_speech(agent, msg, True, speech)


async def _print_speech(
    agent: ReActAgent, msg: Msg, last: bool, speech: AudioBlock | list[AudioBlock] | None
) -> None:
    player = agent.speech_player
    if player is not None:
        player.feed(msg.id, speech)
    if speech is None:
        # Without speech, so that a print override without the parameter keeps working.
        await agent.print(msg, last)
    else:
        await agent.print(msg, last, speech=speech)
