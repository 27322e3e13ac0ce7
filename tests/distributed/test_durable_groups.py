"""Groups of agents on agent hosts in durable runs: a group's fanout and broadcast record the
keys one process records for the same calls, a run stopped part-way resumes on new hosts
replaying what was recorded, and a host that dies under a group call is replaced, the group
built again there from the run's records, and the call made again under the same keys.
Each test starts hosts (processes) on the session's local Ray cluster."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.distributed import AgentHost, AgentHostDiedError
from agentscope_rt.durable import DurableRunError, SQLiteRunStore, durable_run
from agentscope_rt.message import Msg

from ._agents import make_echoes, make_noters, read_log
from ._group_program import Stop, in_one_process, on_hosts
from .test_durable_hosts import _check_the_rule


async def _records(db: Path) -> list[tuple[str, str, str, str]]:
    store = SQLiteRunStore(db)
    try:
        records = await store.load_steps("", "r")
    finally:
        await store.aclose()
    return sorted((r.key, r.kind, r.status, r.fingerprint) for r in records)


def _chats(folder: Path) -> int:
    return sum(entry["what"] == "chat" for entry in read_log(str(folder)))


async def _folders(tmp_path: Path, *names: str) -> list[Path]:
    for name in names:
        await anyio.Path(tmp_path / name).mkdir()
    return [tmp_path / name for name in names]


async def test_a_group_fanout_and_broadcast_record_what_one_process_records(
    tmp_path: Path, ray_cluster: Any
) -> None:
    alone, hosted = await _folders(tmp_path, "alone", "hosted")
    with anyio.fail_after(300):
        texts, transcripts, run = await in_one_process(str(alone), tmp_path / "alone.db")
        texts_h, transcripts_h, run_h = await on_hosts(ray_cluster, str(hosted), tmp_path / "h.db")
    assert texts_h == texts and transcripts_h == transcripts
    # The same keys, kinds, statuses and inputs: the record does not say where agents lived.
    records = await _records(tmp_path / "alone.db")
    assert await _records(tmp_path / "h.db") == records
    keys = {key for key, *_ in records}
    assert {"A#1", "A#1/chat#1", "A#1/tool:A-3#1", "C#2/chat#2"} <= keys
    assert run_h.recorded == run.recorded and run_h.replayed == 0
    # Opened again on new hosts, the run replays whole: no model call, the same end.
    chats = _chats(hosted)
    with anyio.fail_after(300):
        again = await on_hosts(ray_cluster, str(hosted), tmp_path / "h.db")
    assert again[:2] == (texts, transcripts) and _chats(hosted) == chats
    assert again[2].recorded == 0 and again[2].replayed == run.recorded


async def test_a_run_of_groups_stopped_part_way_resumes_replaying_the_first_round(
    tmp_path: Path, ray_cluster: Any
) -> None:
    alone, hosted = await _folders(tmp_path, "alone", "hosted")
    db = tmp_path / "h.db"
    with anyio.fail_after(300):
        texts, transcripts, clean = await in_one_process(str(alone), tmp_path / "alone.db")
        with pytest.raises(Stop):
            await on_hosts(ray_cluster, str(hosted), db, stop_after=1)
        first_round = _chats(hosted)
        resumed = await on_hosts(ray_cluster, str(hosted), db)
    assert first_round == _chats(alone) // 2 > 0
    # Round 1 replayed without a model call; round 2 ran live: as many calls as one run.
    assert _chats(hosted) == _chats(alone)
    assert resumed[:2] == (texts, transcripts)
    run = resumed[2]
    assert run.resumed and run.replayed > 0 and run.replayed + run.recorded == clean.recorded
    assert await _records(db) == await _records(tmp_path / "alone.db")


async def test_a_host_killed_mid_group_call_is_replaced_and_the_group_call_made_again(
    tmp_path: Path, ray_cluster: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "agentscope_rt.distributed")
    alone, hosted = await _folders(tmp_path, "alone", "hosted")
    killed: list[float] = []
    with anyio.fail_after(300):
        _, transcripts, clean_run = await in_one_process(str(alone), tmp_path / "alone.db")
        _, transcripts_h, run = await on_hosts(
            ray_cluster, str(hosted), tmp_path / "h.db", killed=killed
        )
    clean = {"transcripts": transcripts, "run": clean_run, "log": read_log(str(alone))}
    after = {"transcripts": transcripts_h, "run": run, "log": read_log(str(hosted))}
    # A's and B's tools, running when their host died, are cut off and not run again; every
    # model call recorded before (round 1's, rebuilding the group; A's and B's first of round
    # 2) is replayed, not made again; C, on the other host, answered once.
    _check_the_rule(clean, {**after, "killed": killed}, 2)
    lines = [r.getMessage() for r in caplog.records if r.name == "agentscope_rt.distributed"]
    assert sum("died; a new one answers" in line for line in lines) == 1
    assert sum("built again on the new agent host 'h-group-0'" in line for line in lines) == 1


async def test_a_group_call_that_kills_its_host_each_time_gives_up_after_three_hosts(
    tmp_path: Path, ray_cluster: Any
) -> None:
    await anyio.Path(tmp_path / "crash-A").touch()
    store = SQLiteRunStore(tmp_path / "r.db")
    try:
        with anyio.fail_after(300):
            async with AgentHost("h-group-crash") as host:
                group = await host.create_group(make_noters, names=["A"], folder=str(tmp_path))
                with pytest.raises(AgentHostDiedError, match=r"died under this call .* 3 times"):
                    async with durable_run("r", store):
                        await group.fanout(Msg("user", "go", "user"))
    finally:
        await store.aclose()
    assert [e["what"] for e in read_log(str(tmp_path))] == ["chat"] * 3


async def _kill_when_busy(ray: Any, host: AgentHost, count: int) -> None:
    # The host's counter is in another process: polled, as nothing here can signal it.
    while (await host.stats())["agents_busy"] < count:  # noqa: ASYNC110
        await anyio.sleep(0.05)
    await anyio.to_thread.run_sync(ray.kill, host.actor)


async def test_a_host_killed_mid_group_call_outside_a_run_raises_host_died(
    ray_cluster: Any,
) -> None:
    with anyio.fail_after(120):
        async with AgentHost("h-group-dies") as host:
            group = await host.create_group(make_echoes, names=["s0", "s1"], slow=True)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_kill_when_busy, ray_cluster, host, 2)
                with pytest.raises(AgentHostDiedError, match=rf"h-group-dies.*group {group.id}"):
                    await group.fanout(Msg("user", "q", "user"))
            assert host.dead


async def test_a_groups_agents_take_part_in_a_run_only_through_their_group(
    tmp_path: Path, ray_cluster: Any
) -> None:
    question = Msg("user", "q", "user")
    with anyio.fail_after(120):
        async with AgentHost("h-group-members") as host:
            group = await host.create_group(make_echoes, names=["e0", "e1"])
            (e1,) = await group.agents(1)
            async with durable_run("r", tmp_path / "r.db"):
                with pytest.raises(DurableRunError, match="called through their group"):
                    await e1(question)
                replies = await group.fanout(question)
            assert [r.get_text_content() for r in replies] == ["e0: q (heard 0)", "e1: q (heard 0)"]
            assert (await e1(question)).get_text_content() == "e1: q (heard 0)"
