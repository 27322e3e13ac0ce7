"""Two realtime agents in a ChatRoom, replayed from recorded sessions, offline.

A small local server (Starlette on hypercorn, in this program's own event loop) stands in for
OpenAI's Realtime API and replays a recorded session per agent: each time audio reaches a
session while it is idle, the session plays its next recorded turn (speech detected and
transcribed, then, when the turn has one, a spoken answer made by the offline voice, eSpeak NG).
The room hands the user's audio to both agents and each agent's speech to the other as audio:
the user asks Alice to greet Bob; Alice's voice reaches Bob, who calls a tool and answers.

Needs the ``studio`` extra (Starlette, hypercorn), ``dashscope`` (wsproto) and ``voice``.
Run with ``python examples/97_realtime_chat_room.py`` (add ``trio`` to run on trio).

What to look for: both agents hear the user; Alice's spoken greeting reaches Bob as audio
("Bob heard: ..."), Bob calls the tool and answers; the seconds of audio each agent sent to the
frontend; and each agent's memory at the end, where Bob records Alice's words as a user turn
(she is another voice in his conversation).
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

import anyio
from _serve import serve_local
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.realtime import (
    AudioFormat,
    ChatRoom,
    ClientEvents,
    OpenAIRealtimeModel,
    RealtimeAgent,
    ServerEventType,
)
from agentscope_rt.tool import Toolkit, ToolResponse
from agentscope_rt.tts import EspeakTTSModel

T = ServerEventType


def heard(text: str, item: str) -> list[dict[str, Any]]:
    """A recorded stretch of input speech: detected, then transcribed."""
    return [
        {"type": "input_audio_buffer.speech_started", "item_id": item, "audio_start_ms": 0},
        {"type": "input_audio_buffer.speech_stopped", "item_id": item, "audio_end_ms": 1500},
        {
            "type": "conversation.item.input_audio_transcription.completed",
            "item_id": item,
            "transcript": text,
        },
    ]


def answer(response: str, text: str, *then: dict[str, Any]) -> list[dict[str, Any]]:
    """A recorded spoken answer ("speak" stands for the audio of that text)."""
    return [
        {"type": "response.created", "response": {"id": response}},
        {"speak": text, "item_id": f"{response}_out"},
        {"type": "response.output_audio.done", "item_id": f"{response}_out"},
        *then,
        {"type": "response.done", "response": {"id": response}},
    ]


QUESTION = "Alice, please say hello to Bob."
GREETING = "Hello Bob! What is the weather in Paris?"
WEATHER_CALL = {
    "type": "response.function_call_arguments.done",
    "item_id": "fc_1",
    "call_id": "call_1",
    "name": "get_weather",
    "arguments": '{"city": "Paris"}',
}
# The recorded turns of each agent's session, keyed by the agent's instructions.
RECORDED = {
    "You are Alice.": [heard(QUESTION, "in_1") + answer("resp_a1", GREETING)],
    "You are Bob.": [
        heard(QUESTION, "in_1"),  # said to Alice: Bob only listens
        heard(GREETING, "in_2") + answer("resp_b1", "Hi Alice! Let me check.", WEATHER_CALL),
    ],
}


def get_weather(city: str) -> ToolResponse:
    """The weather of a city.

    Args:
        city: the city's name.
    """
    return ToolResponse(content=[TextBlock(text=f"sunny in {city}")])


async def spoken(voice: EspeakTTSModel, text: str) -> str:
    """*text* said by the offline voice, as base64 PCM."""
    response = await voice.synthesize(Msg("assistant", text, "assistant"))
    return response.content.source.data  # type: ignore[union-attr]


def replay_app(voice: EspeakTTSModel) -> Starlette:
    async def session(websocket: WebSocket) -> None:
        await websocket.accept()

        async def send(event: dict[str, Any]) -> None:
            if "speak" in event:
                item, text = event["item_id"], event["speak"]
                audio = await spoken(voice, text)
                for kind, delta in (("output_audio", audio), ("output_audio_transcript", text)):
                    delta_event = {
                        "type": f"response.{kind}.delta",
                        "item_id": item,
                        "delta": delta,
                    }
                    await websocket.send_text(json.dumps(delta_event))
                return
            await websocket.send_text(json.dumps(event))

        await send({"type": "session.created", "session": {"id": "sess_replay"}})
        turns: list[list[dict[str, Any]]] = []
        try:
            while True:
                event = json.loads(await websocket.receive_text())
                if event["type"] == "session.update":
                    turns = list(RECORDED[event["session"]["instructions"]])
                elif event["type"] == "input_audio_buffer.append" and turns:
                    for recorded in turns.pop(0):
                        await send(recorded)
                elif event["type"] == "conversation.item.create":
                    output = event["item"]["output"]
                    for recorded in answer("resp_b2", f"It is {output}."):
                        await send(recorded)
        except WebSocketDisconnect:
            return

    return Starlette(routes=[WebSocketRoute("/v1/realtime", session)])


async def main() -> None:
    voice = EspeakTTSModel(stream=False)
    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    async with anyio.create_task_group() as group:
        url = f"ws://{await group.start(serve_local, replay_app(voice))}/v1/realtime"

        def model() -> OpenAIRealtimeModel:
            return OpenAIRealtimeModel("gpt-realtime", api_key="replay", websocket_url=url)

        alice = RealtimeAgent("Alice", "You are Alice.", model())
        bob = RealtimeAgent("Bob", "You are Bob.", model(), toolkit)
        room = ChatRoom([alice, bob])
        # The frontend: a stream without buffer, so the agents know what was delivered.
        send, receive = anyio.create_memory_object_stream[Any](0)
        with send, receive:
            await room.start(send)
            try:
                question = await spoken(voice, QUESTION)
                await room.handle_input(
                    ClientEvents.ClientAudioAppendEvent(
                        session_id="demo",
                        audio=question,
                        format=AudioFormat(type="audio/pcm", rate=22050),  # eSpeak's rate
                    )
                )
                seconds = {"Alice": 0.0, "Bob": 0.0}
                with anyio.fail_after(45):
                    async for event in receive:
                        if event.type == T.AGENT_INPUT_TRANSCRIPTION_DONE:
                            print(f"{event.agent_name} heard: {event.transcript}")
                        elif event.type == T.AGENT_RESPONSE_AUDIO_TRANSCRIPT_DELTA:
                            print(f"{event.agent_name} says: {event.delta}")
                        elif event.type == T.AGENT_RESPONSE_AUDIO_DELTA:
                            size = len(base64.b64decode(event.delta))
                            seconds[event.agent_name] += size / 2 / event.format.rate
                        elif event.type == T.AGENT_RESPONSE_TOOL_USE_DONE:
                            print(f"{event.agent_name} calls {event.tool_use.name}")
                        elif event.type == T.AGENT_RESPONSE_TOOL_RESULT:
                            result = event.tool_result.output[0].text
                            print(f"{event.agent_name}'s tool answered: {result}")
                        elif event.type == T.AGENT_RESPONSE_DONE and event.response_id == "resp_b2":
                            break
            finally:
                await room.stop()
        group.cancel_scope.cancel()
    print("audio out: " + ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items()))
    for agent in (alice, bob):
        lines = [f"{m.name}: {m.get_text_content()}" for m in await agent.memory.get_memory()]
        print(f"{agent.name}'s transcript: {' | '.join(lines)}")


if __name__ == "__main__":
    anyio.run(main, backend="trio" if "trio" in sys.argv[1:] else "asyncio")
