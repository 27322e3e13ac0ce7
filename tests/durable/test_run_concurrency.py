"""Durable runs where steps overlap: parallel tool calls, an interrupt part-way through a
streamed answer or a batch of tools, agents calling agents, observers that call models, and
hooks around it all."""

from __future__ import annotations

import random
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.durable import SQLiteRunStore, durable_run
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock, ToolUseBlock
from agentscope_rt.model import ChatModelBase, ChatResponse, FunctionChatModel
from agentscope_rt.pipeline import MsgHub, fanout_pipeline
from agentscope_rt.tool import Toolkit, ToolResponse

from ._world import World, transcript

pytestmark = pytest.mark.anyio


class Crash(Exception):
    """Stands for the death of the process."""


class Lab:
    """An agent whose first answer calls two tools at once, ``fast`` and ``slow``; ``slow``
    waits for a gate when one is set."""

    def __init__(self) -> None:
        self.paid = 0
        self.ran: list[str] = []
        self.slow_gate: anyio.Event | None = None
        self.slow_entered = anyio.Event()
        self.fast_done = anyio.Event()

    def agent(self) -> ReActAgent:
        async def answer(messages: list[dict[str, Any]], tools: Any) -> ChatResponse:
            self.paid += 1
            if messages[-1].get("role") != "tool":
                size = len(messages)
                return ChatResponse(
                    [
                        ToolUseBlock(id=f"fast-{size}", name="fast", input={}),
                        ToolUseBlock(id=f"slow-{size}", name="slow", input={}),
                    ]
                )
            return ChatResponse([TextBlock(f"done after {len(messages)}")])

        async def fast() -> ToolResponse:
            """Finish at once."""
            self.ran.append("fast")
            self.fast_done.set()
            return ToolResponse(content=[TextBlock("fast result")])

        async def slow() -> ToolResponse:
            """Finish when allowed."""
            self.slow_entered.set()
            if self.slow_gate is not None:
                await self.slow_gate.wait()
            self.ran.append("slow")
            return ToolResponse(content=[TextBlock("slow result")])

        toolkit = Toolkit()
        toolkit.register_tool_function(fast)
        toolkit.register_tool_function(slow)
        agent = ReActAgent(
            name="Lab",
            sys_prompt="Work.",
            model=FunctionChatModel(answer),
            formatter=OpenAIChatFormatter(),
            toolkit=toolkit,
            parallel_tool_calls=True,
        )
        agent.set_console_output_enabled(False)
        return agent


async def run_lab(lab: Lab, db: Path, *, interrupt: bool, crash: bool) -> dict[str, Any]:
    agent = lab.agent()
    async with durable_run("lab", db):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent, Msg("user", "Go.", "user"))
            if interrupt:
                await lab.slow_entered.wait()
                await lab.fast_done.wait()
                await anyio.sleep(0.01)  # let the fast tool's result be recorded
                agent.interrupt()
        lab.slow_gate = None
        await agent(Msg("user", "Again.", "user"))
        if crash:
            raise Crash
    return await transcript(agent)


async def test_parallel_tools_interrupted_part_way_replay_to_the_same_memory(
    tmp_path: Path,
) -> None:
    def gated() -> Lab:
        lab = Lab()
        lab.slow_gate = anyio.Event()
        return lab

    reference = await run_lab(gated(), tmp_path / "reference.db", interrupt=True, crash=False)
    first = gated()
    with pytest.raises(Crash):
        await run_lab(first, tmp_path / "runs.db", interrupt=True, crash=True)
    assert sorted(first.ran) == ["fast", "fast", "slow"]
    resumed = Lab()
    assert await run_lab(resumed, tmp_path / "runs.db", interrupt=False, crash=False) == reference
    assert resumed.paid == 0 and resumed.ran == []
    assert "fast result" in str(reference) and "interrupted" in str(reference)


async def test_parallel_tools_resume_after_a_crash_between_them(tmp_path: Path) -> None:
    lab = Lab()
    lab.slow_gate = anyio.Event()  # never opened: the run ends while slow runs
    agent = lab.agent()
    with anyio.CancelScope() as scope:
        async with durable_run("lab", tmp_path / "runs.db"), anyio.create_task_group() as tg:
            tg.start_soon(agent, Msg("user", "Go.", "user"))
            await lab.fast_done.wait()
            await lab.slow_entered.wait()
            await anyio.sleep(0.01)
            scope.cancel()
    again = Lab()
    agent = again.agent()
    async with durable_run("lab", tmp_path / "runs.db"):
        answer = await agent(Msg("user", "Go.", "user"))
    assert again.ran == []  # fast replayed, slow cut off: neither runs again
    assert answer.get_text_content() == "done after 5"
    history = str(await transcript(agent))
    assert "fast result" in history and "cut off by a restart" in history


class GatedStream(ChatModelBase):
    """Streams its answer in two chunks; the second waits for a gate when one is set."""

    def __init__(self) -> None:
        super().__init__("gated", True)
        self.gate: anyio.Event | None = None
        self.first_sent = anyio.Event()
        self.calls = 0

    async def __call__(
        self, messages: list[dict[str, Any]], tools: Any = None, **kwargs: Any
    ) -> AsyncGenerator[ChatResponse, None]:
        self.calls += 1
        size = len(messages)

        async def chunks() -> AsyncGenerator[ChatResponse, None]:
            yield ChatResponse([TextBlock(f"Half of {size}")], is_last=False, stream=True)
            self.first_sent.set()
            if self.gate is not None:
                await self.gate.wait()
            yield ChatResponse([TextBlock(f"Half of {size}, and the rest")], stream=True)

        return chunks()


async def test_an_answer_interrupted_mid_stream_is_replayed_part_way(tmp_path: Path) -> None:
    async def program(model: GatedStream, db: Path, interrupt: bool, crash: bool) -> Any:
        agent = ReActAgent(
            name="Streamer", sys_prompt="Talk.", model=model, formatter=OpenAIChatFormatter()
        )
        agent.set_console_output_enabled(False)
        async with durable_run("stream", db):
            async with anyio.create_task_group() as tg:
                tg.start_soon(agent, Msg("user", "Talk.", "user"))
                if interrupt:
                    await model.first_sent.wait()
                    agent.interrupt()
            model.gate = None
            await agent(Msg("user", "Go on.", "user"))
            if crash:
                raise Crash
        return await transcript(agent)

    def gated() -> GatedStream:
        model = GatedStream()
        model.gate = anyio.Event()
        return model

    reference = await program(gated(), tmp_path / "reference.db", True, False)
    assert "Half of 2" in str(reference)
    with pytest.raises(Crash):
        await program(gated(), tmp_path / "runs.db", True, True)
    replayed = GatedStream()
    assert await program(replayed, tmp_path / "runs.db", False, False) == reference
    assert replayed.calls == 0
    store = SQLiteRunStore(tmp_path / "runs.db")
    statuses = {r.key: r.status for r in await store.load_steps("", "stream")}
    await store.aclose()
    assert statuses["Streamer#1/chat#1"] == "partial"
    assert statuses["Streamer#1"] == "interrupted"


async def test_agents_calling_agents_and_observers_calling_models(tmp_path: Path) -> None:
    """A boss calls a helper inside its reply (a nested call, keyed by the helper), and an
    observer summarises what it hears with a model call (keyed under the observed call)."""

    class Summariser(ReActAgent):
        async def observe(self, msg: Msg | list[Msg] | None) -> None:
            await super().observe(msg)
            assert isinstance(msg, Msg)
            heard = msg.get_text_content()
            summary = await self.model([{"role": "user", "content": f"Sum up: {heard}"}])
            assert isinstance(summary, ChatResponse)
            await self.memory.add(Msg(self.name, summary.get_text(), "assistant"))

    async def program(world: World, crash: bool) -> Any:
        helper = world.agent("Helper")

        class Boss(ReActAgent):
            async def reply(self, msg: Any = None, **kwargs: Any) -> Msg:
                advice = await helper(msg)
                return await super().reply(advice, **kwargs)

        boss = Boss(
            name="Boss",
            sys_prompt="Decide.",
            model=world.model("Boss"),
            formatter=OpenAIChatFormatter(),
            toolkit=world.toolkit(),
        )
        listener = Summariser(
            name="Listener",
            sys_prompt="Listen.",
            model=world.model("Listener"),
            formatter=OpenAIChatFormatter(),
        )
        for agent in (boss, listener):
            agent.set_console_output_enabled(False)
        async with durable_run("nested", tmp_path / "runs.db") as run:
            async with MsgHub([boss, listener]):
                await boss(Msg("user", "What now?", "user"))
                if crash:
                    raise Crash
                await boss(Msg("user", "And then?", "user"))
            keys = set(run._records)
        return await transcript(boss, helper, listener), keys

    world = World()
    with pytest.raises(Crash):
        await program(world, crash=True)
    resumed_world = World()
    resumed, keys = await program(resumed_world, crash=False)
    assert {"Helper#1", "Boss#1", "Boss#1/observe:Listener#1/chat#1"} <= keys
    # The first round replayed, the second ran: 2 helper + 2 boss + 1 listener model calls.
    assert sorted(resumed_world.paid) == ["Boss", "Boss", "Helper", "Helper", "Listener"]
    assert len(world.paid) + len(resumed_world.paid) == 10
    assert resumed["Listener"][-1]["role"] == "assistant"


async def test_hooks_see_replayed_calls_as_live_ones(tmp_path: Path) -> None:
    seen: list[str] = []

    async def program(world: World) -> None:
        alice = world.agent("Alice")
        alice.register_instance_hook(
            "post_reply",
            "seen",
            lambda agent, kwargs, output: seen.append(output.get_text_content()),
        )
        async with durable_run("hooks", tmp_path / "runs.db"):
            await alice(Msg("user", "Hi.", "user"))

    await program(World())
    replay = World()
    await program(replay)
    assert replay.paid == [] and seen == ["Alice says 4", "Alice says 4"]


async def test_a_model_that_repeats_a_tool_call_id_gets_each_call_run(tmp_path: Path) -> None:
    """Local models often number their tool calls afresh in every answer ("call_0" each
    time): each call is a step of its own, live and on resume."""
    ran: list[str] = []

    async def answer(messages: list[dict[str, Any]], tools: Any) -> ChatResponse:
        done = sum(1 for message in messages if message.get("role") == "tool")
        if done < 3:
            city = ("Paris", "Rome", "Oslo")[done]
            return ChatResponse([ToolUseBlock(id="call_0", name="look", input={"city": city})])
        return ChatResponse([TextBlock("seen all three")])

    async def look(city: str) -> ToolResponse:
        """Look at a city.

        Args:
            city: which
        """
        ran.append(city)
        return ToolResponse(content=[TextBlock(f"{city} looks fine")])

    async def program(crash: bool) -> Any:
        toolkit = Toolkit()
        toolkit.register_tool_function(look)
        agent = ReActAgent(
            name="Looker",
            sys_prompt="Look.",
            model=FunctionChatModel(answer),
            formatter=OpenAIChatFormatter(),
            toolkit=toolkit,
        )
        agent.set_console_output_enabled(False)
        async with durable_run("repeat", tmp_path / "runs.db"):
            reply = await agent(Msg("user", "Look around.", "user"))
            if crash:
                raise Crash
        return reply.get_text_content(), await transcript(agent)

    with pytest.raises(Crash):
        await program(crash=True)
    assert ran == ["Paris", "Rome", "Oslo"]
    ran.clear()
    text, resumed = await program(crash=False)
    assert ran == [] and text == "seen all three"
    results = [str(entry["content"]) for entry in resumed["Looker"] if entry["role"] == "system"]
    assert [city for city in ("Paris", "Rome", "Oslo") if any(city in r for r in results)] == [
        "Paris",
        "Rome",
        "Oslo",
    ]


async def test_a_fanout_inside_a_hub_replays_every_delivery_where_it_landed(
    tmp_path: Path,
) -> None:
    """Members replying at once in a hub hear each other part-way through their own replies;
    a resumed run puts every delivery back at the same point of each listener's work."""

    async def program(world: World, db: Path, crash: bool) -> dict[str, Any]:
        agents = [world.agent(name) for name in ("Alice", "Bob", "Carol", "Dave")]
        async with durable_run("fan-hub", db), MsgHub(agents, Msg("host", "Go.", "user")):
            await fanout_pipeline(agents, Msg("host", "Everyone, at once.", "user"))
            if crash:
                raise Crash
            await fanout_pipeline(agents, Msg("host", "Once more.", "user"))
        return await transcript(*agents)

    def jittery() -> World:
        return World(latency=lambda _: random.random() / 200)

    with pytest.raises(Crash):
        await program(jittery(), tmp_path / "runs.db", crash=True)
    resumed_world = jittery()
    resumed = await program(resumed_world, tmp_path / "runs.db", crash=False)
    assert len(resumed_world.paid) == 8  # the second fanout only
    replayed_world = jittery()
    replayed = await program(replayed_world, tmp_path / "runs.db", crash=False)
    assert replayed_world.paid == []
    # Every model call read what it read live (the fingerprints agree, or the run would
    # have stopped); what arrived after an agent's last reply may land in another order, as
    # in any two runs of a fanout.
    assert unordered(replayed) == unordered(resumed)
    assert str(resumed).count("says") >= 8


def unordered(memories: dict[str, list[dict[str, Any]]]) -> dict[str, list[str]]:
    return {name: sorted(map(repr, entries)) for name, entries in memories.items()}
