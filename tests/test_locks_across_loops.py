"""Objects that hold a lock serve ``asyncio.run`` and then ``trio.run`` in one process, with
tasks contending for the lock in each run (an ``anyio.Lock`` belongs to the first loop that
contends for it, and fails under the next one)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import trio

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.memory import AsyncSQLAlchemyMemory
from agentscope_rt.message import Msg
from agentscope_rt.model import ChatResponse, ScriptedChatModel
from agentscope_rt.session import JSONSession, SQLiteSession

GREEDY = {"temperature": 0.0, "seed": 7}


def _under_both_loops(contend: Callable[[str], Awaitable[None]]) -> None:
    """Run *contend* under asyncio, then trio, then asyncio again, in this process."""
    asyncio.run(contend("asyncio"))  # type: ignore[arg-type]
    trio.run(contend, "trio")
    anyio.run(contend, "again", backend="asyncio")


async def _concurrently(*calls: Callable[[], Awaitable[Any]]) -> None:
    async with anyio.create_task_group() as tg:
        for call in calls:
            tg.start_soon(call)


def _agent(*answers: str) -> ReActAgent:
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are a helpful assistant.",
        model=ScriptedChatModel(list(answers)),
        formatter=OpenAIChatFormatter(),
    )
    agent.set_console_output_enabled(False)
    return agent


@pytest.mark.local_model
def test_one_llamacpp_model_serves_asyncio_then_trio_under_contention() -> None:
    from agentscope_rt.model import LlamaCppChatModel

    model = LlamaCppChatModel(generate_kwargs={**GREEDY, "max_tokens": 2})
    answers: list[str] = []

    async def ask() -> None:
        response = await model([{"role": "user", "content": "Hi"}])
        assert isinstance(response, ChatResponse)
        answers.append(response.get_text())

    async def contend(_tag: str) -> None:
        with anyio.fail_after(120):
            await _concurrently(model.load, ask, ask, ask)

    _under_both_loops(contend)
    assert len(answers) == 9 and all(answers)


def test_one_sqlalchemy_memory_serves_asyncio_then_trio_under_contention(tmp_path: Path) -> None:
    memory = AsyncSQLAlchemyMemory(f"sqlite:///{tmp_path / 'memory.db'}", "s", "u")

    async def contend(tag: str) -> None:
        with anyio.fail_after(60):
            await _concurrently(
                *(
                    lambda n=n: memory.add(Msg("user", f"{tag}-{n}", "user"))  # type: ignore[misc]
                    for n in range(4)
                )
            )

    try:
        _under_both_loops(contend)
        texts = [m.get_text_content() for m in anyio.run(memory.get_memory)]
    finally:
        memory.get_engine().dispose()
    assert sorted(texts) == sorted(  # type: ignore[type-var]
        f"{tag}-{n}" for tag in ("asyncio", "trio", "again") for n in range(4)
    )


def test_one_agent_serves_asyncio_then_trio_under_contention() -> None:
    agent = _agent(*["ok"] * 9)

    async def contend(tag: str) -> None:
        with anyio.fail_after(60):
            await _concurrently(
                *(lambda n=n: agent(Msg("user", f"{tag}-{n}", "user")) for n in range(3))
            )  # type: ignore[misc]

    _under_both_loops(contend)
    assert not agent._reply_lock.held


def test_durable_checkpoints_serve_asyncio_then_trio_under_contention(tmp_path: Path) -> None:
    agent = _agent()
    agent.checkpoint_to(SQLiteSession(tmp_path / "sessions.db"), "task")
    durable = agent._durable
    assert durable is not None

    async def contend(_tag: str) -> None:
        with anyio.fail_after(60):
            await _concurrently(*[durable.checkpoint] * 3)

    _under_both_loops(contend)


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_one_session_serves_asyncio_then_trio_under_contention(tmp_path: Path, kind: str) -> None:
    session = JSONSession(tmp_path) if kind == "json" else SQLiteSession(tmp_path / "s.db")
    agent = _agent()

    async def contend(_tag: str) -> None:
        with anyio.fail_after(60):
            await _concurrently(
                *[lambda: session.save_session_state("s", agent=agent)] * 3,
                lambda: session.load_session_state("s", agent=agent),
            )

    _under_both_loops(contend)
