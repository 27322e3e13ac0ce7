"""Incremental console printing and the printed-message stream."""

from __future__ import annotations

import anyio
import pytest

from agentscope_rt.agent import DISABLE_CONSOLE_ENV
from agentscope_rt.message import Msg, TextBlock, ThinkingBlock, ToolUseBlock

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
    send, receive = anyio.create_memory_object_stream[tuple[Msg, bool]](10)
    agent.set_msg_queue_enabled(True, send)
    first = Msg("Friday", "Hel", "assistant", id="s")
    second = Msg("Friday", "Hello", "assistant", id="s")
    await agent.print(first, last=False)
    await agent.print(second)
    got = [receive.receive_nowait(), receive.receive_nowait()]
    assert [(m.content, last) for m, last in got] == [("Hel", False), ("Hello", True)]
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
    send, receive = anyio.create_memory_object_stream[tuple[Msg, bool]](0)
    agent.set_msg_queue_enabled(True, send)
    with anyio.move_on_after(0.1) as scope:
        await agent.print(Msg("Friday", "x", "assistant"))
    assert scope.cancelled_caught
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.print, Msg("Friday", "y", "assistant"))
        item, last = await receive.receive()
    assert item.content == "y" and last
    send.close()
    receive.close()


async def test_closed_queue_stops_sending_without_breaking_print() -> None:
    agent = EchoAgent("Friday")
    send, receive = anyio.create_memory_object_stream[tuple[Msg, bool]](1)
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
    assert reply.metadata["generate_reason"] == "interrupted"
    assert capsys.readouterr().out == "Eve: partial\n"
    assert agent._console.open_messages == 0
