"""The ReAct benchmark's workloads and its cost breakdown still run and still mean what they say
(no timing is asserted here: figures come from ``bench/bench_react.py`` alone)."""

from __future__ import annotations

import pathlib
import subprocess
import sys
from collections.abc import Iterator
from types import ModuleType

import anyio
import pytest

BENCH = pathlib.Path(__file__).parent.parent / "bench"


@pytest.fixture(scope="module")
def bench_react() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH))
    try:
        import bench_react

        yield bench_react
    finally:
        sys.path.remove(str(BENCH))


async def test_every_in_process_workload_runs_the_conversation(bench_react: ModuleType) -> None:
    # Each workload raises when the reply is not the scripted answer.
    for _, make in bench_react._IN_PROCESS:
        one = make()
        for _ in range(3):
            await one()


async def test_the_breakdown_stubs_keep_the_conversation_and_are_undone(
    bench_react: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agentscope_rt.agent._agent_base as agent_base

    monkeypatch.setattr(bench_react, "BREAKDOWN_ROUNDS", 1)
    monkeypatch.setattr(bench_react, "BREAKDOWN_REPLIES", 2)
    real_scope = agent_base.reply_scope
    costs = await bench_react._breakdown()
    assert set(costs) == {"all of it", *bench_react._COMPONENTS}
    assert agent_base.reply_scope is real_scope


async def test_the_scope_stub_is_undone_and_interrupts_work_again(bench_react: ModuleType) -> None:
    class SlowModel(bench_react.ZeroLatencyModel):
        async def __call__(self, *args: object, **kwargs: object) -> object:
            await anyio.sleep(30)
            raise AssertionError("not interrupted")

    agent = bench_react.make_agent()
    bench_react._without_scope(agent)()  # apply, then undo at once
    agent.model = SlowModel()
    async with anyio.create_task_group() as tg:

        async def interrupt_soon() -> None:
            await anyio.sleep(0.05)
            agent.interrupt()

        tg.start_soon(interrupt_soon)
        reply = await agent(bench_react.Msg("user", "hi", "user"))
    assert reply.metadata == {"_is_interrupted": True}
    assert agent.generate_reason == "interrupted"


def test_the_round_spread_pairs_each_round_with_agentscopes(bench_react: ModuleType) -> None:
    samples = {
        ("AgentScope 1.0.4", "asyncio"): [1000.0, 900.0, 1200.0],
        ("agentscope-rt 0.1.0", "asyncio"): [100.0, 100.0, 100.0],
        ("agentscope-rt 0.1.0", "trio"): [125.0, 90.0, 100.0],
        ("hand-written floor", "asyncio"): [5.0, 5.0, 5.0],
    }
    text = bench_react.round_spread(samples, "AgentScope 1.0.4")
    assert "asyncio 9.0x to 12.0x (2 of 3 rounds at 10x or more)" in text
    assert "trio 8.0x to 12.0x (2 of 3 rounds at 10x or more)" in text
    assert "floor" not in text


def test_the_instruction_counter_runs_its_workload_on_each_backend() -> None:
    # The part that runs under valgrind (bench/instructions.py --child), without valgrind:
    # it must still find the clock it replaces and run the conversation to its answer.
    for backend in ("asyncio", "trio"):
        subprocess.run(
            [sys.executable, str(BENCH / "instructions.py"), "--child", backend, "3"],
            check=True,
            timeout=120,
        )
