"""AgentScope's half of the persistence benchmark; run by ``bench_persistence.py``.

Usage: ``python _persistence_agentscope.py '{"messages": N, "repeats": K, "redis_port": P,
"folder": F}'`` prints one JSON object: for each workload the list of K timings (seconds) and,
for the JSON session, the file size. The workloads match ``bench_persistence.py``: a ReActAgent
holding N messages (``build_messages``), saved and loaded through ``JSONSession`` and
``RedisSession``; N messages added to and read back from ``AsyncSQLAlchemyMemory`` (SQLite
through aiosqlite) and ``RedisMemory``.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import json
import logging
import os
import sys
import time
from typing import Any

os.environ["AGENTSCOPE_DISABLE_CONSOLE_OUTPUT"] = "true"
logging.disable(logging.CRITICAL)

from agentscope.agent import ReActAgent  # noqa: E402
from agentscope.formatter import OpenAIChatFormatter  # noqa: E402
from agentscope.memory import InMemoryMemory  # noqa: E402
from agentscope.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock  # noqa: E402
from agentscope.model import ChatModelBase  # noqa: E402
from agentscope.session import JSONSession, RedisSession  # noqa: E402


class NoModel(ChatModelBase):
    """Never called: the agent is only saved and loaded."""

    def __init__(self) -> None:
        super().__init__("none", False)

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("not called")


def build_messages(n: int) -> list[Msg]:
    """The conversation both sides store: user turns, tool calls, tool results, answers."""
    msgs = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            msgs.append(Msg("user", f"Question {i}: " + "what about the weather? " * 4, "user"))
        elif kind == 1:
            msgs.append(
                Msg(
                    "Friday",
                    [
                        TextBlock(type="text", text="Let me look it up."),
                        ToolUseBlock(
                            type="tool_use",
                            id=f"call_{i}",
                            name="get_weather",
                            input={"city": "Paris", "day": i},
                        ),
                    ],
                    "assistant",
                )
            )
        elif kind == 2:
            msgs.append(
                Msg(
                    "system",
                    [
                        ToolResultBlock(
                            type="tool_result",
                            id=f"call_{i - 1}",
                            name="get_weather",
                            output=[TextBlock(type="text", text=f"Sunny, {i % 30} degrees.")],
                        )
                    ],
                    "system",
                )
            )
        else:
            msgs.append(Msg("Friday", f"It is sunny in Paris ({i}).", "assistant"))
    return msgs


def make_agent() -> ReActAgent:
    return ReActAgent(
        name="Friday",
        sys_prompt="You are Friday.",
        model=NoModel(),
        formatter=OpenAIChatFormatter(),
    )


async def timed(fn: Any) -> float:
    gc.collect()  # as on the agentscope-rt side: a full collection before each timed operation
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


async def session_rows(
    session: Any, msgs: list[Msg], repeats: int, user_id: str
) -> dict[str, list[float]]:
    agent = make_agent()
    # As on the agentscope-rt side: an untimed load that finds nothing comes first.
    await session.load_session_state("bench", user_id=user_id, agent=make_agent())
    await agent.memory.add(msgs)
    saves, loads = [], []
    for _ in range(repeats):
        saves.append(
            await timed(lambda: session.save_session_state("bench", user_id=user_id, agent=agent))
        )
        fresh = make_agent()
        loads.append(
            await timed(
                functools.partial(session.load_session_state, "bench", user_id=user_id, agent=fresh)
            )
        )
        assert len(fresh.memory.content) == len(msgs)
    return {"save": saves, "load": loads}


async def memory_rows(make: Any, msgs: list[Msg], repeats: int) -> dict[str, list[float]]:
    adds, reads = [], []
    for r in range(repeats):
        memory = await make(r)
        adds.append(await timed(functools.partial(memory.add, msgs)))
        gc.collect()
        start = time.perf_counter()
        out = await memory.get_memory()
        reads.append(time.perf_counter() - start)
        assert len(out) == len(msgs), len(out)
    return {"add": adds, "read": reads}


async def main(job: dict[str, Any]) -> dict[str, Any]:
    n, repeats, folder = job["messages"], job["repeats"], job["folder"]
    msgs = build_messages(n)
    result: dict[str, Any] = {}
    json_session = JSONSession(save_dir=folder)
    result["json_session"] = await session_rows(json_session, msgs, repeats, "")
    # A stat of a local file: not worth a thread in a benchmark script.
    result["json_bytes"] = os.path.getsize(os.path.join(folder, "bench.json"))  # noqa: ASYNC240
    if job.get("redis_port"):
        redis_session = RedisSession(host="127.0.0.1", port=job["redis_port"])
        result["redis_session"] = await session_rows(redis_session, msgs, repeats, "u")
        await redis_session.close()
    if job.get("memories"):
        from agentscope.memory import AsyncSQLAlchemyMemory, RedisMemory
        from sqlalchemy.ext.asyncio import create_async_engine

        async def sql(r: int) -> Any:
            engine = create_async_engine(
                f"sqlite+aiosqlite:///{folder}/as_mem_{r}_{time.time_ns()}.db"
            )
            return AsyncSQLAlchemyMemory(engine, session_id=f"s{r}", user_id="u")

        result["sql_memory"] = await memory_rows(sql, msgs, repeats)
        if job.get("redis_port"):

            async def red(r: int) -> Any:
                # A fresh key each run: every round of the benchmark talks to the same server.
                return RedisMemory(
                    session_id=f"m{r}_{time.time_ns()}",
                    user_id="u",
                    host="127.0.0.1",
                    port=job["redis_port"],
                )

            result["redis_memory"] = await memory_rows(red, msgs, repeats)
    _ = InMemoryMemory
    return result


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(json.loads(sys.argv[1])))))
