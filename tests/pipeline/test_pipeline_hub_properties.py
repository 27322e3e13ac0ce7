"""The MsgHub delivery guarantees as hypothesis properties, on asyncio and trio.

Each test draws random participant sets, speaking orders, membership changes and observer
delays (tiny, so that slow observers and backpressure are exercised without slowing the
suite) and checks one guarantee against a model of who should hear what.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from agentscope_rt.message import Msg
from agentscope_rt.pipeline import MsgHub

from ._agents import ObserverBroke, Recorder

# An observer delay of 3 ms exceeds the hub's slow threshold, so the slow path (delivery tasks)
# is exercised; 0.2 ms and 0 stay on the inline path.
DELAYS = st.sampled_from([0.0, 0.0, 0.0, 0.0002, 0.003])
EXAMPLES = settings(max_examples=100)
TIMEOUT = 20


@dataclass
class Scenario:
    delays: list[float]
    initial: list[int]
    steps: list[tuple[str, int]]
    inbox_size: int


@st.composite
def scenarios(draw: st.DrawFn, *, membership_changes: bool = True) -> Scenario:
    count = draw(st.integers(2, 6))
    delays = draw(st.lists(DELAYS, min_size=count, max_size=count))
    initial = draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=count, unique=True))
    kinds = ["speak", "speak", "speak", "broadcast"]
    if membership_changes:
        kinds += ["add", "delete"]
    steps = draw(
        st.lists(
            st.tuples(st.sampled_from(kinds), st.integers(0, count - 1)), min_size=1, max_size=12
        )
    )
    inbox_size = draw(st.sampled_from([1, 2, 64]))
    return Scenario(delays, initial, steps, inbox_size)


def _make_agents(scenario: Scenario) -> list[Recorder]:
    return [Recorder(f"a{i}", observe_delay=d) for i, d in enumerate(scenario.delays)]


async def _play(
    scenario: Scenario, agents: list[Recorder]
) -> tuple[list[tuple[str, frozenset[int]]], list[bool]]:
    """Run the steps sequentially; return (message text, expected recipients) per publish and,
    per publish, whether every expected recipient had observed it when the call returned."""
    published: list[tuple[str, frozenset[int]]] = []
    complete_on_return: list[bool] = []
    members = list(dict.fromkeys(scenario.initial))
    counter = 0
    async with MsgHub(
        [agents[i] for i in members], inbox_size=scenario.inbox_size, name="prop"
    ) as hub:
        for kind, index in scenario.steps:
            if kind == "add":
                hub.add(agents[index])
                if index not in members:
                    members.append(index)
            elif kind == "delete":
                if index in members:
                    hub.delete(agents[index])
                    members.remove(index)
            elif kind == "speak":
                reply = await agents[index]()
                expected = (
                    frozenset(m for m in members if m != index) if index in members else frozenset()
                )
                published.append((str(reply.content), expected))
                complete_on_return.append(all(reply in agents[m].heard for m in expected))
            else:
                counter += 1
                text = f"hub#{counter}"
                await hub.broadcast(Msg("hub", text, "system"))
                expected = frozenset(members)
                published.append((text, expected))
                complete_on_return.append(all(text in agents[m].heard_texts() for m in expected))
    return published, complete_on_return


@EXAMPLES
@given(scenario=scenarios())
async def test_property_1_every_member_but_the_sender_observes_each_reply_exactly_once(
    scenario: Scenario,
) -> None:
    agents = _make_agents(scenario)
    with anyio.fail_after(TIMEOUT):
        published, _ = await _play(scenario, agents)
    for index, agent in enumerate(agents):
        heard = Counter(agent.heard_texts())
        expected = Counter(text for text, recipients in published if index in recipients)
        assert heard == expected, (agent.name, heard, expected)


@EXAMPLES
@given(
    delays=st.lists(DELAYS, min_size=2, max_size=5),
    turns=st.lists(st.integers(0, 4), min_size=1, max_size=8),
    inbox_size=st.sampled_from([1, 2, 64]),
    data=st.data(),
)
async def test_property_2_each_publishers_order_is_kept_at_every_subscriber(
    delays: list[float], turns: list[int], inbox_size: int, data: st.DataObject
) -> None:
    # Publishers speak concurrently, each several times, so their messages interleave.
    agents = [Recorder(f"a{i}", observe_delay=d) for i, d in enumerate(delays)]
    speakers = [turn % len(agents) for turn in turns]
    reply_delays = data.draw(
        st.lists(st.sampled_from([0.0, 0.0005]), min_size=len(agents), max_size=len(agents))
    )
    for agent, delay in zip(agents, reply_delays, strict=True):
        agent.reply_delay = delay

    async def speak(agent: Recorder, times: int) -> None:
        for _ in range(times):
            await agent()

    with anyio.fail_after(TIMEOUT):
        async with MsgHub(agents, inbox_size=inbox_size), anyio.create_task_group() as tg:
            for index, times in Counter(speakers).items():
                tg.start_soon(speak, agents[index], times)
    for listener in agents:
        for speaker in agents:
            if speaker is listener:
                continue
            got = [t for t in listener.heard_texts() if t.startswith(f"{speaker.name}#")]
            assert got == [f"{speaker.name}#{n}" for n in range(1, speaker.spoken + 1)]


@EXAMPLES
@given(scenario=scenarios())
async def test_property_3_a_reply_has_been_observed_by_all_when_the_call_returns(
    scenario: Scenario,
) -> None:
    agents = _make_agents(scenario)
    with anyio.fail_after(TIMEOUT):
        _, complete = await _play(scenario, agents)
    assert all(complete)


@EXAMPLES
@given(
    delays=st.lists(DELAYS, min_size=2, max_size=5),
    turns=st.lists(st.integers(0, 4), min_size=1, max_size=10),
    failing=st.one_of(st.none(), st.tuples(st.integers(0, 4), st.integers(0, 9))),
    inbox_size=st.sampled_from([2, 64]),
)
async def test_property_4_nothing_is_lost_at_exit_and_observer_errors_end_the_hub(
    delays: list[float],
    turns: list[int],
    failing: tuple[int, int] | None,
    inbox_size: int,
) -> None:
    # Everyone speaks concurrently, then the body ends at once: every message whose
    # delivery started is observed by every non-failing recipient; nothing arrives after exit.
    agents = [Recorder(f"a{i}", observe_delay=d) for i, d in enumerate(delays)]
    speakers = [turn % len(agents) for turn in turns]
    broken: Recorder | None = None
    if failing is not None:
        broken = agents[failing[0] % len(agents)]
        victim_turn = speakers[failing[1] % len(speakers)]
        if agents[victim_turn] is broken:
            broken = None  # a speaker never observes itself
        else:
            nth = speakers[: failing[1] % len(speakers) + 1].count(victim_turn)
            broken.fail_on = f"a{victim_turn}#{nth}"

    async def speak(agent: Recorder) -> None:
        await agent()

    raised: BaseException | None = None
    with anyio.fail_after(TIMEOUT):
        try:
            async with MsgHub(agents, inbox_size=inbox_size), anyio.create_task_group() as tg:
                for index in speakers:
                    tg.start_soon(speak, agents[index])
        except BaseException as exc:
            raised = exc

    if broken is None:
        assert raised is None
    else:
        assert isinstance(raised, ExceptionGroup)
        assert raised.subgroup(ObserverBroke) is not None
        assert all(isinstance(e, ObserverBroke) for e in raised.exceptions)
    # Every message heard by anyone was heard by every recipient that did not break.
    spoken = {f"{a.name}#{n}" for a in agents for n in range(1, a.spoken + 1)}
    heard_by_anyone = {t for a in agents for t in a.heard_texts()}
    assert heard_by_anyone <= spoken
    for text in heard_by_anyone:
        sender = text.split("#")[0]
        for agent in agents:
            if agent.name == sender or agent is broken:
                continue
            assert agent.heard_texts().count(text) == 1, (agent.name, text)
    if broken is None:
        assert heard_by_anyone == spoken
    # After exit, no agent broadcasts to its former members.
    before = [len(a.heard) for a in agents]
    for agent in agents:
        await agent()
    assert [len(a.heard) for a in agents] == before


@EXAMPLES
@given(
    delays=st.lists(DELAYS, min_size=3, max_size=6),
    data=st.data(),
)
async def test_property_5_an_agent_in_several_hubs_reaches_each_member_once(
    delays: list[float], data: st.DataObject
) -> None:
    agents = [Recorder(f"a{i}", observe_delay=d) for i, d in enumerate(delays)]
    indices = list(range(len(agents)))
    outer = data.draw(st.lists(st.sampled_from(indices), min_size=1, unique=True), "outer")
    inner = data.draw(st.lists(st.sampled_from(indices), min_size=1, unique=True), "inner")
    third = data.draw(st.lists(st.sampled_from(indices), max_size=3, unique=True), "third")
    order = data.draw(st.lists(st.sampled_from(indices), min_size=1, max_size=8), "order")
    nested = data.draw(st.booleans(), "nested")
    hubs = [set(outer), set(inner)] + ([set(third)] if third else [])

    expected: Counter[tuple[int, str]] = Counter()

    async def speak_all() -> None:
        for index in order:
            reply = await agents[index]()
            listeners = set().union(*(h for h in hubs if index in h)) - {index}
            for listener in listeners:
                expected[(listener, str(reply.content))] += 1
            for listener in listeners:
                assert reply in agents[listener].heard

    with anyio.fail_after(TIMEOUT):
        async with MsgHub([agents[i] for i in outer], name="outer"):
            if nested:
                async with MsgHub([agents[i] for i in inner], name="inner"):
                    if third:
                        async with MsgHub([agents[i] for i in third], name="third"):
                            await speak_all()
                    else:
                        await speak_all()
            else:
                # A hub that has exited leaves no link behind on agents that are still in
                # another hub.
                async with MsgHub([agents[i] for i in inner], name="inner"):
                    pass
                hubs = [set(outer)]
                await speak_all()
    heard: Counter[tuple[int, str]] = Counter(
        (index, text) for index, agent in enumerate(agents) for text in agent.heard_texts()
    )
    assert heard == expected
