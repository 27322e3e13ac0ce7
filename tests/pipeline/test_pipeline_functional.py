"""sequential_pipeline, fanout_pipeline and their classes, on both backends."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentscope_rt.agent import AgentBase
from agentscope_rt.message import Msg
from agentscope_rt.pipeline import (
    FanoutPipeline,
    SequentialPipeline,
    fanout_pipeline,
    sequential_pipeline,
)

from .._timing import InFlight, finishes_within


class Appender(AgentBase):
    """Replies with the input's text plus its own tag; optionally slow or failing."""

    def __init__(self, tag: str, delay: float = 0.0, fail: bool = False) -> None:
        super().__init__()
        self.name = tag
        self.tag = tag
        self.delay = delay
        self.fail = fail
        self.inputs: list[Any] = []
        self.finished = False
        self.cancelled = False

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        self.inputs.append(msg)
        try:
            if self.delay:
                await anyio.sleep(self.delay)
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        if self.fail:
            raise ValueError(f"{self.tag} failed")
        previous = msg.get_text_content() if isinstance(msg, Msg) else ""
        if isinstance(msg, Msg):
            msg.content = f"{msg.content} (seen by {self.tag})"  # must not leak to others
        self.finished = True
        return Msg(self.tag, f"{previous}+{self.tag}{kwargs.get('suffix', '')}", "assistant")

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        return None


class Gauge(AgentBase):
    """Counts its replies in ``flight``, shared by the gauges of a test to see how many run at
    once."""

    def __init__(self, name: str, flight: InFlight) -> None:
        super().__init__()
        self.name = name
        self.flight = flight

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        async with self.flight.call():
            await anyio.sleep(0.01)
        return Msg(self.name, "done", "assistant")

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        return None


def _gauges(count: int, flight: InFlight) -> list[Gauge]:
    return [Gauge(f"g{i}", flight) for i in range(count)]


async def test_sequential_pipeline_feeds_each_reply_to_the_next() -> None:
    agents = [Appender("a"), Appender("b"), Appender("c")]
    result = await sequential_pipeline(agents, Msg("user", "start", "user"))
    assert isinstance(result, Msg)
    assert result.content.endswith("+c")
    assert result.name == "c"
    assert agents[1].inputs[0].name == "a" and agents[2].inputs[0].name == "b"
    assert await sequential_pipeline([], None) is None
    assert await SequentialPipeline(agents)(None) is not None


async def test_fanout_gives_each_agent_its_own_copy_and_keeps_agent_order() -> None:
    agents = [Appender("slow", delay=0.03), Appender("fast"), Appender("mid", delay=0.01)]
    original = Msg("user", "hello", "user")
    results = await fanout_pipeline(agents, original, suffix="!")
    assert [r.name for r in results] == ["slow", "fast", "mid"]
    assert [r.content for r in results] == ["hello+slow!", "hello+fast!", "hello+mid!"]
    assert original.content == "hello"  # nobody changed the caller's message
    inputs = [agent.inputs[0] for agent in agents]
    assert len({id(m) for m in inputs}) == 3 and all(m.id == original.id for m in inputs)


async def test_fanout_runs_concurrently_with_gather_and_in_turn_without() -> None:
    # Each reply waits until all four are running: replied in turn, the first would never end.
    together = InFlight(together=4)
    await fanout_pipeline(_gauges(4, together), Msg("user", "x", "user"))
    assert together.peak == 4
    in_turn = InFlight()
    await fanout_pipeline(_gauges(4, in_turn), None, enable_gather=False)
    assert in_turn.peak == 1


async def test_fanout_max_concurrency_bounds_the_replies_running_at_once() -> None:
    three = InFlight(together=3)
    results = await fanout_pipeline(_gauges(12, three), None, max_concurrency=3)
    assert three.peak == 3
    assert len(results) == 12
    five = InFlight(together=5)
    await FanoutPipeline(_gauges(12, five), max_concurrency=5)()
    assert five.peak == 5


async def test_fanout_max_concurrency_holds_that_many_tasks_and_keeps_agent_order() -> None:
    # Agents waiting for their turn hold no task: a million agents at 10 at a time must not
    # hold a million tasks waiting for a slot.
    started: list[str] = []
    tasks_seen: list[int] = []

    class Counting(Appender):
        async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
            started.append(self.name)
            tasks_seen.append(len(anyio.get_running_tasks()))
            return await super().reply(msg, **kwargs)

    agents = [Counting(f"a{i}") for i in range(500)]
    before = len(anyio.get_running_tasks())
    results = await fanout_pipeline(agents, Msg("user", "x", "user"), max_concurrency=10)
    assert [r.name for r in results] == [a.name for a in agents]
    assert started == [a.name for a in agents]  # started in agent order
    assert max(tasks_seen) - before <= 10


async def test_fanout_failure_cancels_the_others_and_raises_the_bare_exception() -> None:
    slow = [Appender(f"slow{i}", delay=30) for i in range(3)]
    failing = Appender("bad", fail=True)
    async with finishes_within(what="a fanout whose 30 s replies should be cancelled"):
        with pytest.raises(ValueError, match="bad failed"):
            await fanout_pipeline([*slow, failing], Msg("user", "x", "user"))
    assert all(agent.cancelled and not agent.finished for agent in slow)


async def test_fanout_failures_at_once_raise_an_exception_group() -> None:
    failing = [Appender(f"bad{i}", fail=True) for i in range(2)]
    with pytest.RaisesGroup(ValueError, ValueError):
        await fanout_pipeline(failing, Msg("user", "x", "user"))


async def test_fanout_without_gather_stops_at_the_first_failure() -> None:
    agents = [Appender("bad", fail=True), Appender("never")]
    with pytest.raises(ValueError, match="bad failed"):
        await fanout_pipeline(agents, None, enable_gather=False)
    assert agents[1].inputs == []


async def test_pipelines_refuse_bad_input() -> None:
    agent = Appender("a")
    with pytest.raises(TypeError, match="agents must be a sequence"):
        await sequential_pipeline(agent, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"agents\[1\] must be an agent"):
        await fanout_pipeline([agent, "b"], None)  # type: ignore[list-item]
    with pytest.raises(TypeError, match="msg must be a Msg"):
        await fanout_pipeline([agent], "hello")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_concurrency"):
        await fanout_pipeline([agent], None, max_concurrency=0)
    with pytest.raises(TypeError, match="agents must be a sequence"):
        FanoutPipeline(agent)  # type: ignore[arg-type]


async def test_fanout_over_many_agents_completes() -> None:
    agents = [Appender(f"a{i}") for i in range(2000)]
    results = await fanout_pipeline(agents, Msg("user", "x", "user"))
    assert [r.name for r in results] == [a.name for a in agents]
