"""Durable runs: a multi-agent program resumed after a crash replays what it recorded (nothing
paid or run twice), rebuilds its agents to the same states, and stops on divergence."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentscope_rt import _intercept
from agentscope_rt.agent import CUT_OFF_TEXT, UserAgent, UserInputBase, UserInputData
from agentscope_rt.durable import (
    DurableRunError,
    RunDivergedError,
    SQLiteRunStore,
    StepRecord,
    current_run,
    durable_run,
    step,
)
from agentscope_rt.message import Msg
from agentscope_rt.pipeline import MsgHub, fanout_pipeline, sequential_pipeline

from ._world import World, transcript

pytestmark = pytest.mark.anyio


class Crash(Exception):
    """Stands for the death of the process at a chosen point."""


async def play(world: World, db: Path, rounds: int, crash_at: int | None = None) -> dict[str, Any]:
    """Three agents in a hub speak in turn for *rounds* rounds; the program dies before round
    *crash_at*. Returns the agents' transcripts."""
    agents = [world.agent(name) for name in ("Alice", "Bob", "Carol")]
    announcement = Msg("host", "Begin.", "user")
    async with durable_run("game", db), MsgHub(agents, announcement=announcement):
        for number in range(rounds):
            if number == crash_at:
                raise Crash
            await sequential_pipeline(agents)
    return await transcript(*agents)


async def test_a_resumed_run_replays_what_it_recorded_and_ends_as_an_uninterrupted_one(
    tmp_path: Path,
) -> None:
    reference_world = World()
    reference = await play(reference_world, tmp_path / "reference.db", 3)

    first = World()
    with pytest.raises(Crash):
        await play(first, tmp_path / "runs.db", 3, crash_at=2)
    assert len(first.paid) == 12 and len(first.effects) == 6

    second = World()
    resumed = await play(second, tmp_path / "runs.db", 3)
    assert resumed == reference
    # Only the third round was paid for and run: the first two came from the records.
    assert len(second.paid) == 6
    assert second.effects == reference_world.effects[6:]
    assert first.effects + second.effects == reference_world.effects

    again = World()
    assert await play(again, tmp_path / "runs.db", 3) == reference
    assert again.paid == [] and again.effects == []


async def test_the_records_and_the_run_status(tmp_path: Path) -> None:
    with pytest.raises(Crash):
        await play(World(), tmp_path / "runs.db", 2, crash_at=1)
    store = SQLiteRunStore(tmp_path / "runs.db")
    try:
        info = await store.get_run("", "game")
        assert info is not None and info.status == "failed"
        keys = [record.key for record in await store.load_steps("", "game")]
        # In the order written: a call's record follows the steps it took.
        assert keys[:4] == [
            "Alice#1/chat#1",
            "Alice#1/tool:Alice-2#1",
            "Alice#1/chat#2",
            "Alice#1",
        ]
        assert {"Alice#1", "Bob#1", "Carol#1"} <= set(keys)
        assert info.steps == len(keys) == 12
    finally:
        await store.aclose()
    await play(World(), tmp_path / "runs.db", 2)
    store = SQLiteRunStore(tmp_path / "runs.db")
    try:
        info = await store.get_run("", "game")
        assert info is not None and info.status == "finished" and info.steps == 24
    finally:
        await store.aclose()


async def test_concurrent_agents_get_the_same_keys_whatever_the_scheduling(
    tmp_path: Path,
) -> None:
    async def fan(world: World, crash: bool) -> dict[str, Any]:
        agents = [world.agent(f"A{index}") for index in range(5)]
        async with durable_run("fan", tmp_path / "runs.db"):
            await fanout_pipeline(agents, Msg("host", "Go.", "user"))
            if crash:
                raise Crash
            await fanout_pipeline(agents, Msg("host", "Again.", "user"))
        return await transcript(*agents)

    reference = await fan(World(), crash=False)  # another run id would do; it is deleted next
    store = SQLiteRunStore(tmp_path / "runs.db")
    assert await store.delete_run("", "fan")
    await store.aclose()
    # Random latencies make the agents finish in a different order each time.
    with pytest.raises(Crash):
        await fan(World(latency=lambda _: random.random() / 100), crash=True)
    world = World(latency=lambda _: random.random() / 100)
    assert await fan(world, crash=False) == reference
    assert len(world.paid) == 10  # the second fanout only


async def test_program_steps_are_recorded_and_returned_on_resume(tmp_path: Path) -> None:
    calls: list[str] = []

    def roll(sides: int) -> tuple[int, str]:
        calls.append("roll")
        return random.randint(1, sides), "rolled"

    async def program(crash: bool) -> list[Any]:
        async with durable_run("dice", tmp_path / "runs.db") as run:
            first = await run.step("roll", roll, 6)
            rng = await run.rng()
            second = await step("roll", roll, 1000)
            drawn = [rng.random() for _ in range(3)]
            if crash:
                raise Crash
            assert current_run() is run
        return [first, second, drawn]

    with pytest.raises(Crash):
        await program(crash=True)
    assert calls == ["roll", "roll"]
    calls.clear()
    values = await program(crash=False)
    assert calls == []
    assert values[0][1] == "rolled" and isinstance(values[0], list)  # as JSON gives it back
    assert await program(crash=False) == values
    # Outside a run, step() just calls the function.
    assert current_run() is None
    assert (await step("roll", roll, 1))[0] == 1


async def test_a_step_result_that_is_not_json_data_is_refused(tmp_path: Path) -> None:
    async with durable_run("bad", tmp_path / "runs.db") as run:
        with pytest.raises(DurableRunError, match="JSON data"):
            await run.step("thing", object)
        with pytest.raises(DurableRunError, match="non-empty name"):
            await run.step("chat", int)


async def test_an_edited_prompt_stops_the_resume_at_the_first_step_that_differs(
    tmp_path: Path,
) -> None:
    world = World()
    alice = world.agent("Alice")
    async with durable_run("edit", tmp_path / "runs.db"):
        await alice(Msg("user", "Hi.", "user"))
    edited = World().agent("Alice", sys_prompt="Play along, but louder.")
    with pytest.raises(RunDivergedError) as caught:
        async with durable_run("edit", tmp_path / "runs.db"):
            await edited(Msg("user", "Hi.", "user"))
    assert caught.value.step == "Alice#1/chat#1"
    assert "Alice#1/chat#1" in str(caught.value)


async def test_another_input_or_order_stops_the_resume(tmp_path: Path) -> None:
    async def program(first: str, second: str) -> None:
        world = World()
        agents = {name: world.agent(name) for name in ("Alice", "Bob")}
        async with durable_run("order", tmp_path / "runs.db"):
            reply = await agents[first](Msg("user", "Start.", "user"))
            await agents[second](reply)

    await program("Alice", "Bob")
    with pytest.raises(RunDivergedError) as caught:
        await program("Bob", "Alice")
    assert caught.value.step.startswith("Bob#1")


async def test_a_program_that_stops_short_of_its_records_is_told(tmp_path: Path) -> None:
    async def program(replies: int) -> None:
        alice = World().agent("Alice")
        async with durable_run("short", tmp_path / "runs.db"):
            for _ in range(replies):
                await alice(Msg("user", "Hi.", "user"))

    await program(2)
    with pytest.raises(RunDivergedError, match="without taking") as caught:
        await program(1)
    assert caught.value.step.startswith("Alice#2")


async def test_a_tool_that_started_but_never_ended_is_not_run_again(tmp_path: Path) -> None:
    world = World()
    world.tool_gate = anyio.Event()  # never set: the tool is running when the run dies
    world.tool_entered = anyio.Event()
    alice = world.agent("Alice")
    with anyio.CancelScope() as scope:
        async with durable_run("tool", tmp_path / "runs.db"), anyio.create_task_group() as tg:
            tg.start_soon(alice, Msg("user", "Hi.", "user"))
            await world.tool_entered.wait()
            scope.cancel()
    assert world.effects == []

    again = World()
    alice = again.agent("Alice")
    async with durable_run("tool", tmp_path / "runs.db") as run:
        answer = await alice(Msg("user", "Hi.", "user"))
    assert run.resumed
    assert again.effects == []  # not run again: it may have taken effect
    assert len(again.paid) == 1  # the answer after the tool result; the first call replayed
    results = [
        block.output
        for msg in await alice.memory.get_memory()
        for block in msg.get_content_blocks("tool_result")
    ]
    assert len(results) == 1 and CUT_OFF_TEXT in str(results[0])
    assert answer.get_text_content() == "Alice says 4"


async def test_cancelling_the_run_leaves_it_resumable(tmp_path: Path) -> None:
    world = World()
    alice = world.agent("Alice")
    with anyio.CancelScope() as scope:
        async with durable_run("cancel", tmp_path / "runs.db"):
            await alice(Msg("user", "One.", "user"))
            scope.cancel()
            await anyio.lowlevel.checkpoint()
            await alice(Msg("user", "Two.", "user"))
    store = SQLiteRunStore(tmp_path / "runs.db")
    info = await store.get_run("", "cancel")
    await store.aclose()
    assert info is not None and info.status == "cancelled"
    again = World()
    alice = again.agent("Alice")
    async with durable_run("cancel", tmp_path / "runs.db"):
        await alice(Msg("user", "One.", "user"))
        await alice(Msg("user", "Two.", "user"))
    assert again.paid == ["Alice", "Alice"]  # the second call only


async def test_an_interrupted_call_is_recorded_and_replayed_interrupted(tmp_path: Path) -> None:
    async def program(world: World, db: Path, interrupt: bool, crash: bool) -> dict[str, Any]:
        alice = world.agent("Alice")
        async with durable_run("interrupt", db):
            async with anyio.create_task_group() as tg:
                tg.start_soon(alice, Msg("user", "One.", "user"))
                if interrupt:
                    assert world.tool_entered is not None
                    await world.tool_entered.wait()
                    alice.interrupt()
            world.tool_gate = None
            await alice(Msg("user", "Two.", "user"))
            if crash:
                raise Crash
        return await transcript(alice)

    def gated() -> World:
        world = World()
        world.tool_gate, world.tool_entered = anyio.Event(), anyio.Event()
        return world

    reference = await program(gated(), tmp_path / "reference.db", interrupt=True, crash=False)
    with pytest.raises(Crash):
        await program(gated(), tmp_path / "runs.db", interrupt=True, crash=True)
    # Resumed without anyone interrupting: the recorded interrupt lands where it did.
    resumed_world = World()
    resumed = await program(resumed_world, tmp_path / "runs.db", interrupt=False, crash=False)
    assert resumed == reference
    assert resumed_world.paid == [] and resumed_world.effects == []
    assert "interrupted" in str(reference["Alice"])
    store = SQLiteRunStore(tmp_path / "runs.db")
    statuses = {record.key: record.status for record in await store.load_steps("", "interrupt")}
    await store.aclose()
    assert statuses["Alice#1"] == "interrupted" and statuses["Alice#2"] == "done"
    assert statuses["Alice#1/tool:Alice-2#1"] == "partial"


async def test_streamed_answers_replay_as_one_chunk(tmp_path: Path) -> None:
    async def program(world: World) -> dict[str, Any]:
        alice = world.agent("Alice")
        async with durable_run("stream", tmp_path / "runs.db"):
            await alice(Msg("user", "Hi.", "user"))
        return await transcript(alice)

    first = World(stream=True)
    recorded = await program(first)
    second = World(stream=True)
    assert await program(second) == recorded
    assert second.paid == [] and len(first.paid) == 2


async def test_a_user_agent_is_not_asked_again(tmp_path: Path) -> None:
    asked: list[str] = []

    class Scripted(UserInputBase):
        async def __call__(self, agent_id: str, agent_name: str, *args: Any, **kwargs: Any):
            asked.append(agent_name)
            return UserInputData(blocks_input=[{"type": "text", "text": f"answer {len(asked)}"}])

    async def program() -> str:
        user = UserAgent("you")
        user.override_instance_input_method(Scripted())
        user.set_console_output_enabled(False)
        async with durable_run("user", tmp_path / "runs.db"):
            return (await user()).get_text_content() or ""

    assert await program() == "answer 1"
    assert await program() == "answer 1"
    assert asked == ["you"]


async def test_two_live_agents_with_one_name_are_refused(tmp_path: Path) -> None:
    world = World()
    first, second = world.agent("Twin"), world.agent("Twin")
    async with durable_run("twins", tmp_path / "runs.db"):
        await first(Msg("user", "Hi.", "user"))
        with pytest.raises(DurableRunError, match="two agents named 'Twin'"):
            await second(Msg("user", "Hi.", "user"))


async def test_a_run_is_open_in_one_program_at_a_time(tmp_path: Path) -> None:
    store = SQLiteRunStore(tmp_path / "runs.db")
    try:
        async with durable_run("once", store):
            with pytest.raises(DurableRunError, match="already open"):
                async with durable_run("once", store):
                    pass
        async with durable_run("once", store):
            pass
    finally:
        await store.aclose()


async def test_a_memory_that_outlives_the_process_is_refused_on_resume(tmp_path: Path) -> None:
    async def program(preloaded: int) -> None:
        alice = World().agent("Alice")
        for index in range(preloaded):
            await alice.memory.add(Msg("user", f"old {index}", "user"))
        async with durable_run("memory", tmp_path / "runs.db"):
            await alice(Msg("user", "Hi.", "user"))

    await program(0)
    with pytest.raises(RunDivergedError, match="outlives the process"):
        await program(2)


@pytest.mark.bare_routes
async def test_nothing_is_intercepted_outside_a_run(tmp_path: Path) -> None:
    alice = World().agent("Alice")
    async with durable_run("scope", tmp_path / "runs.db"):
        assert {"call", "chat", "tool"} <= set(_intercept.installed())
    assert not _intercept.installed()
    await alice(Msg("user", "Hi.", "user"))  # no run: nothing recorded, nothing refused
    store = SQLiteRunStore(tmp_path / "runs.db")
    assert [r.key for r in await store.load_steps("", "scope")] == []
    await store.aclose()


async def test_bad_run_ids_and_stores_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DurableRunError, match="non-empty run_id"):
        async with durable_run("", tmp_path / "runs.db"):
            pass
    with pytest.raises(TypeError, match="RunStore"):
        durable_run("x", object())  # type: ignore[arg-type]
    with pytest.raises(DurableRunError, match="database file"):
        SQLiteRunStore(":memory:")


async def test_a_store_that_waits_for_the_disk_only_before_effects_keeps_the_same_run(
    tmp_path: Path,
) -> None:
    reference = await play(World(), tmp_path / "reference.db", 2)
    store = SQLiteRunStore(tmp_path / "runs.db", fsync="effects")
    assert "fsync='effects'" in repr(store)

    async def game(world: World, crash_at: int | None) -> Any:
        agents = [world.agent(name) for name in ("Alice", "Bob", "Carol")]
        async with durable_run("game", store), MsgHub(agents, Msg("host", "Begin.", "user")):
            for number in range(2):
                if number == crash_at:
                    raise Crash
                await sequential_pipeline(agents)
        return await transcript(*agents)

    try:
        with pytest.raises(Crash):
            await game(World(), crash_at=1)
        resumed = World()
        assert await game(resumed, crash_at=None) == reference
        assert len(resumed.paid) == 6
    finally:
        await store.aclose()
    with pytest.raises(DurableRunError, match="fsync"):
        SQLiteRunStore(tmp_path / "x.db", fsync="sometimes")  # type: ignore[arg-type]


class _OneAtATime:
    """A SQLite store with ``put_step`` only (as a store without batches), counting writes."""

    def __init__(self, path: Path) -> None:
        self.inner = SQLiteRunStore(path)
        self.acquire, self.release = self.inner.acquire, self.inner.release
        self.load_steps, self.get_run = self.inner.load_steps, self.inner.get_run
        self.list_runs, self.delete_run = self.inner.list_runs, self.inner.delete_run
        self.aclose = self.inner.aclose
        self.writes = 0

    async def put_step(self, user_id: str, run_id: str, record: StepRecord) -> None:
        self.writes += 1
        await self.inner.put_step(user_id, run_id, record)


@pytest.mark.parametrize("batches", [True, False])
async def test_records_from_another_process_are_written_as_a_batch_and_found_by_call(
    tmp_path: Path, batches: bool
) -> None:
    store = SQLiteRunStore(tmp_path / "r.db") if batches else _OneAtATime(tmp_path / "r.db")
    keys = ["A#1/chat#1", "A#1", "observe:B#1/chat#1", "A#1/observe:B#1/chat#1", "B#1"]
    records = [StepRecord(key, "chat", "done", "f", {"n": n}) for n, key in enumerate(keys)]
    try:
        async with durable_run("r", store) as run:
            await run.put_records(records)
            assert run.recorded == 5 and run.untaken == []
            found = run.records_of(["A#1", "observe:B#1", "A#1/observe:B#1", "C#1"])
            assert [record.key for record in found] == [
                "A#1/chat#1",
                "A#1",
                "observe:B#1/chat#1",
                "A#1/observe:B#1/chat#1",
            ]
        loaded = await store.load_steps("", "r")
    finally:
        await store.aclose()
    assert [(r.key, r.seq, r.payload) for r in loaded] == [
        (key, n + 1, {"n": n}) for n, key in enumerate(keys)
    ]
    assert batches or store.writes == 5
