"""Incremental console printing and the printed-message stream."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentscope_rt.agent import DISABLE_CONSOLE_ENV
from agentscope_rt.agent._agent_base import PrintedChunk
from agentscope_rt.agent._console import AGENTSCOPE_DISABLE_CONSOLE_ENV, console_disabled_globally
from agentscope_rt.message import (
    AudioBlock,
    Base64Source,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)

from ._support import EchoAgent


@pytest.fixture
def console_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DISABLE_CONSOLE_ENV, "false")


def chunk(msg_id: str, thinking: str, text: str) -> Msg:
    blocks: list[ThinkingBlock | TextBlock] = [ThinkingBlock(thinking=thinking)]
    if text:
        blocks.append(TextBlock(text=text))
    return Msg("Friday", blocks, "assistant", id=msg_id)


async def test_cumulative_stream_prints_each_character_once(
    console_on: None, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = EchoAgent("Friday")
    thinking = "Let me think."
    text = "Hello, world!"
    chunks = [chunk("m1", thinking[:i], "") for i in range(1, len(thinking) + 1)]
    chunks += [chunk("m1", thinking, text[:i]) for i in range(1, len(text) + 1)]
    for item in chunks[:-1]:
        await agent.print(item, last=False)
    await agent.print(chunks[-1], last=True)
    out = capsys.readouterr().out
    assert out == "Friday: (thinking) Let me think.\nHello, world!\n"
    assert out.count("Friday") == 1
    assert agent._console.open_messages == 0


async def test_interleaved_messages_and_string_content(
    console_on: None, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = EchoAgent("Bob")
    await agent.print(Msg("Bob", "He", "assistant", id="a"), last=False)
    await agent.print(Msg("Bob", "Hello", "assistant", id="a"), last=True)
    await agent.print(Msg("Bob", "done\n", "assistant", id="b"))
    assert capsys.readouterr().out == "Bob: Hello\nBob: done\n"


async def test_tool_use_printed_as_json_on_last_chunk(
    console_on: None, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = EchoAgent("Bob")
    call = ToolUseBlock(id="c1", name="get_weather", input={"city": "Paris"})
    msg = Msg("Bob", [TextBlock(text="Checking."), call], "assistant", id="t")
    await agent.print(msg, last=False)
    assert capsys.readouterr().out == "Bob: Checking."
    await agent.print(msg, last=True)
    out = capsys.readouterr().out
    assert out.startswith("\n{") and '"name": "get_weather"' in out and out.endswith("}\n")


async def test_console_can_be_disabled_per_agent_and_globally(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(DISABLE_CONSOLE_ENV, "false")
    quiet = EchoAgent("quiet")
    quiet.set_console_output_enabled(False)
    await quiet.print(Msg("quiet", "shh", "assistant"))
    older = EchoAgent("older")
    older.disable_console_output()
    await older.print(Msg("older", "shh", "assistant"))
    assert capsys.readouterr().out == ""
    quiet.set_console_output_enabled(True)
    await quiet.print(Msg("quiet", "now", "assistant"))
    assert capsys.readouterr().out == "quiet: now\n"
    monkeypatch.setenv(DISABLE_CONSOLE_ENV, "TRUE")
    await quiet.print(Msg("quiet", "again", "assistant"))
    assert capsys.readouterr().out == ""


async def test_msg_queue_receives_copies_in_order() -> None:
    agent = EchoAgent("Friday")
    send, receive = anyio.create_memory_object_stream[PrintedChunk](10)
    agent.set_msg_queue_enabled(True, send)
    first = Msg("Friday", "Hel", "assistant", id="s")
    second = Msg("Friday", "Hello", "assistant", id="s")
    await agent.print(first, last=False)
    await agent.print(second)
    got = [receive.receive_nowait(), receive.receive_nowait()]
    # (msg, last, speech), as AgentScope puts them on its queue.
    assert [(m.content, last, speech) for m, last, speech in got] == [
        ("Hel", False, None),
        ("Hello", True, None),
    ]
    assert got[0][0] is not first and got[0][0].id == "s"
    agent.set_msg_queue_enabled(True)  # keeps the current stream
    await agent.print(first)
    assert receive.receive_nowait()[0].content == "Hel"
    agent.set_msg_queue_enabled(False)
    await agent.print(second)
    with pytest.raises(anyio.WouldBlock):
        receive.receive_nowait()
    send.close()
    receive.close()


async def test_bounded_queue_applies_backpressure() -> None:
    agent = EchoAgent("Friday")
    send, receive = anyio.create_memory_object_stream[PrintedChunk](0)
    agent.set_msg_queue_enabled(True, send)
    with anyio.move_on_after(0.1) as scope:
        await agent.print(Msg("Friday", "x", "assistant"))
    assert scope.cancelled_caught
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.print, Msg("Friday", "y", "assistant"))
        item, last, _ = await receive.receive()
    assert item.content == "y" and last
    send.close()
    receive.close()


async def test_closed_queue_stops_sending_without_breaking_print() -> None:
    agent = EchoAgent("Friday")
    send, receive = anyio.create_memory_object_stream[PrintedChunk](1)
    agent.set_msg_queue_enabled(True, send)
    receive.close()
    await agent.print(Msg("Friday", "x", "assistant"))
    assert agent.msg_queue is None
    send.close()


def test_msg_queue_bad_input() -> None:
    agent = EchoAgent()
    with pytest.raises(ValueError, match="needs the send end"):
        agent.set_msg_queue_enabled(True)
    with pytest.raises(TypeError, match="MemoryObjectSendStream"):
        agent.set_msg_queue_enabled(True, [])  # type: ignore[arg-type]


async def test_interrupted_stream_ends_the_line_and_drops_state(
    console_on: None, capsys: pytest.CaptureFixture[str]
) -> None:
    class Streamer(EchoAgent):
        async def reply(self, msg: Msg | None = None, suffix: str = "") -> Msg:
            await self.print(Msg(self.name, "partial", "assistant", id="p"), last=False)
            self.interrupt()
            await anyio.sleep(30)
            raise AssertionError("not reached")

    agent = Streamer("Eve")
    reply = await agent(Msg("user", "go", "user"))
    assert reply.get_text_content() == "interrupted"
    assert agent.generate_reason == "interrupted"
    assert capsys.readouterr().out == "Eve: partial\n"
    assert agent._console.open_messages == 0


# -- AgentScope's AGENTSCOPE_DISABLE_CONSOLE_OUTPUT ----------------------------------------


@pytest.mark.parametrize(
    ("own", "agentscope", "disabled"),
    [
        (None, None, False),
        (None, "true", True),
        (None, "True", True),
        (None, "false", False),
        ("true", None, True),
        ("false", "true", False),  # both set and disagreeing: this package's own wins
        ("true", "false", True),
        ("", "TRUE", True),  # set but empty counts as unset
        ("no", "true", False),
    ],
)
def test_console_switch_reads_both_variables_and_our_own_wins(
    monkeypatch: pytest.MonkeyPatch, own: str | None, agentscope: str | None, disabled: bool
) -> None:
    for name, value in ((DISABLE_CONSOLE_ENV, own), (AGENTSCOPE_DISABLE_CONSOLE_ENV, agentscope)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert console_disabled_globally() is disabled


async def test_agentscope_variable_silences_agents(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(DISABLE_CONSOLE_ENV, raising=False)
    monkeypatch.setenv(AGENTSCOPE_DISABLE_CONSOLE_ENV, "True")
    agent = EchoAgent("Friday")
    await agent.print(Msg("Friday", "quiet", "assistant"))
    assert capsys.readouterr().out == ""
    # This package's own variable, when set, decides: here it keeps the console on.
    monkeypatch.setenv(DISABLE_CONSOLE_ENV, "false")
    await agent.print(Msg("Friday", "loud", "assistant"))
    assert capsys.readouterr().out == "Friday: loud\n"
    monkeypatch.delenv(DISABLE_CONSOLE_ENV)
    monkeypatch.setenv(AGENTSCOPE_DISABLE_CONSOLE_ENV, "false")
    await agent.print(Msg("Friday", "back", "assistant"))
    assert capsys.readouterr().out == "Friday: back\n"


async def test_agentscope_variable_does_not_stop_the_message_queue(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(DISABLE_CONSOLE_ENV, raising=False)
    monkeypatch.setenv(AGENTSCOPE_DISABLE_CONSOLE_ENV, "true")
    agent = EchoAgent("Friday")
    send, receive = anyio.create_memory_object_stream[PrintedChunk](1)
    agent.set_msg_queue_enabled(True, send)
    await agent.print(Msg("Friday", "queued", "assistant"))
    msg, last, speech = receive.receive_nowait()
    assert (msg.content, last, speech) == ("queued", True, None)
    assert capsys.readouterr().out == ""
    send.close()
    receive.close()


# -- speech -------------------------------------------------------------------------------


def _audio(data: str = "UklGRg==") -> AudioBlock:
    return AudioBlock(Base64Source("audio/wav", data))


async def test_speech_goes_on_the_queue_with_its_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(DISABLE_CONSOLE_ENV, "false")
    agent = EchoAgent("Friday")
    send, receive = anyio.create_memory_object_stream[PrintedChunk](10)
    agent.set_msg_queue_enabled(True, send)
    one = _audio()
    await agent.print(Msg("Friday", "Hi", "assistant", id="m"), False, speech=one)
    await agent.print(Msg("Friday", "Hi there", "assistant", id="m"), True, [one, _audio("QQ==")])
    # AgentScope code passes TypedDict blocks: they arrive as AudioBlock.
    as_dict = {"type": "audio", "source": {"type": "url", "url": "http://127.0.0.1/a.wav"}}
    await agent.print(Msg("Friday", "Bye", "assistant"), speech=as_dict)  # type: ignore[arg-type]
    first, second, third = (receive.receive_nowait() for _ in range(3))
    assert first[1:] == (False, one) and first[2] is not one  # a copy
    assert isinstance(second[2], list) and second[2] == [one, _audio("QQ==")]
    assert isinstance(third[2], AudioBlock)
    assert third[2].source.url == "http://127.0.0.1/a.wav"  # type: ignore[union-attr]
    # The console shows the text only (it plays no audio).
    assert capsys.readouterr().out == "Friday: Hi there\nFriday: Bye\n"
    send.close()
    receive.close()


async def test_print_hooks_see_speech_as_agentscopes_do() -> None:
    agent = EchoAgent("Friday")
    seen: list[dict[str, Any]] = []
    agent.register_instance_hook("pre_print", "spy", lambda self, kwargs: seen.append(kwargs))
    send, receive = anyio.create_memory_object_stream[PrintedChunk](10)
    agent.set_msg_queue_enabled(True, send)
    await agent.print(Msg("Friday", "plain", "assistant"))
    await agent.print(Msg("Friday", "spoken", "assistant"), speech=_audio())
    # Defaults applied, as AgentScope's hook kwargs are: speech is there even when omitted.
    assert [sorted(kw) for kw in seen] == [["last", "msg", "speech"]] * 2
    assert seen[0]["speech"] is None and seen[1]["speech"] == _audio()

    def louder(self: EchoAgent, kwargs: dict[str, Any]) -> dict[str, Any]:
        return {**kwargs, "speech": [_audio("QUFB")]}

    agent.register_instance_hook("pre_print", "louder", louder)
    await agent.print(Msg("Friday", "again", "assistant"))
    items = [receive.receive_nowait() for _ in range(3)]
    assert [speech for _, _, speech in items] == [None, _audio(), [_audio("QUFB")]]
    send.close()
    receive.close()


async def test_bad_speech_is_refused() -> None:
    agent = EchoAgent("Friday")
    with pytest.raises(TypeError, match=r"EchoAgent.print: speech must be an AudioBlock"):
        await agent.print(Msg("Friday", "x", "assistant"), True, "hello.wav")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"speech\[1\] must be an AudioBlock"):
        await agent.print(
            Msg("Friday", "x", "assistant"),
            speech=[_audio(), TextBlock(text="no")],  # type: ignore[list-item]
        )
