"""The studio's agent registry against a plain model of it: whatever the order of replies
starting and ending, marks set and cleared, and agents garbage-collected, every agent shows
the state the model gives it, the counts by state agree, and the version moves with every
change. A reply starting or ending writes nothing per agent but its entry in the replies in
flight, so this pins that the derived states stay right."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import anyio.lowlevel
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from agentscope_rt.agent import AgentBase
from agentscope_rt.message import Msg
from agentscope_rt.studio._agents import (
    IDLE,
    INTERRUPTED,
    RECENT_MAX,
    REPLYING,
    STATES,
    WAITING,
    AgentRegistry,
)

POOL = 6


class Quiet(AgentBase):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    async def reply(self, *args: Any, **kwargs: Any) -> Msg:
        return Msg(self.name, "hi", "assistant")

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        return None


class RegistryMachine(RuleBasedStateMachine):
    """Agents by slot; a slot's agent can be garbage-collected and a new one made there."""

    def __init__(self) -> None:
        super().__init__()
        self.registry = AgentRegistry()
        self.agents: list[Quiet | None] = [None] * POOL
        self.known: set[str] = set()
        self.in_flight: dict[str, int] = {}
        self.marks: dict[str, int] = {}
        self.version = self.registry.version
        self.changed = False

    def _agent(self, slot: int) -> Quiet:
        agent = self.agents[slot]
        if agent is None:
            agent = self.agents[slot] = Quiet(f"agent{slot}")
        return agent

    def _model_state(self, key: str) -> int:
        if key in self.marks:
            return self.marks[key]
        return REPLYING if self.in_flight.get(key) else IDLE

    def _snapshot(self) -> tuple[Any, ...]:
        return (
            frozenset(self.known),
            tuple(sorted((k, self._model_state(k)) for k in self.known)),
        )

    def _apply(self, change: Any) -> None:
        before = self._snapshot()
        change()
        self.changed = self._snapshot() != before

    @rule(slot=st.integers(0, POOL - 1))
    def know(self, slot: int) -> None:
        agent = self._agent(slot)
        self._apply(lambda: (self.registry.know(agent), self.known.add(agent.id)))

    @rule(slot=st.integers(0, POOL - 1))
    def start(self, slot: int) -> None:
        agent = self._agent(slot)

        def change() -> None:
            self.registry.started(agent)
            self.known.add(agent.id)
            self.marks.pop(agent.id, None)
            self.in_flight[agent.id] = self.in_flight.get(agent.id, 0) + 1

        self._apply(change)

    @rule(
        slot=st.integers(0, POOL - 1),
        mark=st.sampled_from([None, INTERRUPTED, WAITING]),
    )
    def end(self, slot: int, mark: int | None) -> None:
        agent = self.agents[slot]
        if agent is None or not self.in_flight.get(agent.id):
            return  # a reply ends only after it started

        def change() -> None:
            self.registry.ended(agent, mark)
            self.in_flight[agent.id] -= 1
            if mark is None:
                self.marks.pop(agent.id, None)
            else:
                self.marks[agent.id] = mark

        self._apply(change)

    @rule(slot=st.integers(0, POOL - 1), mark=st.sampled_from([INTERRUPTED, WAITING]))
    def mark(self, slot: int, mark: int) -> None:
        agent = self._agent(slot)

        def change() -> None:
            self.registry.mark(agent.id, mark)
            if agent.id in self.known:  # an agent never seen is not marked
                self.marks[agent.id] = mark

        self._apply(change)

    @rule(slot=st.integers(0, POOL - 1))
    def unmark(self, slot: int) -> None:
        agent = self._agent(slot)
        self._apply(lambda: (self.registry.unmark(agent.id), self.marks.pop(agent.id, None)))

    @precondition(lambda self: any(a is not None for a in self.agents))
    @rule(slot=st.integers(0, POOL - 1))
    def collect(self, slot: int) -> None:
        agent = self.agents[slot]
        if agent is None or self.in_flight.get(agent.id):
            return  # a reply in flight holds its agent
        key = agent.id

        def change() -> None:
            self.agents[slot] = None
            gc.collect()
            self.known.discard(key)
            self.marks.pop(key, None)
            self.in_flight.pop(key, None)

        del agent
        self._apply(change)

    @invariant()
    def agrees_with_the_model(self) -> None:
        registry = self.registry
        assert len(registry) == len(self.known)
        for agent in self.agents:
            if agent is not None:
                expected = self._model_state(agent.id) if agent.id in self.known else None
                assert registry.state(agent.id) == expected, agent.name
        counts = [0] * len(STATES)
        for key in self.known:
            counts[self._model_state(key)] += 1
        assert registry.counts == counts
        if self.changed:
            assert registry.version > self.version
        assert registry.version >= self.version
        self.version = registry.version
        self.changed = False


RegistryMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=30)
test_the_registry_agrees_with_a_plain_model = RegistryMachine.TestCase


def test_a_mark_is_interrupted_or_waiting() -> None:
    registry = AgentRegistry()
    agent = Quiet("a")
    registry.know(agent)
    for wrong in (IDLE, REPLYING):
        with pytest.raises(ValueError, match="interrupted or waiting"):
            registry.mark(agent.id, wrong)
    assert registry.state(agent.id) == IDLE


def test_an_agent_taking_a_known_id_replaces_the_one_gone_from_it() -> None:
    registry = AgentRegistry()
    first, second = Quiet("first"), Quiet("second")
    registry.started(first)
    registry.mark(first.id, WAITING)
    second.id = first.id
    registry.know(second)
    assert registry.get(first.id) is second
    assert registry.state(second.id) == IDLE
    assert registry.counts == [1, 0, 0, 0]


async def test_pages_filter_by_the_derived_states() -> None:
    registry = AgentRegistry()
    agents = [Quiet(f"p{n}") for n in range(10_000)]
    registry.know_all(agents)
    for agent in agents[:300]:
        registry.started(agent)
    for agent in agents[100:200]:
        registry.ended(agent, INTERRUPTED)
    registry.mark(agents[5].id, WAITING)
    for agent in agents[200:300]:
        registry.ended(agent)
    assert registry.counts == [9_800, 99, 100, 1]

    replying, total = await registry.page(0, 500, state=REPLYING)
    assert total == 99
    assert [a.name for a, _ in replying] == [f"p{n}" for n in range(100) if n != 5]
    assert all(shown == REPLYING for _, shown in replying)
    interrupted, total = await registry.page(10, 20, state=INTERRUPTED)
    assert total == 100
    assert [a.name for a, _ in interrupted] == [f"p{n}" for n in range(110, 130)]
    waiting, total = await registry.page(0, 10, query="P5", state=WAITING)
    assert [(a.name, shown) for a, shown in waiting] == [("p5", WAITING)] and total == 1
    window, total = await registry.page(4, 3)
    assert [(a.name, STATES[shown]) for a, shown in window] == [
        ("p4", "replying"),
        ("p5", "waiting"),
        ("p6", "replying"),
    ]
    assert total == 10_000
    await anyio.lowlevel.checkpoint()


def test_agents_of_started_replies_are_held_only_until_learned() -> None:
    registry = AgentRegistry()
    agents = [Quiet(f"q{n}") for n in range(2 * RECENT_MAX + 10)]
    refs = [weakref.ref(agent) for agent in agents]
    for agent in agents:
        registry.started(agent)
        registry.ended(agent)
    del agent, agents
    gc.collect()
    # Nothing read the registry: only the replies since the last batch was learned hold
    # their agents.
    alive = sum(ref() is not None for ref in refs)
    assert 0 < alive < RECENT_MAX
    len(registry)  # reading learns them: from then on they are held weakly only
    gc.collect()
    assert all(ref() is None for ref in refs)
    assert len(registry) == 0 and registry.counts == [0, 0, 0, 0]
