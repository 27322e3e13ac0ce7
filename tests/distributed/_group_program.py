"""The program the durable-run tests of groups run: noters (``_agents.make_noter``) told an
announcement and asked a question each round, in one process (a hub and a fanout) or as
groups on agent hosts (``broadcast_groups`` and ``fanout_groups``), in the durable run "r"."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from agentscope_rt.distributed import AgentHost, RemoteGroup, broadcast_groups, fanout_groups
from agentscope_rt.durable import DurableRun, SQLiteRunStore, durable_run
from agentscope_rt.message import Msg
from agentscope_rt.pipeline import MsgHub, fanout_pipeline

from ._agents import gate, make_noter, make_noters
from ._durable_program import transcript, wait_for

# Host h holds the noters of NAMES[h].
NAMES = [["A", "B"], ["C"]]
ROUNDS = 2


class Stop(Exception):
    """Raised by the program after a round, to stop it part-way."""


def _messages(round_: int) -> tuple[Msg, Msg]:
    return Msg("host", f"round {round_} begins", "user"), Msg("host", f"round {round_}?", "user")


async def _rounds(
    tell: Callable[[Msg], Awaitable[None]],
    ask: Callable[[Msg], Awaitable[list[Msg]]],
    stop_after: int | None,
    before_last: Callable[[], Awaitable[None]] | None = None,
) -> list[str]:
    """ROUNDS rounds of an announcement and a question; the answers' texts. *stop_after*:
    raise :class:`Stop` after that many rounds; *before_last*: awaited before the last
    round's question (and kept running beside it)."""
    texts: list[str] = []
    for round_ in range(ROUNDS):
        announcement, question = _messages(round_)
        await tell(announcement)
        if before_last is not None and round_ == ROUNDS - 1:
            async with anyio.create_task_group() as tg:
                tg.start_soon(before_last)
                texts += [reply.get_text_content() or "" for reply in await ask(question)]
        else:
            texts += [reply.get_text_content() or "" for reply in await ask(question)]
        if stop_after is not None and round_ + 1 == stop_after:
            raise Stop(f"stopped after round {stop_after}")
    return texts


async def in_one_process(folder: str, db: Path) -> tuple[list[str], list[list[Any]], DurableRun]:
    """The noters in this process: the answers, the transcripts and the run."""
    agents = [make_noter(name, folder) for part in NAMES for name in part]
    store = SQLiteRunStore(db)
    try:
        hub = MsgHub(agents, enable_auto_broadcast=False)
        async with durable_run("r", store) as run, hub:

            async def ask(question: Msg) -> list[Msg]:
                return await fanout_pipeline(agents, question)

            texts = await _rounds(hub.broadcast, ask, None)
    finally:
        await store.aclose()
    return texts, [transcript(agent.state_dict()) for agent in agents], run


async def on_hosts(
    ray: Any,
    folder: str,
    db: Path,
    *,
    stop_after: int | None = None,
    killed: list[float] | None = None,
) -> tuple[list[str], list[list[Any]], DurableRun]:
    """The noters as groups on two hosts: the answers, the transcripts and the run. With
    *killed*, the tools of the first host's agents wait in the last round and that host is
    killed meanwhile (when, in *killed*)."""
    store = SQLiteRunStore(db)
    hosts = [AgentHost(f"h-group-{h}") for h in range(len(NAMES))]
    try:
        groups: list[RemoteGroup] = []
        for host, names in zip(hosts, NAMES, strict=True):
            await host.start()
            groups.append(await host.create_group(make_noters, names=names, folder=folder))

        async def tell(announcement: Msg) -> None:
            if killed is not None and announcement.content == _messages(ROUNDS - 1)[0].content:
                # The last round: the tools of the first host's agents wait (and the gates
                # stay: they must not end).
                for name in NAMES[0]:
                    await anyio.Path(gate(folder, name)).touch()
            await broadcast_groups(groups, announcement)

        async def ask(question: Msg) -> list[Msg]:
            return await fanout_groups(groups, question)

        async def kill() -> None:
            await wait_for(folder, "tool-waits", len(NAMES[0]))
            assert killed is not None
            killed.append(time.time())
            await anyio.to_thread.run_sync(ray.kill, hosts[0].actor)

        async with durable_run("r", store) as run:
            texts = await _rounds(tell, ask, stop_after, None if killed is None else kill)
        members = [agent for group in groups for agent in await group.agents()]
        states = [await anyio.to_thread.run_sync(agent.state_dict) for agent in members]
    finally:
        for host in hosts:
            await host.close()
        await store.aclose()
    return texts, [transcript(state) for state in states], run
