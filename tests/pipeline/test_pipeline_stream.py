"""stream_printing_messages with real agents and streaming model doubles, on both backends."""

from __future__ import annotations

import contextlib
import itertools
from typing import Any

import anyio
import pytest

from agentscope_rt.agent import AgentBase, ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.pipeline import sequential_pipeline, stream_printing_messages


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
