"""Groups of agents on agent hosts (``AgentHost.create_group``): a fanout or a broadcast is
one Ray call per host, answers in agent order as one process does (the two-thirds game of
``examples/87_two_thirds_game.py`` gives the same results on hosts), fails as
``fanout_pipeline`` fails, and leaves nothing running on the hosts when the caller is
cancelled."""

from __future__ import annotations

import gc
import importlib.util
import threading
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

from agentscope_rt.distributed import (
    AgentHost,
    AgentHostDiedError,
    RemoteAgent,
    RemoteGroup,
    broadcast_groups,
    fanout_groups,
)
from agentscope_rt.distributed._actor import HostActor
from agentscope_rt.message import Msg, is_shared
from agentscope_rt.pipeline import MsgHub, fanout_pipeline

from ._agents import make_echo, make_echoes, make_keepers, make_not_agents

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "87_two_thirds_game.py"


@asynccontextmanager
async def two_hosts(prefix: str) -> AsyncIterator[tuple[AgentHost, AgentHost]]:
    async with AgentHost(f"{prefix}-0") as first, AgentHost(f"{prefix}-1") as second:
        yield first, second


def _the_game() -> ModuleType:
    spec = importlib.util.spec_from_file_location("two_thirds_game", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def _wait_busy(host: AgentHost, count: int) -> None:
    # The host's counter is in another process: polled, as nothing here can signal it.
    while (await host.stats())["agents_busy"] < count:  # noqa: ASYNC110
        await anyio.sleep(0.05)


async def _idle(host: AgentHost) -> bool:
    stats = await host.stats()
    return stats["agents_busy"] == 0 and stats["group_calls_running"] == 0


async def test_the_two_thirds_game_on_hosts_gives_the_results_of_one_process(
    ray_cluster: Any,
) -> None:
    game = _the_game()
    try:
        with anyio.fail_after(300):
            alone = await game.simulate(60, 3)
            hosted = await game.simulate_on_hosts(60, 3, 2)
    finally:
        gc.unfreeze()  # the game freezes what this process holds: later tests need it back
    assert hosted["results"] == alone["results"]
    assert hosted["memory_of_last_player"] == alone["memory_of_last_player"] == 12
    assert hosted["hosts"] == 2 and len(hosted["hosts_peak_rss_mib"]) == 2
    # The players do not all guess alike: the averages and winners say something.
    assert [r["winners"] for r in alone["results"]] != [60, 60, 60]


async def test_a_group_fanout_and_broadcast_are_one_call_per_host_in_agent_order(
    ray_cluster: Any,
) -> None:
    names = [["a0", "a1", "a2"], ["b0", "b1"]]
    local = [agent for part in names for agent in make_echoes(part)]
    with anyio.fail_after(120):
        async with two_hosts("h-grp") as hosts:
            groups = [
                await h.create_group(make_echoes, names=n)
                for h, n in zip(hosts, names, strict=True)
            ]
            assert [len(g) for g in groups] == [3, 2] and isinstance(groups[0], RemoteGroup)
            news = Msg("moderator", "news", "user")
            await broadcast_groups(groups, news)
            async with MsgHub(local, enable_auto_broadcast=False) as hub:
                await hub.broadcast(news)
            question = Msg("moderator", "q", "user")
            replies = await fanout_groups(groups, question, max_concurrency=1)
            expected = await fanout_pipeline(local, question)
            assert [r.get_text_content() for r in replies] == [
                r.get_text_content() for r in expected
            ]
            assert replies[0].get_text_content() == "a0: q (heard 1)"
            kwargs = await fanout_groups(groups, question, metadata="kwargs", style="short")
            assert kwargs == [{"style": "short"}] * 5
            metadata = await groups[1].fanout_metadata(question)
            assert metadata == [expected[3].metadata] * 2 == [{}, {}]
            # One Ray call per host for each fanout and broadcast, whatever the group's size.
            calls = [await host.stats() for host in hosts]
            assert [(c["group_replies"], c["group_observes"]) for c in calls] == [(2, 1), (3, 1)]
            # Single agents of a group are reached through proxies, made on demand.
            (b1,) = await groups[1].agents(1)
            assert isinstance(b1, RemoteAgent) and b1.name == "b1"
            assert (await b1(question)).get_text_content() == "b1: q (heard 1)"


async def test_an_agent_failing_in_a_group_fails_the_fanout_naming_it_and_stops_the_rest(
    ray_cluster: Any,
) -> None:
    with anyio.fail_after(120):
        async with two_hosts("h-fail") as (sleepy, failing):
            waiting = await sleepy.create_group(make_echoes, names=["s0", "s1"], slow=True)
            group = await failing.create_group(make_echoes, names=["f0", "f1", "f2"])
            question = Msg("moderator", "q", "user")
            with pytest.raises(ValueError, match="f1 was asked to fail") as caught:
                await fanout_groups([waiting, group], question, fail_if="f1")
            notes = " ".join(getattr(caught.value, "__notes__", []))
            assert "agent 'f1'" in notes and "number 1" in notes and "'h-fail-1'" in notes
            # The sleepers on the other host were cancelled there, not left running.
            assert await _idle(sleepy) and await _idle(failing)
            with pytest.raises(ValueError, match="f2 was asked to fail"):
                await group.fanout(question, fail_if="f2")


async def test_cancelling_the_moderator_cancels_the_group_calls_on_the_hosts(
    ray_cluster: Any,
) -> None:
    with anyio.fail_after(120):
        async with two_hosts("h-cancel") as hosts:
            groups = [
                await host.create_group(make_echoes, names=[f"{h}{i}" for i in range(4)], slow=True)
                for h, host in zip("xy", hosts, strict=True)
            ]
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(fanout_groups, groups, Msg("moderator", "q", "user"))
                for host in hosts:
                    await _wait_busy(host, 4)
                task_group.cancel_scope.cancel()
            # Once the cancellation has propagated, nothing of the fanout runs on the hosts.
            assert [await _idle(host) for host in hosts] == [True, True]
            await broadcast_groups(groups, Msg("moderator", "still here", "user"))


async def test_group_calls_refuse_bad_input(ray_cluster: Any) -> None:
    question = Msg("moderator", "q", "user")
    with anyio.fail_after(120):
        async with AgentHost("h-bad") as host:
            group = await host.create_group(make_echoes, names=["e0"])
            with pytest.raises(ValueError, match="max_concurrency"):
                await group.fanout(question, max_concurrency=0)
            with pytest.raises(TypeError, match="cannot be sent"):
                await group.fanout(question, lock=threading.Lock())
            with pytest.raises(TypeError, match="sequence of agents"):
                await host.create_group(make_echo, name="one")  # one agent, not a sequence
            with pytest.raises(TypeError, match="must return agents"):
                await host.create_group(make_not_agents, count=2)
            assert (await host.stats())["groups"] == 1
        with pytest.raises(AgentHostDiedError, match=rf"h-bad.*group {group.id}"):
            await group.fanout(question)


async def test_a_cancel_that_reaches_the_host_before_its_group_call_ends_the_call_at_once() -> None:
    # Ray may start an actor's calls out of order: the cancel is kept for the call. No Ray
    # here: the host's side driven as the caller drives it.
    host = HostActor("h-early")
    group_id, size = host.create_group(make_echoes, {"names": ["s0", "s1"], "slow": True})
    assert size == 2
    host.cancel("call-1")
    with anyio.fail_after(30):
        assert await host.group_reply(group_id, "call-1", None, {}, ("reply", None), 10) is None
        assert await host.group_observe(group_id, "call-2", None, 10)
    stats = host.stats()
    assert (stats["agents_busy"], stats["group_calls_running"], stats["group_replies"]) == (0, 0, 1)


async def test_a_group_costs_the_caller_nothing_per_agent(ray_cluster: Any) -> None:
    names = [f"m{index}" for index in range(20_000)]
    with anyio.fail_after(120):
        async with AgentHost("h-mem") as host:
            await host.create_group(make_echoes, names=names[:10])  # warm the call path
            gc.collect()
            tracemalloc.start()
            try:
                group = await host.create_group(make_echoes, names=names)
                gc.collect()
                held = tracemalloc.get_traced_memory()[0]
            finally:
                tracemalloc.stop()
            assert len(group) == 20_000
    # A proxy per agent would hold about 18 MB here (890 bytes each); the names sent to build
    # them are gone once the call returned.
    assert held < 1_000_000


async def test_a_group_broadcast_hands_every_agent_one_shared_snapshot_as_a_hub_does() -> None:
    host = HostActor("h-share")
    group_id, _ = host.create_group(make_keepers, {"count": 3})
    news = Msg("moderator", "news", "user")
    with anyio.fail_after(30):
        assert await host.group_observe(group_id, "c1", news.to_dict(), 2)
        assert await host.group_observe(group_id, "c2", [news.to_dict()], 2)
    kept = [agent.kept for agent in host._groups[group_id]]
    # One object per delivery, held by all three (not a copy each), as MsgHub delivers.
    for delivery in (0, 1):
        assert len({id(one[delivery]) for one in kept}) == 1 and is_shared(kept[0][delivery])
