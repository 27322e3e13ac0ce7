"""Calls: serialisation, scale, reply ids, state, bad input."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from agentscope_rt.agent import AgentBase, GenerateReason, check_msg_input
from agentscope_rt.message import Msg

from .._timing import InFlight
from ._support import EchoAgent


def user(text: str = "hi") -> Msg:
    return Msg("user", text, "user")


class Tracing(EchoAgent):
    def __init__(self) -> None:
        super().__init__("tracing")
        self.events: list[str] = []
        self.gate: anyio.Event | None = None

    async def reply(self, msg: Msg | None = None, suffix: str = "") -> Msg:
        text = msg.get_text_content() if msg is not None else ""
        self.events.append(f"start {text}")
        if self.gate is not None:
            await self.gate.wait()
        else:
            await anyio.sleep(0.01)
        self.events.append(f"end {text}")
        return Msg(self.name, str(text), "assistant")


async def test_concurrent_calls_are_serialised_in_arrival_order() -> None:
    agent = Tracing()
    replies: list[str] = []

    async def call(text: str) -> None:
        replies.append((await agent(user(text))).content)  # type: ignore[arg-type]

    async with anyio.create_task_group() as tg:
        for index in range(5):
            tg.start_soon(call, str(index))
            await anyio.sleep(0.001)
    expected = [e for i in range(5) for e in (f"start {i}", f"end {i}")]
    assert agent.events == expected
    assert replies == ["0", "1", "2", "3", "4"]


async def test_cancelled_waiting_call_leaves_the_line_and_the_agent_intact() -> None:
    agent = Tracing()
    gate = anyio.Event()
    agent.gate = gate  # "0" holds the agent until the test opens the gate: no timing races
    replies: list[str] = []
    waiting = anyio.CancelScope()

    async def call(text: str, scope: anyio.CancelScope | None = None) -> None:
        with scope or anyio.CancelScope():
            replies.append((await agent(user(text))).content)  # type: ignore[arg-type]

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "0")
        await wait_all_tasks_blocked()
        tg.start_soon(call, "1", waiting)
        await wait_all_tasks_blocked()
        tg.start_soon(call, "2")
        await wait_all_tasks_blocked()
        assert agent.events == ["start 0"]
        waiting.cancel()  # "1" is still queued behind "0"
        await wait_all_tasks_blocked()
        gate.set()
    assert waiting.cancelled_caught
    assert replies == ["0", "2"]
    assert agent.events == ["start 0", "end 0", "start 2", "end 2"]
    assert agent.interrupt_calls == 0
    agent.gate = None
    assert (await agent(user("3"))).content == "3"


async def test_observe_runs_while_reply_is_in_progress() -> None:
    agent = EchoAgent(delay=0.3)
    observed_during: list[bool] = []

    async def observer() -> None:
        await anyio.sleep(0.05)
        await agent.observe(user("meanwhile"))
        observed_during.append(agent.is_replying)

    async with anyio.create_task_group() as tg:
        tg.start_soon(observer)
        await agent(user())
    assert observed_during == [True]


class Counted(EchoAgent):
    """Counts its replies in ``flight``, shared by the agents of a test."""

    def __init__(self, name: str, flight: InFlight) -> None:
        super().__init__(name, delay=0.01)
        self.flight = flight

    async def reply(self, msg: Msg | None = None, suffix: str = "") -> Msg:
        async with self.flight.call():
            return await super().reply(msg, suffix)


async def test_thousand_agents_reply_concurrently() -> None:
    # Each reply waits until all thousand are running: replied in turn, the first never ends.
    flight = InFlight(together=1000)
    agents = [Counted(f"a{i}", flight) for i in range(1000)]
    replies: dict[int, Msg] = {}

    async def run(index: int) -> None:
        replies[index] = await agents[index](user(str(index)))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for index in range(1000):
                tg.start_soon(run, index)
    assert len(replies) == 1000
    assert all(replies[i].content == str(i) for i in range(1000))
    assert len({m.invocation_id for m in replies.values()}) == 1000
    assert flight.peak == 1000


async def test_each_call_gets_a_fresh_reply_id() -> None:
    agent = EchoAgent()
    first = await agent(user())
    second = await agent(user())
    assert first.invocation_id and second.invocation_id
    assert first.invocation_id != second.invocation_id
    assert second.invocation_id == agent._reply_id


async def test_bad_input_is_rejected_with_clear_errors() -> None:
    agent = EchoAgent()
    with pytest.raises(TypeError, match=r"EchoAgent.observe: msg must be a Msg.*not str"):
        await agent.observe("hello")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"msg\[1\] must be a Msg, not int"):
        await agent.observe([user(), 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"EchoAgent.print: msg must be a Msg, not dict"):
        await agent.print({"content": "x"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a Msg, not NoneType"):
        await agent.print(None)  # type: ignore[arg-type]
    await agent.observe(None)
    await agent.observe([user(), user()])
    assert len(agent.observed) == 2
    with pytest.raises(TypeError, match="subscribers\\[0\\] must be an AgentBase"):
        agent.reset_subscribers("hub", ["not an agent"])  # type: ignore[list-item]


def test_check_msg_input_variants() -> None:
    check_msg_input(user(), "here", allow_list=False, allow_none=False)
    with pytest.raises(TypeError, match="here: msg must be a Msg or None, not list"):
        check_msg_input([user()], "here", allow_list=False)
    with pytest.raises(TypeError, match="here: msg must be a Msg, a list of Msg, not NoneType"):
        check_msg_input(None, "here", allow_none=False)


async def test_reply_exception_propagates_and_agent_stays_usable() -> None:
    class Flaky(EchoAgent):
        fail = True

        async def reply(self, msg: Msg | None = None, suffix: str = "") -> Msg:
            if self.fail:
                raise ValueError("model down")
            return await super().reply(msg, suffix)

    agent = Flaky()
    with pytest.raises(ValueError, match="model down"):
        await agent(user())
    assert not agent.is_replying
    agent.fail = False
    assert (await agent(user("ok"))).content == "ok"


def test_agent_is_a_state_module() -> None:
    agent = EchoAgent("friday")
    assert agent.state_dict() == {"name": "friday"}
    other = EchoAgent("x")
    other.load_state_dict(agent.state_dict())
    assert other.name == "friday"


def test_generate_reason_values() -> None:
    assert [r.value for r in GenerateReason] == [
        "model_stop",
        "max_iterations",
        "interrupted",
        "tool_suspended",
        "reasoning_stop_requested",
        "acting_stop_requested",
    ]
    assert GenerateReason("interrupted") is GenerateReason.INTERRUPTED
    assert str(GenerateReason.MODEL_STOP) == "model_stop"


async def test_reply_may_return_a_list_which_is_broadcast() -> None:
    class Multi(EchoAgent):
        async def reply(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            return [Msg(self.name, "a", "assistant"), Msg(self.name, "b", "assistant")]

    agent = Multi()
    listener = EchoAgent("l")
    agent.reset_subscribers("hub", [listener])
    result: Any = await agent()
    assert [m.content for m in result] == ["a", "b"]
    assert [m.content for m in listener.observed[0]] == ["a", "b"]  # type: ignore[union-attr]


def test_subclass_without_observe_cannot_be_built() -> None:
    class NoObserve(AgentBase):
        async def reply(self, *args: Any, **kwargs: Any) -> Msg:
            return user()

    with pytest.raises(TypeError, match="observe"):
        NoObserve()  # type: ignore[abstract]
