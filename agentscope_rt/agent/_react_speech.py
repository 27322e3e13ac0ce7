"""The ReAct agent's reply spoken as it streams: a TTS model fed each reasoning step's text,
the speech printed with the text and handed to the speech player.

:meth:`ReActAgent._receive` enters the TTS model and streams the answer into it (pushing each
chunk's text to a streaming-input model); :func:`speak_rest` then synthesises the rest."""

from __future__ import annotations

from contextlib import aclosing

from ..message import AudioBlock, Msg
from ..tts import TTSModelBase, TTSResponse
from ._react_host import ReActHost


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
