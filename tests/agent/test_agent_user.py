"""UserAgent and its input methods."""

from __future__ import annotations

import io
import threading
from typing import Any

import anyio
import pydantic
import pytest

from agentscope_rt._schema import StructuredOutputError
from agentscope_rt.agent import (
    TerminalUserInput,
    UserAgent,
    UserInputBase,
    UserInputData,
    _user_input,
)
from agentscope_rt.message import ImageBlock, Msg, TextBlock, URLSource

from .._timing import finishes_within


class Form(pydantic.BaseModel):
    age: int
    city: str = "Paris"


async def test_sync_input_method_runs_off_the_loop() -> None:
    threads: list[int] = []

    def answer(agent_id: str, agent_name: str, structured_model: Any) -> str:
        threads.append(threading.get_ident())
        return f"hello from {agent_name}"

    agent = UserAgent("alice")
    agent.override_instance_input_method(answer)
    reply = await agent(Msg("bot", "question?", "assistant"))
    assert reply.content == "hello from alice"
    assert reply.role == "user" and reply.name == "alice"
    assert threads and threads[0] != threading.get_ident()
    assert reply.invocation_id == agent._reply_id


async def test_async_input_method_with_blocks_and_structured_fields() -> None:
    class Scripted(UserInputBase):
        async def __call__(
            self,
            agent_id: str,
            agent_name: str,
            *args: Any,
            structured_model: Any = None,
            **kwargs: Any,
        ) -> UserInputData:
            return UserInputData(
                blocks_input=[
                    TextBlock(text="look"),
                    ImageBlock(source=URLSource(url="https://example.com/a.png")),
                ],
                structured_input={"age": "41"},
            )

    agent = UserAgent("bob")
    agent.override_instance_input_method(Scripted())
    reply = await agent(structured_model=Form)
    assert reply.has_content_blocks("image")
    assert reply.metadata == {"age": 41, "city": "Paris"}


async def test_structured_input_that_does_not_match_is_an_error() -> None:
    agent = UserAgent("bob")
    agent.override_instance_input_method(
        lambda **kw: UserInputData([TextBlock(text="x")], {"age": "old"})
    )
    with pytest.raises(StructuredOutputError, match="age"):
        await agent(structured_model=Form)


async def test_class_input_method_and_instance_override() -> None:
    class Team(UserAgent):
        pass

    async def class_answer(**kwargs: Any) -> str:
        return "from class"

    Team.override_class_input_method(class_answer)
    member = Team("m")
    assert (await member()).content == "from class"
    member.override_instance_input_method(lambda **kw: "from instance")
    assert (await member()).content == "from instance"
    assert (await Team("n")()).content == "from class"
    assert UserAgent._input_method is not class_answer


async def test_terminal_input_reads_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("hi there\n"))
    agent = UserAgent("carol")
    reply = await agent()
    assert reply.content == "hi there"


async def test_terminal_structured_input_asks_each_field(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # text, then: empty required age (asked again), invalid age, valid age, default city
    monkeypatch.setattr("sys.stdin", io.StringIO("answer\n\nold\n30\n\n"))
    data = await TerminalUserInput()("id", "carol", structured_model=Form)
    assert data.blocks_input == [TextBlock(text="answer")]
    assert data.structured_input == {"age": 30, "city": "Paris"}
    out = capsys.readouterr().out
    assert "age is required" in out and "Invalid value for age" in out


async def test_waiting_for_terminal_input_is_interruptible(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()

    def blocked_read(prompt: str) -> str:
        release.wait(10)
        return "late"

    monkeypatch.setattr(_user_input, "_read_line", blocked_read)
    agent = UserAgent("dave")

    async def stop() -> None:
        await anyio.sleep(0.05)
        agent.interrupt()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(stop)
            async with finishes_within(what="the reply waiting on a 10 s terminal read"):
                reply = await agent()
        assert reply.get_text_content() == (
            "I noticed that you have interrupted me. What can I do for you?"
        )
        assert agent.generate_reason == "interrupted"
    finally:
        release.set()


async def test_user_agent_bad_input() -> None:
    agent = UserAgent("erin")
    agent.override_instance_input_method(lambda **kw: "x")
    with pytest.raises(TypeError, match=r"UserAgent\.reply: msg must be"):
        await agent("plain text")
    with pytest.raises(TypeError, match="structured_model must be"):
        await agent(structured_model=42)
    with pytest.raises(TypeError, match="input method must be"):
        agent.override_instance_input_method("not callable")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="input method must be"):
        UserAgent.override_class_input_method(None)  # type: ignore[arg-type]
    agent.override_instance_input_method(lambda **kw: 42)
    with pytest.raises(TypeError, match="must return UserInputData"):
        await agent()
    with pytest.raises(TypeError, match="name must be a str"):
        UserAgent(3)  # type: ignore[arg-type]


async def test_user_agent_observe_accepts_messages_and_state() -> None:
    agent = UserAgent("frank")
    await agent.observe(Msg("bot", "hi", "assistant"))
    assert agent.state_dict() == {"name": "frank"}
