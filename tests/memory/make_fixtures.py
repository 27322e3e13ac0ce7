"""Writes what AgentScope 1.0.21's persistent memories store, into data/agentscope_1_0_21/.

* ``memory.db``: a SQLite database written by ``AsyncSQLAlchemyMemory`` (user ``alice``,
  session ``s1``).
* ``redis_keys.json``: every key ``RedisMemory`` wrote (user ``alice``, session ``s1``,
  ``key_prefix="app:"``), as ``{key: value}`` (lists as lists, sets as sorted lists).

Run it with a Python that has agentscope==1.0.21, aiosqlite and redis installed, and a Redis
server listening on the given port:

python tests/memory/make_fixtures.py tests/memory/data/agentscope_1_0_21 6379
"""

import asyncio
import json
import sys
from pathlib import Path

import redis
from agentscope.memory import AsyncSQLAlchemyMemory, RedisMemory
from agentscope.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from sqlalchemy.ext.asyncio import create_async_engine


def conversation() -> list[Msg]:
    msgs = [
        Msg("user", "What is the weather in Paris?", "user"),
        Msg(
            "Friday",
            [
                TextBlock(type="text", text="Let me check."),
                ToolUseBlock(
                    type="tool_use", id="call-1", name="get_weather", input={"city": "Paris"}
                ),
            ],
            "assistant",
        ),
        Msg(
            "system",
            [
                ToolResultBlock(
                    type="tool_result",
                    id="call-1",
                    name="get_weather",
                    output=[TextBlock(type="text", text="sunny")],
                ),
            ],
            "system",
        ),
        Msg("Friday", "It is sunny in Paris.", "assistant", metadata={"source": "tool"}),
    ]
    for index, msg in enumerate(msgs):
        msg.id = f"msg-{index}"
    return msgs


async def fill(memory) -> None:
    msgs = conversation()
    await memory.add(msgs[:2])
    await memory.add(msgs[2], marks="tool")
    await memory.add(msgs[3], marks=["answer", "tool"])
    # Marked after the fact, in reverse order: AgentScope's Redis mark list is then 3, 0.
    await memory.update_messages_mark("important", msg_ids=["msg-3"])
    await memory.update_messages_mark("important", msg_ids=["msg-0"])


async def main(out: Path, port: int) -> None:
    db = out / "memory.db"
    engine = create_async_engine(f"sqlite+aiosqlite:///{db}")
    memory = AsyncSQLAlchemyMemory(engine, session_id="s1", user_id="alice")
    await fill(memory)
    await memory.close()
    await engine.dispose()

    client = redis.Redis(port=port, decode_responses=True)
    client.flushall()
    redis_memory = RedisMemory("s1", "alice", port=port, key_prefix="app:")
    await fill(redis_memory)
    await redis_memory.close()
    dump = {}
    for key in sorted(client.keys("*")):
        kind = client.type(key)
        if kind == "list":
            dump[key] = client.lrange(key, 0, -1)
        elif kind == "set":
            dump[key] = sorted(client.smembers(key))
        else:
            dump[key] = client.get(key)
    (out / "redis_keys.json").write_text(json.dumps(dump, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    (target / "memory.db").unlink(missing_ok=True)
    asyncio.run(main(target, int(sys.argv[2])))
