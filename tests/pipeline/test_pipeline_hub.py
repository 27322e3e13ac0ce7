"""MsgHub behaviour on both backends."""

from __future__ import annotations

import logging

import anyio
import anyio.lowlevel
import pytest

from agentscope_rt.exception import MsgHubError
from agentscope_rt.message import Msg
from agentscope_rt.pipeline import MsgHub

from .._timing import InFlight, finishes_within
from ._agents import ObserverBroke, Recorder


def _agents(*names: str, **kwargs: object) -> list[Recorder]:
    return [Recorder(name, **kwargs) for name in names]  # type: ignore[arg-type]


async def test_replies_reach_every_other_participant_before_the_call_returns() -> None:
    alice, bob, carol = _agents("alice", "bob", "carol", observe_delay=0.01)
    async with MsgHub([alice, bob, carol]):
        reply = await alice()
        assert bob.heard == [reply] and carol.heard == [reply]
        assert alice.heard == []
        await bob()
        assert alice.heard_texts() == ["bob#1"]
        assert carol.heard_texts() == ["alice#1", "bob#1"]


async def test_announcement_is_observed_by_all_before_the_body_and_in_order() -> None:
    agents = _agents("a", "b", "c", observe_delay=0.005)
    first = Msg("host", "welcome", "system")
    second = Msg("host", "rules", "system")
    async with MsgHub(agents, announcement=[first, second]):
        for agent in agents:
            assert agent.heard_texts() == ["welcome", "rules"]
        await agents[0]()
    assert agents[1].heard_texts() == ["welcome", "rules", "a#1"]
    single = Msg("host", "solo", "system")
    late = _agents("x", "y")
    async with MsgHub(late, announcement=single):
        assert [a.heard_texts() for a in late] == [["solo"], ["solo"]]


async def test_observe_calls_of_one_agent_never_overlap() -> None:
    agents = _agents("a", "b", "c", "d", observe_delay=0.003)
    async with MsgHub(agents), anyio.create_task_group() as tg:
        for agent in agents:
            for _ in range(3):
                tg.start_soon(agent)
    assert all(a.max_observing == 1 for a in agents)
    assert all(len(a.heard) == 9 for a in agents)


async def test_slow_observers_observe_concurrently() -> None:
    # Once marked slow, observers are served by their own delivery tasks, side by side.
    speaker = Recorder("speaker")
    listeners = _agents(*(f"l{i}" for i in range(8)), observe_delay=0.05)
    async with MsgHub([speaker, *listeners]):
        for _ in range(2):  # the first two messages teach the hub who is slow
            await speaker()
        # Each observe of the third message waits until all eight listeners are observing it:
        # delivered one listener at a time, the first observe would never end.
        flight = InFlight(together=8)
        for listener in listeners:
            listener.in_flight = flight
        await speaker()
    assert all(len(listener.heard) == 3 for listener in listeners)
    assert flight.peak == 8


async def test_add_and_delete_during_a_conversation() -> None:
    alice, bob, carol, dave = _agents("alice", "bob", "carol", "dave")
    async with MsgHub([alice, bob]) as hub:
        await alice()
        hub.add(carol)
        hub.add([carol, dave])  # carol again is ignored
        assert hub.participants == [alice, bob, carol, dave]
        await bob()
        hub.delete(alice)
        await carol()
        await alice()  # no longer a member: reaches nobody
        hub.add(alice)
        await dave()
    assert alice.heard_texts() == ["bob#1", "dave#1"]
    assert bob.heard_texts() == ["alice#1", "carol#1", "dave#1"]
    assert carol.heard_texts() == ["bob#1", "dave#1"]  # joined after alice#1
    assert dave.heard_texts() == ["bob#1", "carol#1"]


async def test_deleted_agent_no_longer_broadcasts_to_the_others() -> None:
    # AgentScope 1.0 keeps the removed agent's subscribers: its replies still reach the hub.
    alice, bob = _agents("alice", "bob")
    async with MsgHub([alice, bob]) as hub:
        hub.delete(bob)
        await bob()
        assert alice.heard == []
        assert bob._hub_links == {}


async def test_delete_of_a_non_member_warns(caplog: pytest.LogCaptureFixture) -> None:
    alice, bob = _agents("alice", "bob")
    with caplog.at_level(logging.WARNING, logger="agentscope_rt.pipeline"):
        async with MsgHub([alice]) as hub:
            hub.delete(bob)
    assert "'bob' is not a participant" in caplog.text


async def test_auto_broadcast_off_with_manual_broadcast() -> None:
    alice, bob, carol = _agents("alice", "bob", "carol")
    async with MsgHub([alice, bob, carol], enable_auto_broadcast=False) as hub:
        reply = await alice()
        assert bob.heard == [] and carol.heard == []
        await hub.broadcast(reply)
        # A manual broadcast reaches every participant, the speaker included (as AgentScope).
        assert [a.heard for a in (alice, bob, carol)] == [[reply]] * 3
        hub.set_auto_broadcast(True)
        await bob()
        assert carol.heard_texts() == ["alice#1", "bob#1"]
        hub.set_auto_broadcast(False)
        await carol()
        assert alice.heard_texts() == ["alice#1", "bob#1"]
        await hub.broadcast([Msg("host", "x", "system"), Msg("host", "y", "system")])
    assert alice.heard_texts() == ["alice#1", "bob#1", "x", "y"]


async def test_nothing_is_delivered_after_exit() -> None:
    alice, bob = _agents("alice", "bob")
    hub = MsgHub([alice, bob])
    async with hub:
        await alice()
    await alice()
    await bob()
    assert bob.heard_texts() == ["alice#1"]
    assert alice.heard_texts() == []
    assert alice._hub_links == {} and bob._hub_links == {}
    with pytest.raises(MsgHubError, match="has exited"):
        await hub.broadcast(Msg("x", "y", "user"))
    with pytest.raises(MsgHubError, match="only once"):
        async with hub:
            pass


async def test_broadcast_before_entering_is_refused() -> None:
    hub = MsgHub(_agents("a"))
    with pytest.raises(MsgHubError, match="has not been entered"):
        await hub.broadcast(Msg("x", "y", "user"))


class _Publishers:
    """Publishers started in tasks; ``all_started`` is set when the last of *count* has begun
    its broadcast."""

    def __init__(self) -> None:
        self.started = 0
        self.all_started = anyio.Event()

    async def publish(self, hub: MsgHub, text: str, count: int) -> None:
        # Runs without yielding from here into the broadcast, so once the last publisher has
        # set the event every message is in an inbox or waiting for room.
        self.started += 1
        if self.started == count:
            self.all_started.set()
        await hub.broadcast(Msg("host", text, "system"))


async def test_messages_queued_at_exit_are_delivered() -> None:
    # Publishers in tasks outside the body, some still waiting for room in a full inbox when
    # the body ends: every message they started to publish is delivered.
    speaker = Recorder("speaker")
    listener = Recorder("listener", observe_delay=0.002)
    publishers = _Publishers()

    async with anyio.create_task_group() as tg, MsgHub([speaker, listener], inbox_size=2) as hub:
        for index in range(6):
            tg.start_soon(publishers.publish, hub, f"m{index}", 6)
        await publishers.all_started.wait()
    assert sorted(listener.heard_texts()) == [f"m{i}" for i in range(6)]
    assert hub._subs[id(listener)].queued == 0


async def test_slow_observer_applies_backpressure() -> None:
    speaker = Recorder("speaker")
    slow = Recorder("slow", observe_delay=0.01)
    sent = 0
    highest_backlog = 0

    async def publish(hub: MsgHub) -> None:
        nonlocal sent
        for index in range(10):
            await hub.broadcast(Msg("host", f"m{index}", "system"))
            sent += 1

    async with MsgHub([speaker, slow], inbox_size=2) as hub, anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(publish, hub)
        while sent < 30:
            queue = hub._subs[id(slow)].inbox
            highest_backlog = max(highest_backlog, len(queue) if queue is not None else 0)
            await anyio.sleep(0.001)
    assert highest_backlog <= 2
    assert len(slow.heard) == 30


async def test_observer_error_ends_the_hub_with_an_exception_group() -> None:
    alice = Recorder("alice")
    bob = Recorder("bob", fail_on="alice#2")
    carol = Recorder("carol", observe_delay=0.002)
    reached_after = False
    with pytest.RaisesGroup(ObserverBroke):
        async with MsgHub([alice, bob, carol]):
            await alice()
            await alice()  # bob's observer raises: the body is cancelled here
            reached_after = True
    assert not reached_after
    # The others still observed what was published, the failing message included.
    assert carol.heard_texts() == ["alice#1", "alice#2"]
    assert bob.heard_texts() == ["alice#1"]
    assert alice._hub_links == {} and carol._hub_links == {}


async def test_observer_error_does_not_hang_a_publisher_outside_the_hub() -> None:
    alice = Recorder("alice")
    bob = Recorder("bob", fail_on="alice#1")
    outcome: list[BaseException] = []
    entered = anyio.Event()
    hub = MsgHub([alice, bob])

    async def host() -> None:
        with pytest.RaisesGroup(ObserverBroke):
            async with hub:
                entered.set()
                await anyio.sleep(30)

    async def outsider() -> None:
        await entered.wait()
        try:
            await alice()
        except MsgHubError as exc:
            outcome.append(exc)

    async with (
        finishes_within(what="a hub body sleeping 30 s after its observer failed"),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(host)
        tg.start_soon(outsider)
    assert len(outcome) == 1 and "observer raised" in str(outcome[0])


async def test_body_error_propagates_unwrapped_after_delivery() -> None:
    alice = Recorder("alice")
    bob = Recorder("bob")
    with pytest.raises(KeyError):
        async with MsgHub([alice, bob]):
            await alice()
            raise KeyError("body")
    assert bob.heard_texts() == ["alice#1"]


async def test_failing_announcement_raises_the_group() -> None:
    alice = Recorder("alice", fail_on="hello")
    bob = Recorder("bob")
    body_ran = False
    with pytest.RaisesGroup(ObserverBroke):
        async with MsgHub([alice, bob], announcement=Msg("host", "hello", "system")):
            body_ran = True
    assert not body_ran
    assert bob.heard_texts() == ["hello"]
    assert alice._hub_links == {} and bob._hub_links == {}


async def test_cancelling_the_hub_from_outside_leaves_no_task_running() -> None:
    speakers = _agents("a", "b", "c", observe_delay=0.05)
    baseline = len(anyio.get_running_tasks())
    with anyio.move_on_after(0.03) as scope:
        async with MsgHub(speakers), anyio.create_task_group() as tg:
            for agent in speakers:
                tg.start_soon(agent)
            await anyio.sleep(10)
    assert scope.cancelled_caught
    await anyio.lowlevel.checkpoint()
    assert len(anyio.get_running_tasks()) == baseline
    assert all(agent._hub_links == {} for agent in speakers)


async def test_two_hubs_with_one_name_stay_separate() -> None:
    alice, bob, carol = _agents("alice", "bob", "carol")
    async with MsgHub([alice, bob], name="room"), MsgHub([alice, carol], name="room"):
        await alice()
    assert bob.heard_texts() == ["alice#1"] and carol.heard_texts() == ["alice#1"]


async def test_bad_input_is_refused_with_clear_errors() -> None:
    alice = Recorder("alice")
    with pytest.raises(TypeError, match=r"participants\[1\] must be an AgentBase"):
        MsgHub([alice, "bob"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="announcement must be a Msg"):
        MsgHub([alice], announcement="hello")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="inbox_size"):
        MsgHub([alice], inbox_size=0)
    async with MsgHub([alice]) as hub:
        with pytest.raises(TypeError, match="broadcast msg must be a Msg"):
            await hub.broadcast("hello")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="must be an agent or a sequence"):
            hub.add(42)  # type: ignore[arg-type]
    with pytest.raises(MsgHubError, match="cannot be added"):
        hub.add(Recorder("late"))


async def test_thinking_blocks_are_not_broadcast() -> None:
    from agentscope_rt.message import TextBlock, ThinkingBlock

    class Thinker(Recorder):
        async def reply(self, msg: object = None, **kwargs: object) -> Msg:
            return Msg(
                self.name,
                [ThinkingBlock(thinking="secret"), TextBlock(text="answer")],
                "assistant",
            )

    thinker = Thinker("thinker")
    listener = Recorder("listener")
    async with MsgHub([thinker, listener]):
        reply = await thinker()
    assert reply.has_content_blocks("thinking")
    assert listener.heard[0].get_content_blocks("thinking") == []
    assert listener.heard[0].get_text_content() == "answer"


def test_repr_names_the_participants() -> None:
    hub = MsgHub([Recorder("alice")], name="room")
    assert repr(hub) == "MsgHub(name='room', new, participants=['alice'])"


async def test_a_thousand_participants_hear_every_speaker() -> None:
    # The full 1,000 x 10,000 workload runs in bench/bench_hub.py; this is its shape, smaller.
    agents = _agents(*(f"a{i}" for i in range(1000)))
    speakers = agents[::4]
    with anyio.fail_after(60):
        async with MsgHub(agents) as hub:
            for speaker in speakers:
                await speaker()
            # The common path delivers inline: no observer was mistaken for a slow one twice.
            assert sum(sub.slow for sub in hub._subs.values()) < 100
    for agent in agents:
        expected = len(speakers) - (1 if agent in speakers else 0)
        assert len(agent.heard) == expected


async def test_cancelled_while_exit_waits_for_blocked_publishers() -> None:
    # The body has ended; exit waits for publishers stuck on a full inbox of an observer that
    # takes 10 s; an outer timeout then stops everything, leaving no task behind.
    speaker = Recorder("speaker")
    slow = Recorder("slow", observe_delay=10)
    publishers = _Publishers()

    baseline = len(anyio.get_running_tasks())
    with anyio.fail_after(5), anyio.move_on_after(0.1) as scope:
        async with anyio.create_task_group() as tg, MsgHub([speaker, slow], inbox_size=1) as hub:
            for index in range(4):
                tg.start_soon(publishers.publish, hub, f"m{index}", 4)
            await publishers.all_started.wait()
    assert scope.cancelled_caught
    assert len(anyio.get_running_tasks()) == baseline
    assert speaker._hub_links == {} and slow._hub_links == {}


async def test_observe_hooks_apply_to_hub_deliveries_whenever_registered() -> None:
    alice, bob, carol = _agents("alice", "bob", "carol")
    seen: list[str] = []

    def tag(self: Recorder, kwargs: dict[str, object]) -> dict[str, object]:
        msg = kwargs["msg"]
        assert isinstance(msg, Msg)
        seen.append(f"{self.name}<{msg.content}")
        return {"msg": Msg(msg.name, f"tagged {msg.content}", msg.role)}

    async with MsgHub([alice, bob, carol]):
        await alice()
        bob.register_instance_hook("pre_observe", "tag", tag)
        await alice()
        bob.remove_instance_hook("pre_observe", "tag")
        Recorder.register_class_hook("pre_observe", "tag", tag)
        try:
            await alice()
        finally:
            Recorder.remove_class_hook("pre_observe", "tag")
        await alice()
    assert bob.heard_texts() == ["alice#1", "tagged alice#2", "tagged alice#3", "alice#4"]
    assert carol.heard_texts() == ["alice#1", "alice#2", "tagged alice#3", "alice#4"]
    assert seen == ["bob<alice#2", "bob<alice#3", "carol<alice#3"]


async def test_observe_replaced_on_the_instance_is_what_the_hub_calls() -> None:
    alice, bob = _agents("alice", "bob")
    heard: list[object] = []

    async def observe(msg: Msg | list[Msg] | None) -> None:
        heard.append(msg)

    bob.observe = observe  # type: ignore[method-assign]
    async with MsgHub([alice, bob]):
        reply = await alice()
    assert heard == [reply] and bob.heard == []


class _NotAMsg:
    content = "impostor"


async def test_a_list_reply_with_a_non_message_fails_the_observer_input_check() -> None:
    class Mixed(Recorder):
        async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: object) -> Msg:
            # Looks enough like a Msg to pass broadcasting, but observe's input check refuses it.
            return [Msg(self.name, "fine", "assistant"), _NotAMsg()]  # type: ignore[return-value]

    speaker, listener = Mixed("speaker"), Recorder("listener")
    with pytest.raises(ExceptionGroup) as caught:
        async with MsgHub([speaker, listener]):
            await speaker()
    assert listener.heard_texts() == ["fine"]
    assert any(isinstance(err, TypeError) for err in caught.value.exceptions)


async def test_an_idle_hub_runs_no_task_per_member() -> None:
    # A member's delivery task is started only when its messages back up: a hub of a million
    # members must not hold a million sleeping tasks.
    members = [Recorder(f"r{index}") for index in range(1_000)]
    before = len(anyio.get_running_tasks())
    async with MsgHub(members) as hub:
        assert len(anyio.get_running_tasks()) - before < 5
        await hub.broadcast(Msg("host", "hello", "system"))
        await members[0](Msg("host", "speak", "user"))
        assert len(anyio.get_running_tasks()) - before < 5
    assert all(len(member.heard) == (1 if member is members[0] else 2) for member in members)
