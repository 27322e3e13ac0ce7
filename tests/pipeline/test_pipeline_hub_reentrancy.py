"""MsgHub re-entrancy, on asyncio and trio: observers that call other members.

An observer that calls another member hears that member's reply re-entrantly, inside its own
``observe`` (as in AgentScope, where observers run in the speaker's task), at any depth. A wait
that could never end — an observer calling the agent whose reply it observes, or observers in
two tasks each waiting for the other's call — raises ``MsgHubError`` naming the agents on the
cycle. Every test is bounded by ``anyio.fail_after``: a regression fails instead of hanging.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from agentscope_rt.agent import AgentBase
from agentscope_rt.exception import MsgHubError
from agentscope_rt.message import Msg
from agentscope_rt.pipeline import MsgHub, _msghub, fanout_pipeline

TIMEOUT = 10

Event = tuple[str, str, str]  # ("start" | "end", observer, message text)


class Member(AgentBase):
    """Replies ``name#n``; logs the start and end of every observe in a shared log.

    ``on_hear[text]`` is awaited (once) inside the observe of the message with that text;
    a ``MsgHubError`` it raises is kept in ``errors`` when ``catch`` is true, else it escapes
    the observe.
    """

    def __init__(self, name: str, log: list[Event], *, catch: bool = True) -> None:
        super().__init__()
        self.name = name
        self.log = log
        self.catch = catch
        self.on_hear: dict[str, Callable[[], Awaitable[Any]]] = {}
        self.errors: list[MsgHubError] = []
        self.spoken = 0
        self.observe_delay = 0.0
        self.reply_hook: Callable[[], Awaitable[None]] | None = None
        self.observing = 0
        self.max_observing = 0

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        self.spoken += 1
        text = f"{self.name}#{self.spoken}"
        if self.reply_hook is not None:
            await self.reply_hook()
        return Msg(self.name, text, "assistant")

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        assert isinstance(msg, Msg)
        text = str(msg.content)
        self.log.append(("start", self.name, text))
        self.observing += 1
        self.max_observing = max(self.max_observing, self.observing)
        if self.observe_delay:
            await anyio.sleep(self.observe_delay)
        action = self.on_hear.pop(text, None)
        if action is not None:
            try:
                await action()
            except MsgHubError as exc:
                if not self.catch:
                    raise
                self.errors.append(exc)
        self.observing -= 1
        self.log.append(("end", self.name, text))

    def max_observing_at_once(self) -> int:
        """The deepest nesting of this agent's observe (1: never re-entered)."""
        return self.max_observing


def _members(log: list[Event], *names: str, catch: bool = True) -> list[Member]:
    return [Member(name, log, catch=catch) for name in names]


def heard(log: list[Event], name: str) -> list[str]:
    """What *name* started observing, in order."""
    return [text for kind, who, text in log if kind == "start" and who == name]


def finished(log: list[Event], name: str, text: str) -> bool:
    return ("end", name, text) in log


def _balanced(log: list[Event]) -> bool:
    starts = Counter((who, text) for kind, who, text in log if kind == "start")
    ends = Counter((who, text) for kind, who, text in log if kind == "end")
    return starts == ends


# -- observers that call other members ---------------------------------------------------


async def test_an_observer_calling_another_member_hears_its_reply_re_entrantly() -> None:
    # The scenario that used to deadlock: while alice speaks, bob's observe awaits carol().
    log: list[Event] = []
    alice, bob, carol = _members(log, "alice", "bob", "carol")
    replies: list[Msg] = []

    async def bob_calls_carol() -> None:
        replies.append(await carol())
        # carol's call returned: everyone else, bob included (re-entrantly), observed it.
        assert finished(log, "alice", "carol#1")
        assert finished(log, "bob", "carol#1")

    bob.on_hear["alice#1"] = bob_calls_carol
    with anyio.fail_after(TIMEOUT):
        async with MsgHub([alice, bob, carol]):
            reply = await alice()
            snapshot = list(log)
    assert reply.content == "alice#1"
    assert [r.content for r in replies] == ["carol#1"]
    assert heard(log, "alice") == ["carol#1"]
    assert heard(log, "bob") == ["alice#1", "carol#1"]
    assert heard(log, "carol") == ["alice#1"]
    # bob heard carol's reply inside his observe of alice's.
    assert snapshot.index(("start", "bob", "carol#1")) < snapshot.index(("end", "bob", "alice#1"))
    # When alice's call returned, every observe had finished.
    assert _balanced(snapshot)
    assert finished(snapshot, "bob", "alice#1") and finished(snapshot, "carol", "alice#1")
    assert not bob.errors


@pytest.mark.parametrize("depth", [2, 3, 5])
async def test_observers_calling_members_nest_to_any_depth(depth: int) -> None:
    # m1 hears m0#1 and calls m2; m3 hears m2#1 and calls m4; ... Each reply reaches the
    # observers further up the stack re-entrantly.
    log: list[Event] = []
    names = [f"m{i}" for i in range(2 * depth + 1)]
    agents = _members(log, *names)
    for level in range(depth):
        listener, callee = agents[2 * level + 1], agents[2 * level + 2]
        listener.on_hear[f"m{2 * level}#1"] = callee
    with anyio.fail_after(TIMEOUT):
        async with MsgHub(agents):
            await agents[0]()
            snapshot = list(log)
    assert _balanced(snapshot)
    spoken = [f"m{2 * level}#1" for level in range(depth + 1)]
    for agent in agents:
        expected = sorted(text for text in spoken if not text.startswith(f"{agent.name}#"))
        assert sorted(heard(log, agent.name)) == expected, agent.name
        assert not agent.errors
    # Every caller heard its callee's reply (and the deeper ones) inside its own observe.
    for level in range(depth):
        caller = names[2 * level + 1]
        outer_end = snapshot.index(("end", caller, f"m{2 * level}#1"))
        for deeper in spoken[level + 1 :]:
            assert snapshot.index(("start", caller, deeper)) < outer_end, (caller, deeper)


async def test_an_observer_of_a_nested_reply_may_call_yet_another_member() -> None:
    # bob's observe calls carol; alice observes carol's reply (re-entrantly: alice's own call
    # is still up the stack) and calls dave; dave's reply reaches alice, bob and carol.
    log: list[Event] = []
    alice, bob, carol, dave = _members(log, "alice", "bob", "carol", "dave")
    bob.on_hear["alice#1"] = carol
    alice.on_hear["carol#1"] = dave
    with anyio.fail_after(TIMEOUT):
        async with MsgHub([alice, bob, carol, dave]):
            await alice()
            snapshot = list(log)
    assert _balanced(snapshot)
    assert heard(log, "alice") == ["carol#1", "dave#1"]
    assert heard(log, "bob") == ["alice#1", "carol#1", "dave#1"]
    assert sorted(heard(log, "carol")) == ["alice#1", "dave#1"]
    assert sorted(heard(log, "dave")) == ["alice#1", "carol#1"]
    assert snapshot.index(("end", "bob", "dave#1")) < snapshot.index(("end", "bob", "alice#1"))


async def test_an_observer_may_call_members_from_tasks_it_starts_and_waits_for() -> None:
    # Tasks started inside an observe inherit its place: their replies reach bob
    # re-entrantly, one at a time, while bob waits for the tasks.
    log: list[Event] = []
    alice, bob, carol, dave = _members(log, "alice", "bob", "carol", "dave")
    replies: list[list[Msg]] = []

    async def bob_fans_out() -> None:
        replies.append(await fanout_pipeline([carol, dave], Msg("bob", "both of you?", "user")))

    bob.on_hear["alice#1"] = bob_fans_out
    with anyio.fail_after(TIMEOUT):
        async with MsgHub([alice, bob, carol, dave]):
            await alice()
            snapshot = list(log)
    assert [[r.content for r in batch] for batch in replies] == [["carol#1", "dave#1"]]
    assert _balanced(snapshot)
    assert heard(log, "bob")[0] == "alice#1"
    assert sorted(heard(log, "bob")[1:]) == ["carol#1", "dave#1"]
    assert sorted(heard(log, "alice")) == ["carol#1", "dave#1"]
    assert sorted(heard(log, "carol")) == ["alice#1", "dave#1"]
    assert sorted(heard(log, "dave")) == ["alice#1", "carol#1"]
    assert snapshot.index(("end", "bob", "alice#1")) == max(
        snapshot.index(("end", "bob", text)) for text in heard(log, "bob")
    )
    assert bob.max_observing_at_once() == 2  # its observe of alice's, and one reply in it


async def test_an_observer_may_broadcast_through_the_hub() -> None:
    # hub.broadcast from inside bob's observe reaches every participant, bob included
    # (re-entrantly), before it returns.
    log: list[Event] = []
    alice, bob, carol = _members(log, "alice", "bob", "carol")
    with anyio.fail_after(TIMEOUT):
        async with MsgHub([alice, bob, carol]) as hub:

            async def bob_broadcasts() -> None:
                await hub.broadcast(Msg("host", "note", "system"))
                assert all(finished(log, name, "note") for name in ("alice", "bob", "carol"))

            bob.on_hear["alice#1"] = bob_broadcasts
            await alice()
            snapshot = list(log)
    assert _balanced(snapshot)
    assert heard(log, "bob") == ["alice#1", "note"]
    assert heard(log, "alice") == ["note"]
    assert sorted(heard(log, "carol")) == ["alice#1", "note"]


async def test_mutual_calls_from_two_tasks_work() -> None:
    # bob's observe calls carol while carol's observe (in another task) calls bob: each
    # reply reaches the other observer re-entrantly, so neither waits for the other.
    log: list[Event] = []
    alice, bob, carol, dave = _members(log, "alice", "bob", "carol", "dave")
    both_observing = anyio.Event()
    observing = 0

    def calls(agent: Member) -> Callable[[], Awaitable[Any]]:
        async def action() -> None:
            nonlocal observing
            observing += 1
            if observing == 2:
                both_observing.set()
            await both_observing.wait()
            await agent()

        return action

    bob.on_hear["alice#1"] = calls(carol)
    carol.on_hear["dave#1"] = calls(bob)
    with anyio.fail_after(TIMEOUT):
        async with MsgHub([alice, bob, carol, dave]), anyio.create_task_group() as tg:
            tg.start_soon(alice)
            tg.start_soon(dave)
    assert not bob.errors and not carol.errors
    assert _balanced(log)
    for name, texts in {
        "alice": ["bob#1", "carol#1", "dave#1"],
        "bob": ["alice#1", "carol#1", "dave#1"],
        "carol": ["alice#1", "bob#1", "dave#1"],
        "dave": ["alice#1", "bob#1", "carol#1"],
    }.items():
        assert sorted(heard(log, name)) == texts, name


async def test_a_re_entrant_publish_into_a_full_inbox_makes_room_itself() -> None:
    # inbox_size=1: while bob's observe waits, dave and eve speak from other tasks and fill
    # bob's inbox (its slot and its stream); carol's reply then cannot wait for room (bob, up
    # the stack, is the one who would make it) and delivers bob's queue re-entrantly, oldest
    # first, then itself.
    log: list[Event] = []
    alice, bob, carol, dave, eve = _members(log, "alice", "bob", "carol", "dave", "eve")
    bob_observing = anyio.Event()
    both_queued = anyio.Event()

    async def carol_heard_one() -> None:
        # dave's and eve's replies are in bob's inbox once their publishers reach carol.
        if "dave#1" in heard(log, "carol") and "eve#1" in heard(log, "carol"):
            both_queued.set()

    async def bob_waits_then_calls_carol() -> None:
        bob_observing.set()
        await both_queued.wait()
        await carol()

    bob.on_hear["alice#1"] = bob_waits_then_calls_carol
    carol.on_hear["dave#1"] = carol_heard_one
    carol.on_hear["eve#1"] = carol_heard_one

    async def after_bob_started(agent: Member) -> None:
        await bob_observing.wait()
        await agent()

    with anyio.fail_after(TIMEOUT):
        async with (
            MsgHub([alice, bob, carol, dave, eve], inbox_size=1),
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(alice)
            tg.start_soon(after_bob_started, dave)
            tg.start_soon(after_bob_started, eve)
    assert not bob.errors
    assert _balanced(log)
    bob_heard = heard(log, "bob")
    assert bob_heard[0] == "alice#1" and bob_heard[3] == "carol#1"
    assert sorted(bob_heard[1:3]) == ["dave#1", "eve#1"]
    assert len(bob_heard) == 4


# -- waits that could never end ------------------------------------------------------------


async def test_an_observer_calling_the_speaker_raises_msghub_error_naming_both() -> None:
    log: list[Event] = []
    alice, bob, carol = _members(log, "alice", "bob", "carol")
    bob.on_hear["alice#1"] = alice
    with anyio.fail_after(TIMEOUT):
        async with MsgHub([alice, bob, carol]):
            await alice()
    assert len(bob.errors) == 1
    text = str(bob.errors[0])
    assert "'alice'" in text and "'bob'" in text and "cycle" in text
    assert heard(log, "bob") == ["alice#1"] and heard(log, "carol") == ["alice#1"]
    assert alice.spoken == 1


async def test_an_uncaught_cycle_error_ends_the_hub_like_any_observer_error() -> None:
    log: list[Event] = []
    alice, bob, carol = _members(log, "alice", "bob", "carol", catch=False)
    bob.on_hear["alice#1"] = alice
    with anyio.fail_after(TIMEOUT), pytest.raises(ExceptionGroup) as caught:
        async with MsgHub([alice, bob, carol]):
            await alice()
    errors = caught.value.exceptions
    assert len(errors) == 1 and isinstance(errors[0], MsgHubError)
    assert "'alice'" in str(errors[0]) and "'bob'" in str(errors[0])
    assert heard(log, "carol") == ["alice#1"]


async def test_a_slow_observer_calling_the_speaker_from_its_delivery_task_raises() -> None:
    # bob sleeps in every observe, so after two messages the hub leaves him to his own
    # delivery task: the cycle then runs through alice's wait for her ticket.
    log: list[Event] = []
    alice, bob, carol = _members(log, "alice", "bob", "carol")
    bob.observe_delay = 0.005
    with anyio.fail_after(TIMEOUT):
        async with MsgHub([alice, bob, carol]) as hub:
            await hub.broadcast(Msg("host", "one", "system"))
            await hub.broadcast(Msg("host", "two", "system"))
            assert hub._subs[id(bob)].slow  # the delivery-task path is the one under test
            bob.on_hear["alice#1"] = alice
            await alice()
    assert len(bob.errors) == 1
    assert "'alice'" in str(bob.errors[0]) and "'bob'" in str(bob.errors[0])
    assert _balanced(log)


async def test_observers_in_two_tasks_waiting_for_each_other_raise_msghub_error() -> None:
    # alice speaks (task 1): bob's observe calls carol, whose reply must reach dave. eve
    # speaks (task 2): dave's observe calls carol too, so it waits for carol's call, which
    # waits for dave: a cycle through two tasks. Carol replies only once dave is observing.
    log: list[Event] = []
    alice, bob, carol, dave, eve = _members(log, "alice", "bob", "carol", "dave", "eve")
    dave_observing = anyio.Event()
    carol_replying = anyio.Event()

    async def carol_waits_for_dave() -> None:
        carol_replying.set()
        await dave_observing.wait()

    carol.reply_hook = carol_waits_for_dave

    async def dave_calls_carol() -> None:
        dave_observing.set()
        await carol_replying.wait()
        carol.reply_hook = None
        await carol()

    bob.on_hear["alice#1"] = carol
    dave.on_hear["eve#1"] = dave_calls_carol

    async def eve_after_alice() -> None:
        await carol_replying.wait()
        await eve()

    with anyio.fail_after(TIMEOUT):
        async with MsgHub([alice, bob, carol, dave, eve]), anyio.create_task_group() as tg:
            tg.start_soon(alice)
            tg.start_soon(eve_after_alice)
    errors = bob.errors + dave.errors
    assert len(errors) == 1
    text = str(errors[0])
    assert "'carol'" in text and "'dave'" in text and "cycle" in text
    assert _balanced(log)
    # Nothing was heard twice.
    for agent in (alice, bob, carol, dave, eve):
        assert len(heard(log, agent.name)) == len(set(heard(log, agent.name)))


# -- the property: random "observer calls member" graphs -----------------------------------


@dataclass
class Graph:
    size: int
    # (listener, speaker, n, callee): on hearing speaker's n-th reply, listener calls callee.
    triggers: list[tuple[int, int, int, int]]
    # Speakers, in order, of each concurrent task of the body.
    tasks: list[list[int]]
    delays: list[float]
    inbox_size: int
    # Every observer counts as slow (left to its delivery task, which may relay for others),
    # not only those whose delay exceeds the hub's threshold.
    all_slow: bool = False


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    size = draw(st.integers(2, 5))
    agent = st.integers(0, size - 1)
    # A callee drawn at random, or (to make cycles common) the speaker being observed.
    callee = st.one_of(agent, st.none())
    drawn = draw(st.lists(st.tuples(agent, agent, st.sampled_from([1, 1, 2]), callee), max_size=8))
    triggers = [
        (listener, speaker, n, speaker if target is None else target)
        for listener, speaker, n, target in drawn
        if listener != speaker
    ]
    tasks = draw(st.lists(st.lists(agent, min_size=1, max_size=3), min_size=1, max_size=2))
    delays = draw(st.lists(st.sampled_from([0.0, 0.0, 0.003]), min_size=size, max_size=size))
    inbox_size = draw(st.sampled_from([1, 2, 64]))
    return Graph(size, triggers, tasks, delays, inbox_size, draw(st.booleans()))


@settings(max_examples=80)
@given(graph=graphs())
@example(
    # A call waiting for the message of an observe that was re-entered further up its stack.
    graph=Graph(
        size=5,
        triggers=[
            (4, 3, 1, 3),
            (4, 1, 2, 2),
            (3, 1, 1, 4),
            (3, 0, 1, 0),
            (3, 0, 2, 1),
            (0, 1, 1, 0),
            (1, 3, 1, 2),
        ],
        tasks=[[0, 4, 0], [1, 2, 2]],
        delays=[0.0, 0.0, 0.003, 0.0, 0.0],
        inbox_size=64,
        all_slow=True,
    )
)
async def test_property_every_graph_completes_with_the_guarantees_or_raises(
    graph: Graph,
) -> None:
    log: list[Event] = []
    agents = [Member(f"a{i}", log) for i in range(graph.size)]
    for agent, delay in zip(agents, graph.delays, strict=True):
        agent.observe_delay = delay
    for listener, speaker, n, callee in graph.triggers:
        agents[listener].on_hear.setdefault(f"a{speaker}#{n}", agents[callee])
    returned: list[str] = []
    complete_on_return: list[bool] = []
    refused: list[MsgHubError] = []

    async def speak(index: int) -> None:
        try:
            reply = await agents[index]()
        except MsgHubError as exc:
            refused.append(exc)
            return
        text = str(reply.content)
        returned.append(text)
        complete_on_return.append(
            all(finished(log, a.name, text) for a in agents if a is not agents[index])
        )

    def speaking(index: int) -> Callable[[], Awaitable[None]]:
        return lambda: speak(index)

    # Replies of calls made by observers count as well: wrap every callee.
    for agent in agents:
        for text, target in list(agent.on_hear.items()):
            assert isinstance(target, Member)
            agent.on_hear[text] = speaking(agents.index(target))

    async def run(speakers: list[int]) -> None:
        for index in speakers:
            await speak(index)

    # Whoever gets a MsgHubError keeps it: nothing may escape the hub.
    threshold = _msghub.SLOW_OBSERVE_SECONDS
    if graph.all_slow:
        _msghub.SLOW_OBSERVE_SECONDS = -1.0  # type: ignore[misc]
    try:
        with anyio.fail_after(TIMEOUT):
            async with (
                MsgHub(agents, inbox_size=graph.inbox_size),
                anyio.create_task_group() as tg,
            ):
                for speakers in graph.tasks:
                    tg.start_soon(run, speakers)
    finally:
        _msghub.SLOW_OBSERVE_SECONDS = threshold  # type: ignore[misc]
    errors = refused + [error for agent in agents for error in agent.errors]
    nested = len(returned) + len(refused) - sum(map(len, graph.tasks))
    event("a wait cycle was refused" if errors else "completed")
    event(f"calls made by observers: {min(nested, 3)}")
    for error in errors:
        assert "cycle" in str(error) and "'a" in str(error)
    assert _balanced(log)
    # Nobody hears a message twice, nor its own.
    for agent in agents:
        texts = heard(log, agent.name)
        assert len(texts) == len(set(texts)), agent.name
        assert not any(text.startswith(f"{agent.name}#") for text in texts)
    # Each publisher's replies reach each listener in order.
    for hearer in agents:
        for sender in agents:
            numbers = [
                int(text.split("#")[1])
                for text in heard(log, hearer.name)
                if text.startswith(f"{sender.name}#")
            ]
            assert numbers == sorted(numbers)
    if not errors:
        # Every reply was observed by every other member, before its call returned.
        assert all(complete_on_return)
        for text in returned:
            for agent in agents:
                if not text.startswith(f"{agent.name}#"):
                    assert text in heard(log, agent.name), (agent.name, text)
