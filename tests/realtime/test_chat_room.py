"""ChatRoom against the scripted Realtime server: the frontend's audio reaches every agent, what
one agent says reaches the others as audio, every agent's events reach the frontend."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from agentscope_rt.exception import ModelAPIError
from agentscope_rt.pipeline import ChatRoom as PipelineChatRoom
from agentscope_rt.realtime import ChatRoom, ClientEvents, RealtimeAgent, ServerEventType
from agentscope_rt.tool import Toolkit

from ..tts._tts_servers import text_of
from ._realtime_server import RealtimeServer
from .test_realtime_agent import model_for, read_until, remembered, said, weather_toolkit

T = ServerEventType


@pytest.fixture
def server() -> Iterator[RealtimeServer]:
    with RealtimeServer() as server:
        server.replies = {
            "Alice, greet Bob?": "Bob, how are you?",
            "Bob, how are you?": "I am fine, Alice.",
        }
        yield server


def heard_by(session: list[dict[str, Any]]) -> str:
    """All the audio a provider session received, as the test voice's text."""
    return "".join(
        text_of(base64.b64decode(e["audio"]))
        for e in session
        if e["type"] == "input_audio_buffer.append"
    )


def answered(name: str) -> Any:
    def done(events: list[Any]) -> bool:
        return any(e.type == T.AGENT_RESPONSE_DONE and e.agent_name == name for e in events)

    return done


async def test_agents_hear_each_other_and_the_frontend_hears_all(server: RealtimeServer) -> None:
    assert PipelineChatRoom is ChatRoom  # AgentScope imports it from the pipeline package
    alice = RealtimeAgent("Alice", "You are Alice.", model_for(server))
    bob = RealtimeAgent("Bob", "You are Bob.", model_for(server), weather_toolkit())
    room = ChatRoom([alice, bob])
    send, receive = anyio.create_memory_object_stream[Any](0)
    with send, receive:
        await room.start(send)
        try:
            await room.handle_input(said("Alice, greet Bob?"))
            events = await read_until(receive, answered("Bob"))
        finally:
            await room.stop()
    assert not alice.started and not bob.started
    # Only server events reach the frontend (its own audio is not echoed), from both agents.
    assert all(not isinstance(e, ClientEvents.EventBase) for e in events)
    ready = [e.agent_name for e in events if e.type == T.AGENT_READY]
    assert sorted(ready) == ["Alice", "Bob"]
    spoken = {
        name: "".join(
            e.delta
            for e in events
            if e.type == T.AGENT_RESPONSE_AUDIO_TRANSCRIPT_DELTA and e.agent_name == name
        )
        for name in ("Alice", "Bob")
    }
    assert spoken == {"Alice": "Bob, how are you?", "Bob": "I am fine, Alice."}
    # The frontend's audio went to both; Alice's speech reached Bob as audio, and Bob's reply
    # (forwarded before his response ended) went to Alice's model.
    logs = [await server.log(0), await server.log(1)]
    sessions = {s[0]["session"]["instructions"]: s for s in logs}
    assert heard_by(sessions["You are Bob."]) == "Alice, greet Bob?Bob, how are you?"
    assert heard_by(sessions["You are Alice."]).startswith("Alice, greet Bob?")
    assert await remembered(bob) == [
        ("user", "user", "Alice, greet Bob?"),
        ("user", "user", "Bob, how are you?"),
        ("Bob", "assistant", "I am fine, Alice."),
    ]
    assert ("Alice", "assistant", "Bob, how are you?") in await remembered(alice)
    # Nobody spoke over anybody: nothing was trimmed.
    assert all(e["type"] != "conversation.item.truncate" for s in logs for e in s)


async def test_an_agent_that_cannot_connect_stops_the_others(server: RealtimeServer) -> None:
    refused = RealtimeAgent(
        "Carol",
        "",
        model_for(server).__class__("m", api_key="k", websocket_url="ws://127.0.0.1:9/x"),
        Toolkit(),
    )
    alice = RealtimeAgent("Alice", "You are Alice.", model_for(server))
    room = ChatRoom([alice, refused])
    send, receive = anyio.create_memory_object_stream[Any](0)
    with send, receive:
        with pytest.raises(ModelAPIError):
            await room.start(send)
        assert not alice.started and not alice.model.connected
        with pytest.raises(RuntimeError, match="not started"):
            await room.handle_input(said("Hello?"))
        await room.stop()  # harmless
