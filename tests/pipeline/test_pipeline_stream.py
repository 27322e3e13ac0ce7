"""stream_printing_messages with real agents and streaming model doubles, on both backends."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from typing import Any

import anyio
import pytest

from agentscope_rt.agent import AgentBase, ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import AudioBlock, Base64Source, Msg, TextBlock
from agentscope_rt.model import ChatResponse, ScriptedChatModel, reply, thinking, tool_call
from agentscope_rt.pipeline import sequential_pipeline, stream_printing_messages
from agentscope_rt.tool import Toolkit, ToolResponse


def _react(name: str, answers: list[str]) -> ReActAgent:
    return ReActAgent(
        name=name,
        sys_prompt="You are terse.",
        model=ScriptedChatModel(answers, stream=True),
        formatter=OpenAIChatFormatter(),
    )


class Chatter(AgentBase):
    """Prints *count* whole messages, pausing between them; may fail at the end."""

    def __init__(self, name: str, count: int, pause: float = 0.0, fail: bool = False) -> None:
        super().__init__()
        self.name = name
        self.count = count
        self.pause = pause
        self.fail = fail
        self.printed = 0
        self.cancelled = False

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        try:
            for index in range(self.count):
                await self.print(Msg(self.name, f"{self.name} line {index}", "assistant"))
                self.printed += 1
                if self.pause:
                    await anyio.sleep(self.pause)
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        if self.fail:
            raise RuntimeError(f"{self.name} broke")
        return Msg(self.name, "done", "assistant")

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        return None


async def test_streaming_models_yield_cumulative_chunks_in_order() -> None:
    alice = _react("alice", ["Hello there, Bob."])
    bob = _react("bob", ["Hi Alice, nice to meet you."])
    chunks: list[tuple[str, str, bool]] = []
    task = sequential_pipeline([alice, bob], Msg("user", "greet", "user"))
    async with contextlib.aclosing(stream_printing_messages([alice, bob], task)) as stream:
        async for msg, last in stream:
            chunks.append((msg.name, msg.get_text_content() or "", last))
    names = [name for name, _, _ in chunks]
    assert names == sorted(names)  # all of alice's chunks, then bob's
    alice_chunks = [text for name, text, _ in chunks if name == "alice"]
    assert len(alice_chunks) > 1  # streamed in pieces
    assert all(b.startswith(a) for a, b in itertools.pairwise(alice_chunks))
    assert alice_chunks[-1] == "Hello there, Bob."
    assert [last for name, _, last in chunks if name == "alice"][-1] is True
    assert sum(last for _, _, last in chunks) == 2
    assert alice.msg_queue is None and bob.msg_queue is None


async def test_the_coroutines_exception_is_reraised_after_its_chunks() -> None:
    agent = Chatter("c", count=3, fail=True)
    seen: list[str] = []
    with pytest.raises(RuntimeError, match="c broke"):
        async for msg, _ in stream_printing_messages([agent], agent()):
            seen.append(msg.get_text_content() or "")
    assert seen == ["c line 0", "c line 1", "c line 2"]
    assert agent.msg_queue is None


async def test_breaking_early_cancels_the_task_and_disables_the_queues() -> None:
    agent = Chatter("c", count=1000, pause=0.001)
    other = Chatter("o", count=0)
    baseline = len(anyio.get_running_tasks())
    with anyio.fail_after(5):
        async with contextlib.aclosing(stream_printing_messages([agent, other], agent())) as stream:
            async for msg, _ in stream:
                if msg.get_text_content() == "c line 2":
                    break
    assert agent.cancelled
    assert agent.printed < 10
    assert agent.msg_queue is None and other.msg_queue is None
    assert len(anyio.get_running_tasks()) == baseline
    # The agents still work, and print to nothing but the console now.
    assert (await other()).content == "done"


async def test_consumer_cancelled_from_outside_cleans_up() -> None:
    agent = Chatter("c", count=1000, pause=0.001)
    with anyio.move_on_after(0.05) as scope:
        async with contextlib.aclosing(stream_printing_messages([agent], agent())) as stream:
            async for _ in stream:
                pass
    assert scope.cancelled_caught
    assert agent.cancelled and agent.msg_queue is None


async def test_a_queue_set_elsewhere_meanwhile_is_left_alone() -> None:
    agent = Chatter("c", count=2)
    send, receive = anyio.create_memory_object_stream[tuple[Msg, bool]](10)

    async def run_and_redirect() -> None:
        await agent()
        agent.set_msg_queue_enabled(True, send)

    with send, receive:
        async for _ in stream_printing_messages([agent], run_and_redirect()):
            pass
        assert agent.msg_queue is send


async def test_bad_input_is_refused() -> None:
    agent = Chatter("c", count=1)
    with pytest.raises(TypeError, match="coroutine_task must be awaitable"):
        async for _ in stream_printing_messages([agent], agent):  # type: ignore[arg-type]
            pass
    assert agent.msg_queue is None


# -- the sequence AgentScope yields ---------------------------------------------------------


def get_weather(city: str) -> ToolResponse:
    """Get the weather of a city.

    Args:
        city: the city.
    """
    return ToolResponse(content=[TextBlock(text=f"Sunny in {city}")])


def _summary(msg: Msg) -> list[str]:
    return [
        f"{b.type}:{b.get('text') or b.get('thinking') or b.get('name') or b.get('output')}"
        for b in msg.get_content_blocks()
    ]


# What AgentScope 1.0.21's stream_printing_messages yields for the same reply, recorded by
# running its ReActAgent on a model that streams exactly the chunks ScriptedChatModel streams
# (text and thinking in three cumulative pieces, each block completed as a chunk, then the
# closing chunk with the usage). The whole text comes three times at the end of each model
# call: the last content chunk and the closing chunk (printed with last=False, as every
# chunk) and the final print with last=True. That is one item per print, as there.
AGENTSCOPE_SEQUENCE = [
    ["a", ["thinking:Look"], False],
    ["a", ["thinking:Look it "], False],
    ["a", ["thinking:Look it up."], False],
    ["a", ["thinking:Look it up.", "text:Che"], False],
    ["a", ["thinking:Look it up.", "text:Checki"], False],
    ["a", ["thinking:Look it up.", "text:Checking."], False],
    ["a", ["thinking:Look it up.", "text:Checking.", "tool_use:get_weather"], False],
    ["a", ["thinking:Look it up.", "text:Checking.", "tool_use:get_weather"], False],
    ["a", ["thinking:Look it up.", "text:Checking.", "tool_use:get_weather"], True],
    ["system", ["tool_result:get_weather"], True],
    ["a", ["text:It is s"], False],
    ["a", ["text:It is sunny in"], False],
    ["a", ["text:It is sunny in Paris."], False],
    ["a", ["text:It is sunny in Paris."], False],
    ["a", ["text:It is sunny in Paris."], True],
]


def _weather_agent() -> ReActAgent:
    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    model = ScriptedChatModel(
        [
            reply(
                thinking("Look it up."), "Checking.", tool_call("get_weather", {"city": "Paris"})
            ),
            "It is sunny in Paris.",
        ],
        stream=True,
    )
    return ReActAgent(
        name="a", sys_prompt="s", model=model, formatter=OpenAIChatFormatter(), toolkit=toolkit
    )


async def test_a_streamed_reply_yields_agentscopes_sequence() -> None:
    agent = _weather_agent()
    seen = [
        [msg.name, _summary(msg), last]
        async for msg, last in stream_printing_messages([agent], agent(Msg("user", "hi", "user")))
    ]
    assert seen == AGENTSCOPE_SEQUENCE


async def test_each_print_is_yielded_exactly_once() -> None:
    agent = _weather_agent()
    printed: list[tuple[str, list[str], bool]] = []

    def count(self: AgentBase, kwargs: dict[str, Any], output: None) -> None:
        printed.append((kwargs["msg"].name, _summary(kwargs["msg"]), kwargs["last"]))

    agent.register_instance_hook("post_print", "count", count)
    seen = [
        (msg.name, _summary(msg), last)
        async for msg, last in stream_printing_messages([agent], agent(Msg("user", "hi", "user")))
    ]
    assert seen == printed
    assert len(seen) == len(AGENTSCOPE_SEQUENCE)


# -- speech ----------------------------------------------------------------------------------


def _audio() -> AudioBlock:
    return AudioBlock(Base64Source("audio/wav", "UklGRg=="))


async def test_yield_speech_gives_the_audio_printed_with_each_chunk() -> None:
    # An audio model answers with text and speech: as in AgentScope, each streamed chunk is
    # printed with the audio blocks it holds so far (None before the audio arrives).
    def make() -> ReActAgent:
        model = ScriptedChatModel([ChatResponse([TextBlock(text="Hi"), _audio()])], stream=True)
        return ReActAgent(name="v", sys_prompt="s", model=model, formatter=OpenAIChatFormatter())

    agent = make()
    triples = [
        (msg.get_text_content(), last, speech)
        async for msg, last, speech in stream_printing_messages(
            [agent], agent(Msg("user", "hi", "user")), yield_speech=True
        )
    ]
    assert triples == [
        ("H", False, None),
        ("Hi", False, None),
        ("Hi", False, [_audio()]),
        ("Hi", False, [_audio()]),
        ("Hi", True, [_audio()]),
    ]
    agent = make()
    pairs = [
        item async for item in stream_printing_messages([agent], agent(Msg("user", "hi", "user")))
    ]
    assert [len(item) for item in pairs] == [2] * 5  # without yield_speech: (msg, last)


# -- queue and end_signal ----------------------------------------------------------------------


async def test_an_external_queue_is_used_and_left_open() -> None:
    agent = Chatter("c", count=2)
    send, receive = queue = anyio.create_memory_object_stream[Any](100)
    # Others may feed the same stream, as with AgentScope's queue; pairs are accepted too.
    send.send_nowait((Msg("host", "welcome", "assistant"), True, None))
    send.send_nowait((Msg("host", "old style", "assistant"), False))
    items = [
        (msg.get_text_content(), last, speech)
        async for msg, last, speech in stream_printing_messages(
            [agent], agent(), queue=queue, end_signal="<eos>", yield_speech=True
        )
    ]
    assert items == [
        ("welcome", True, None),
        ("old style", False, None),
        ("c line 0", True, None),
        ("c line 1", True, None),
    ]
    assert agent.msg_queue is None
    # The end signal was consumed and the caller's streams are still open.
    with pytest.raises(anyio.WouldBlock):
        receive.receive_nowait()
    send.send_nowait("still open")
    assert receive.receive_nowait() == "still open"
    send.close()
    receive.close()


async def test_an_end_signal_from_elsewhere_stops_early_and_cancels_the_coroutine() -> None:
    agent = Chatter("c", count=1000, pause=0.001)
    send, receive = anyio.create_memory_object_stream[Any](100)
    seen: list[str] = []
    with anyio.fail_after(5), send, receive:
        async for msg, _ in stream_printing_messages([agent], agent(), queue=(send, receive)):
            seen.append(msg.get_text_content() or "")
            if len(seen) == 3:
                send.send_nowait("[END]")  # AgentScope's default end signal
    assert seen[:3] == ["c line 0", "c line 1", "c line 2"]
    assert agent.cancelled and agent.printed < 10
    assert agent.msg_queue is None


async def test_an_asyncio_queue_is_refused_with_what_to_pass_instead() -> None:
    agent = Chatter("c", count=1)
    task = agent()
    with pytest.raises(TypeError, match=r"anyio.create_memory_object_stream.*asyncio.Queue"):
        async for _ in stream_printing_messages([agent], task, queue=asyncio.Queue()):  # type: ignore[arg-type]
            pass
    assert agent.msg_queue is None and agent.printed == 0
    assert task.cr_frame is None  # closed: no "never awaited" warning on top of the error


async def test_a_stray_item_in_the_queue_is_a_clear_error() -> None:
    agent = Chatter("c", count=1000, pause=0.001)
    send, receive = anyio.create_memory_object_stream[Any](100)
    with send, receive:
        send.send_nowait(42)
        with pytest.raises(TypeError, match="delivered 42, which is neither"):
            async for _ in stream_printing_messages([agent], agent(), queue=(send, receive)):
                pass
    assert agent.msg_queue is None and agent.printed < 10


async def test_bad_end_signal_is_refused() -> None:
    agent = Chatter("c", count=1)
    task = agent()
    with pytest.raises(TypeError, match="end_signal must be a str"):
        async for _ in stream_printing_messages([agent], task, end_signal=None):  # type: ignore[call-overload]
            pass
    assert task.cr_frame is None
