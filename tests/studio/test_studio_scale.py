"""The studio with thousands of agents: counts by state and totals instead of rows, agents
paged and searched on the server, a hub shown as a member count, a live feed whose events
are bounded per tick however many agents reply, and a small record per agent."""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import httpx
import pytest

from agentscope_rt import _intercept
from agentscope_rt.agent import AgentBase, ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import ChatUsage, ScriptedChatModel
from agentscope_rt.model._testing import reply
from agentscope_rt.pipeline import MsgHub
from agentscope_rt.studio import Studio, serve
from agentscope_rt.studio._agents import MAX_AGENTS_PAGE
from agentscope_rt.studio._observe import DETAIL_PER_TICK, HUB_NAMES_SHOWN, AgentObserver
from agentscope_rt.studio._state import EventBus, StudioState


class Echo(AgentBase):
    """An agent that prints one message per reply, waiting first on *gate* when given."""

    def __init__(self, name: str, gate: anyio.Event | None = None) -> None:
        super().__init__()
        self.name = name
        self.gate = gate
        self.set_console_output_enabled(False)

    async def reply(self, *args: Any, **kwargs: Any) -> Msg:
        if self.gate is not None:
            await self.gate.wait()
        said = Msg(self.name, f"{self.name} here", "assistant")
        await self.print(said)
        return said

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        return None


def echoes(count: int, prefix: str = "player") -> list[Echo]:
    return [Echo(f"{prefix}{n}") for n in range(count)]


async def get(client: httpx.AsyncClient, studio: Studio, path: str, **params: Any) -> Any:
    answer = await client.get(path, params={"token": studio.token, **params})
    assert answer.status_code == 200, answer.text
    return answer.json()


async def wait_for_tick(studio: Studio) -> None:
    """Until the studio's clock has ticked once more (the totals are then published)."""
    ticks = studio.observer.ticks
    with anyio.fail_after(30):
        while studio.observer.ticks == ticks:  # noqa: ASYNC110 (the clock task changes it)
            await anyio.sleep(0.01)


async def test_agents_are_paged_searched_and_filtered_on_the_server() -> None:
    players = echoes(2_000)
    async with serve() as studio, httpx.AsyncClient(base_url=studio.base_url) as client:
        studio.watch(*players)
        first = await get(client, studio, "/api/agents")
        assert first["total"] == 2_000 and first["offset"] == 0 and first["limit"] == 50
        assert [a["name"] for a in first["items"]] == [f"player{n}" for n in range(50)]
        assert first["items"][0]["state"] == "idle" and first["items"][0]["cls"] == "Echo"
        last = await get(client, studio, "/api/agents", offset=1_990, limit=MAX_AGENTS_PAGE)
        assert [a["name"] for a in last["items"]] == [f"player{n}" for n in range(1_990, 2_000)]
        # Search by name, case ignored; the total counts every match, the page holds some.
        found = await get(client, studio, "/api/agents", q="PLAYER19", limit=5)
        assert found["total"] == 111  # player19 and player190..player1999
        assert [a["name"] for a in found["items"]] == [
            "player19",
            *(f"player19{n}" for n in range(4)),
        ]
        await players[7]()
        await players[1_234]()
        await players[7]()  # twice: still one agent
        async with anyio.create_task_group() as tg:
            gate = players[42].gate = anyio.Event()
            tg.start_soon(players[42])
            with anyio.fail_after(30):
                while not players[42].is_replying:
                    await anyio.lowlevel.checkpoint()
            replying = await get(client, studio, "/api/agents", state="replying")
            assert [a["name"] for a in replying["items"]] == ["player42"]
            assert replying["totals"]["states"]["replying"] == 1
            gate.set()
        both = await get(client, studio, "/api/agents", q="player12", state="idle", limit=500)
        assert both["total"] == 111 and len(both["items"]) == 111
        assert (await get(client, studio, "/api/agents", state="interrupted"))["total"] == 0
        # What the route refuses, and the token it requires.
        refused = {
            "limit": MAX_AGENTS_PAGE + 1,
            "offset": -1,
            "state": "asleep",
            "q": "x" * 201,
        }
        for name, value in refused.items():
            answer = await client.get(
                "/api/agents", params={"token": studio.token, name: str(value)}
            )
            assert answer.status_code == 400 and name in answer.json()["error"], name
        assert (await client.get("/api/agents")).status_code == 403
        assert (await client.get("/api/agents", params={"token": "nope"})).status_code == 403


async def test_counts_by_state_and_totals_after_thousands_of_replies() -> None:
    players = echoes(2_000)
    stuck = [Echo(f"stuck{n}", anyio.Event()) for n in range(3)]
    usage = ChatUsage(input_tokens=100, output_tokens=7)
    thinker = ReActAgent(
        name="thinker",
        sys_prompt="Think.",
        model=ScriptedChatModel([reply("One.", usage=usage), reply("Two.", usage=usage)]),
        formatter=OpenAIChatFormatter(),
    )
    async with serve() as studio, httpx.AsyncClient(base_url=studio.base_url) as client:
        studio.watch(*players)
        for player in players[:1_500]:
            await player()
        await thinker()
        await thinker()
        async with anyio.create_task_group() as tg:
            for agent in stuck:
                tg.start_soon(agent)
            with anyio.fail_after(30):
                while not all(agent.is_replying for agent in stuck):
                    await anyio.lowlevel.checkpoint()
            assert studio.interrupt(stuck[0].id)
            await wait_for_tick(studio)
            totals = (await get(client, studio, "/api/state"))["totals"]
            assert totals["agents"] == 2_004
            assert totals["states"] == {
                "idle": 2_001,
                "replying": 2,
                "interrupted": 1,
                "waiting": 0,
            }
            assert totals["replies"] == 1_503  # the interrupted one has ended too
            # Printed messages are counted while details are watched: a burst of 1,500 in
            # one tick outran the budget, and the totals say that they are a sample.
            assert totals["exact"] is False and totals["sampled"] >= 1
            assert 1 <= totals["messages"] < 1_502
            assert totals["tokens"] == {
                "scripted": {"input_tokens": 200, "output_tokens": 14, "replies": 2}
            }
            for agent in stuck:
                agent.gate.set()  # type: ignore[union-attr]
        await wait_for_tick(studio)
        states = (await get(client, studio, "/api/agents", limit=1))["totals"]["states"]
        assert states == {"idle": 2_003, "replying": 0, "interrupted": 1, "waiting": 0}


async def _events(client: httpx.AsyncClient, studio: Studio) -> AsyncIterator[dict[str, Any]]:
    async with client.stream("GET", "/events", params={"token": studio.token}) as stream:
        async for line in stream.aiter_lines():
            if line.startswith("data: "):
                yield json.loads(line[6:])


async def test_a_burst_of_replies_reaches_the_page_as_a_bounded_number_of_events() -> None:
    players = echoes(5_000)
    received: list[dict[str, Any]] = []
    # No span trees: the printed messages are then the only detail events.
    async with serve(spans=False) as studio, httpx.AsyncClient(base_url=studio.base_url) as client:
        studio.watch(*players)
        feed = _events(client, studio)
        assert (await feed.__anext__())["type"] == "snapshot"
        ticks = studio.observer.ticks
        for player in players:
            await player()
        ticks_during = studio.observer.ticks - ticks + 1
        with anyio.fail_after(30):
            async for event in feed:
                received.append(event)
                if event.get("key") == "totals" and event["data"]["replies"] == 5_000:
                    break
        await feed.aclose()
        totals = received[-1]["data"]
        messages = [e for e in received if e.get("kind") == "msg"]
        # Each tick lets at most DETAIL_PER_TICK messages through; then the details are no
        # longer watched until the next tick (the totals say that they are a sample).
        assert DETAIL_PER_TICK <= len(messages) <= ticks_during * DETAIL_PER_TICK < 5_000
        assert totals["exact"] is False
        assert len(messages) <= totals["messages"] <= len(messages) + totals["sampled"]
        assert totals["replies"] == 5_000 and totals["states"]["idle"] == 5_000
        totals_events = [e for e in received if e.get("key") == "totals"]
        assert len(totals_events) <= studio.observer.ticks - ticks + 1


async def test_a_hub_of_thousands_is_shown_as_a_count_with_members_paged() -> None:
    players = echoes(5_000)
    async with serve() as studio, httpx.AsyncClient(base_url=studio.base_url) as client:
        async with MsgHub(players, name="game", enable_auto_broadcast=False) as hub:
            await anyio.lowlevel.checkpoint()
            hub.add(Echo("late"))
            await wait_for_tick(studio)
            state = await get(client, studio, "/api/state")
            [shown] = state["entities"]["hub"]
            assert shown["count"] == 5_001 and shown["event"] == "add"
            assert len(shown["members"]) == HUB_NAMES_SHOWN
            assert shown["members"][0]["name"] == "player0"
            # The members entered are known agents, each once.
            assert state["totals"]["agents"] == 5_001
            tail = await get(client, studio, "/api/hubs/game/members", offset=4_990)
            assert tail["total"] == 5_001 and tail["offset"] == 4_990
            assert [m["name"] for m in tail["items"]] == [
                *(f"player{n}" for n in range(4_990, 5_000)),
                "late",
            ]
        missing = await client.get("/api/hubs/nope/members", params={"token": studio.token})
        assert missing.status_code == 404 and "nope" in missing.json()["error"]
        assert (await client.get("/api/hubs/game/members")).status_code == 403


async def test_the_record_per_known_agent_is_small() -> None:
    players = echoes(20_000)
    async with serve() as studio:
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            studio.watch(*players)
            per_agent = (tracemalloc.get_traced_memory()[0] - before) / len(players)
        finally:
            tracemalloc.stop()
        assert len(studio.observer.agents) == 20_000
        assert per_agent <= 150, f"{per_agent:.0f} bytes per known agent"
        del players
        gc.collect()
        assert len(studio.observer.agents) == 0
        assert sum(studio.observer.agents.counts) == 0


@pytest.mark.parametrize("limit", [0, MAX_AGENTS_PAGE + 1])
async def test_a_hub_members_page_is_capped(limit: int) -> None:
    async with serve() as studio, httpx.AsyncClient(base_url=studio.base_url) as client:
        async with MsgHub(echoes(3), name="small"):
            answer = await client.get(
                "/api/hubs/small/members", params={"token": studio.token, "limit": str(limit)}
            )
        assert answer.status_code == 400 and "limit" in answer.json()["error"]


async def test_a_streamed_message_once_shown_is_shown_to_its_end_beyond_the_budget() -> None:
    bus = EventBus(StudioState())
    observer = AgentObserver(bus)
    ada = Echo("Ada")
    shown, cut = Msg("Ada", "Bi", "assistant"), Msg("Ada", "Ca", "assistant")
    observer.budget = 1
    observer.printed(ada, shown, last=False)  # the budget's one event
    for text in ("Bicy", "Bicycles"):
        shown.content = text
        observer.printed(ada, shown, last=text == "Bicycles")
    observer.printed(ada, cut, last=False)
    cut.content = "Cars"
    observer.printed(ada, cut, last=True)
    bus.close()
    await bus.run()
    assert bus.state.entities["msg"][shown.id]["content"] == "Bicycles"
    assert bus.state.entities["msg"][shown.id]["last"] is True
    assert cut.id not in bus.state.entities["msg"]
    assert observer.messages == 2 and observer.sampled == 3


def _studio_kinds() -> set[str]:
    """The route kinds the studio intercepts now."""
    return {
        kind
        for kind, items in _intercept.installed().items()
        if any("studio" in repr(item) for item in items)
    }


async def test_past_the_budget_a_reply_passes_one_interception_until_the_next_tick() -> None:
    players = echoes(2 * DETAIL_PER_TICK)
    async with serve(spans=False) as studio:
        await wait_for_tick(studio)
        assert _studio_kinds() == {"reply", "print", "reasoning", "acting"}
        for player in players:  # no checkpoint in between: one tick's budget
            await player()
        assert studio.observer.budget == 0 and studio.observer.sampled == 1
        assert _studio_kinds() == {"reply"}
        assert studio.observer.replies == 2 * DETAIL_PER_TICK
        assert studio.observer.messages == DETAIL_PER_TICK + 1
        await wait_for_tick(studio)
        assert _studio_kinds() == {"reply", "print", "reasoning", "acting"}
    assert not _studio_kinds()


async def test_an_agent_interrupted_by_the_program_is_shown_interrupted_by_the_next_tick() -> None:
    waiting = Echo("waiting", anyio.Event())
    async with serve(spans=False) as studio, anyio.create_task_group() as tg:
        tg.start_soon(waiting)
        with anyio.fail_after(30):
            while not waiting.is_replying:
                await anyio.lowlevel.checkpoint()
        waiting.interrupt()  # by the program, not from the page
        with anyio.fail_after(30):
            while waiting.is_replying:
                await anyio.lowlevel.checkpoint()
        await wait_for_tick(studio)
        assert waiting.generate_reason == "interrupted"
        assert studio.observer.totals()["states"]["interrupted"] == 1
