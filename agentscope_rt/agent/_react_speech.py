"""The ReAct agent's reply spoken as it streams: a TTS model fed each reasoning step's text,
the speech printed with the text and handed to the speech player.

:meth:`ReActAgent._receive` enters the TTS model and streams the answer into it
(:func:`receive_stream`, pushing each chunk's text to a streaming-input model);
:func:`speak_rest` then synthesises the rest. A stream without a TTS model is received by
:func:`receive_stream` too."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

from ..message import AudioBlock, Msg
from ..model import ChatResponse
from ..tts import TTSModelBase, TTSResponse
from ._react_blocks import _fill_from, _speech
from ._react_host import ReActHost


async def receive_stream(
    agent: ReActHost,
    stream: AsyncGenerator[ChatResponse, None],
    msg: Msg,
    tts: TTSModelBase | None,
) -> AudioBlock | list[AudioBlock] | None:
    """Fill *msg* from *stream*, printing it after each chunk, and add the usage.

    Each print carries the speech so far: the model's own audio, or with a streaming-input
    *tts* what it made of the text so far (also fed to the speech player). Returns the speech
    of the last print (``None``: none or no chunk)."""
    speech: AudioBlock | list[AudioBlock] | None = None
    last: ChatResponse | None = None
    async with aclosing(stream) as chunks:
        async for chunk in chunks:
            last = chunk
            _fill_from(msg, chunk)
            speech = _speech(msg)
            if tts is not None:
                if tts.supports_streaming_input:
                    speech = (await tts.push(msg)).content
                await print_speaking(agent, msg, False, speech)
            # Speech only when there is audio, so that a print override without the speech
            # parameter keeps working for text.
            elif speech is None:
                await agent.print(msg, False)
            else:
                await agent.print(msg, False, speech=speech)
    if last is not None:
        agent._add_usage(last.usage)
    return speech


async def speak_rest(
    agent: ReActHost,
    msg: Msg,
    tts: TTSModelBase,
    speech: AudioBlock | list[AudioBlock] | None,
) -> None:
    """Speak *msg* once the model's answer is complete, as AgentScope does: ``synthesize``
    gives the rest of the speech, printed as it comes, and the last print carries all of it
    (*speech*, the speech printed with the stream, when the synthesis gives none). Called
    inside ``async with tts``, after the streamed chunks were pushed and printed."""
    result = await tts.synthesize(msg)
    if isinstance(result, TTSResponse):
        speech = result.content
    else:
        async with aclosing(result) as chunks:
            async for tts_chunk in chunks:
                speech = tts_chunk.content
                if not tts_chunk.is_last:
                    await print_speaking(agent, msg, False, speech)
    await print_speaking(agent, msg, True, speech)


async def print_speaking(
    agent: ReActHost, msg: Msg, last: bool, speech: AudioBlock | list[AudioBlock] | None
) -> None:
    """Print *msg* with *speech*, which the speech player (if any) is fed first."""
    player = agent.speech_player
    if player is not None:
        player.feed(msg.id, speech)
    if speech is None:
        # Without speech, so that a print override without the parameter keeps working.
        await agent.print(msg, last)
    else:
        await agent.print(msg, last, speech=speech)
