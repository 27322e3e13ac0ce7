"""What only the persistent memories promise: AgentScope's tables and keys (and reading what
AgentScope 1.0.21 wrote), messages that outlive the memory object, users kept apart, the TTL,
asyncio engines from AgentScope programs, and a ReAct agent keeping its conversation in each."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.memory import AsyncSQLAlchemyMemory, MemoryBase, RedisMemory
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.tool import Toolkit, ToolResponse

from .._cancellation import used_then_cancelled
from .._servers import redis_clients
from ..react._support import call, make_agent, response, text
from .conftest import MemoryFactory

AGENTSCOPE_DATA = Path(__file__).parent / "data" / "agentscope_1_0_21"


def _msg(content: str, role: str = "user") -> Msg:
    return Msg("Friday" if role == "assistant" else role, content, role)  # type: ignore[arg-type]


async def _texts(memory: MemoryBase, **kwargs: Any) -> list[str]:
    return [m.get_text_content() or "" for m in await memory.get_memory(**kwargs)]


# -- both persistent memories ---------------------------------------------------------------


async def test_messages_outlive_the_memory_object(make_persistent: MemoryFactory) -> None:
    first = make_persistent()
    await first.add([_msg("a"), _msg("b")], marks="m")
    await first.add(_msg("c"))
    second = make_persistent()
    assert await _texts(second) == ["a", "b", "c"]
    assert await _texts(second, mark="m") == ["a", "b"]
    await second.add(_msg("d"))
    assert await first.size() == 4


async def test_users_and_sessions_are_kept_apart(make_persistent: MemoryFactory) -> None:
    # AgentScope's SQL memory filters by session id only: users sharing one saw each other's
    # messages. Here every operation stays within its user and session.
    alice = make_persistent(session_id="shared", user_id="alice")
    bob = make_persistent(session_id="shared", user_id="bob")
    alice_other = make_persistent(session_id="other", user_id="alice")
    a1, a2 = _msg("alice 1"), _msg("alice 2")
    b1 = _msg("bob 1")
    await alice.add([a1, a2], marks="m")
    await bob.add(b1, marks="m")
    await alice_other.add(_msg("alice elsewhere"), marks="m")
    # The same message (same id) stored by two users is two rows.
    await bob.add(a1)
    assert await _texts(alice) == ["alice 1", "alice 2"]
    assert await _texts(bob) == ["bob 1", "alice 1"]
    assert await alice.size() == 2
    assert await bob.size() == 2
    assert await bob.delete([a2.id]) == 0
    assert await bob.delete([a1.id]) == 1
    assert await _texts(alice) == ["alice 1", "alice 2"]
    assert await bob.update_messages_mark("n") == 1
    assert await _texts(alice, mark="n") == []
    assert await bob.update_messages_mark(None, old_mark="m") == 1
    assert await _texts(alice, mark="m") == ["alice 1", "alice 2"]
    assert await alice.delete_by_mark("m") == 2
    assert await _texts(bob) == ["bob 1"]
    assert await _texts(alice_other) == ["alice elsewhere"]
    await bob.clear()
    assert await _texts(alice_other) == ["alice elsewhere"]
    await alice.add(_msg("alice 3"))
    await alice_other.clear()
    assert await _texts(alice) == ["alice 3"]


async def test_allow_duplicates_with_a_stored_id_is_an_error(
    make_persistent: MemoryFactory,
) -> None:
    memory = make_persistent()
    stored = _msg("stored")
    await memory.add(stored)
    fresh = _msg("fresh")
    with pytest.raises(ValueError, match="already stored"):
        await memory.add([fresh, stored], allow_duplicates=True)
    with pytest.raises(ValueError, match="twice"):
        await memory.add([fresh, fresh], allow_duplicates=True)
    assert await _texts(memory) == ["stored"]
    # AgentScope's keyword: skip_duplicated=True is the default behaviour.
    await memory.add([stored, fresh], skip_duplicated=True)
    assert await _texts(memory) == ["stored", "fresh"]
    with pytest.raises(ValueError, match="already stored"):
        await memory.add(stored, skip_duplicated=False)


async def test_state_holds_the_summary_only(make_persistent: MemoryFactory) -> None:
    memory = make_persistent()
    await memory.add(_msg("a"))
    await memory.update_compressed_summary("sum")
    assert memory.state_dict() == {"_compressed_summary": "sum"}
    memory.load_state_dict({"_compressed_summary": ""})
    assert await _texts(memory) == ["a"]


async def test_a_closed_memory_reconnects_when_used_again(make_persistent: MemoryFactory) -> None:
    memory = make_persistent()
    assert isinstance(memory, AsyncSQLAlchemyMemory | RedisMemory)
    await memory.add(_msg("a"))
    if isinstance(memory, RedisMemory):
        await memory.close(close_connection_pool=True)
    else:
        await memory.close()
    assert await memory.size() == 1
    async with make_persistent() as other:  # type: ignore[attr-defined]
        await other.add(_msg("b"))
    assert await _texts(memory) == ["a", "b"]


def _postgres_clients(url: str) -> int:
    """How many client sessions the PostgreSQL server has, besides the one asking."""
    import psycopg

    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
        ).fetchone()
    assert row is not None
    return int(row[0]) - 1


async def _used_then_cancelled(memory: Any) -> None:
    """Use *memory* in ``async with``, cancelled in the middle of the block."""
    await used_then_cancelled(memory, lambda m: m.add(_msg("a")))


async def test_redis_cancelled_mid_use_still_closes_its_connections(redis_port: int) -> None:
    # The close of ``async with`` runs in the cancelled scope: it must still disconnect.
    before = await anyio.to_thread.run_sync(redis_clients, redis_port)
    memory = RedisMemory("s", "u", host="127.0.0.1", port=redis_port)
    await _used_then_cancelled(memory)
    assert await anyio.to_thread.run_sync(redis_clients, redis_port) == before


async def test_sql_cancelled_mid_use_still_closes_its_connections(postgres_url: str) -> None:
    before = await anyio.to_thread.run_sync(_postgres_clients, postgres_url)
    memory = AsyncSQLAlchemyMemory(postgres_url, "s", "u")
    await _used_then_cancelled(memory)
    # The server notices a closed session a moment later. It is shared with the session's
    # other tests, whose own sessions may end meanwhile: what must not stay is more clients
    # than before (waiting for exactly as many failed when an earlier test's closed late).
    with anyio.fail_after(30):
        while await anyio.to_thread.run_sync(_postgres_clients, postgres_url) > before:  # noqa: ASYNC110
            await anyio.sleep(0.05)


def test_importing_the_memories_loads_neither_sqlalchemy_nor_redis() -> None:
    code = (
        "import sys, agentscope_rt.memory as m\n"
        "m.AsyncSQLAlchemyMemory, m.RedisMemory\n"
        "print([n for n in ('sqlalchemy', 'redis') if n in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


# -- a ReAct agent keeping its conversation in each memory ---------------------------------


def get_weather(city: str) -> ToolResponse:
    """Get the weather of a city.

    Args:
        city (str): The city.
    """
    return ToolResponse(content=[TextBlock(text=f"sunny in {city}")])


async def test_a_react_agent_holds_a_two_turn_conversation(make_memory: MemoryFactory) -> None:
    model = ScriptedChatModel(
        [
            response(call("get_weather", "call-1", city="Paris")),
            response(text("It is sunny in Paris.")),
            response(text("You asked about Paris.")),
        ]
    )
    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    memory = make_memory()
    agent = make_agent(model, toolkit, memory=memory)
    first = await agent(Msg("user", "Weather in Paris?", "user"))
    assert first.get_text_content() == "It is sunny in Paris."
    second = await agent(Msg("user", "Which city did I ask about?", "user"))
    assert second.get_text_content() == "You asked about Paris."
    # The last model call saw the whole first turn, read back from the memory.
    sent = json.dumps(model.calls[-1].messages)
    for needle in ("Weather in Paris?", "call-1", "sunny in Paris", "It is sunny in Paris."):
        assert needle in sent
    stored = await memory.get_memory()
    assert [m.role for m in stored] == [
        "user",
        "assistant",
        "system",
        "assistant",
        "user",
        "assistant",
    ]
    assert stored[-1].id == second.id


# -- AsyncSQLAlchemyMemory ------------------------------------------------------------------


def _rows(engine: Any, query: str) -> list[tuple[Any, ...]]:
    import sqlalchemy as sa

    with engine.connect() as conn:
        return [tuple(row) for row in conn.execute(sa.text(query))]


async def test_sql_tables_are_agentscopes(make_sql: MemoryFactory) -> None:
    import sqlalchemy as sa

    memory = make_sql(session_id="s1", user_id="alice")
    assert isinstance(memory, AsyncSQLAlchemyMemory)
    msgs = [_msg("a"), _msg("b", "assistant")]
    await memory.add(msgs, marks=["m1", "m2"])
    await memory.add(_msg("c"))
    engine = memory.get_engine()
    inspector = sa.inspect(engine)
    assert {"users", "session", "message", "message_mark"} <= set(inspector.get_table_names())
    columns = {
        table: [c["name"] for c in inspector.get_columns(table)]
        for table in ("users", "session", "message", "message_mark")
    }
    assert columns == {
        "users": ["id"],
        "session": ["id", "user_id"],
        "message": ["id", "msg", "session_id", "index"],
        "message_mark": ["msg_id", "mark"],
    }
    assert _rows(engine, "SELECT id FROM users") == [("alice",)]
    assert _rows(engine, "SELECT id, user_id FROM session") == [("s1", "alice")]
    rows = _rows(engine, 'SELECT id, msg, session_id, "index" FROM message ORDER BY "index"')
    assert [(r[0], r[2], r[3]) for r in rows] == [
        (f"alice-s1-{msgs[0].id}", "s1", 0),
        (f"alice-s1-{msgs[1].id}", "s1", 1),
        (rows[2][0], "s1", 2),
    ]
    stored = rows[0][1] if isinstance(rows[0][1], dict) else json.loads(rows[0][1])
    assert stored == msgs[0].to_dict()
    assert sorted(_rows(engine, "SELECT msg_id, mark FROM message_mark")) == sorted(
        (f"alice-s1-{m.id}", mark) for m in msgs for mark in ("m1", "m2")
    )


async def test_sql_reads_and_extends_a_database_agentscope_wrote(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    shutil.copy(AGENTSCOPE_DATA / "memory.db", db)
    memory = AsyncSQLAlchemyMemory(f"sqlite:///{db}", session_id="s1", user_id="alice")
    try:
        stored = await memory.get_memory()
        assert [m.id for m in stored] == ["msg-0", "msg-1", "msg-2", "msg-3"]
        assert stored[1].content[1].input == {"city": "Paris"}  # type: ignore[union-attr, index]
        assert stored[3].metadata == {"source": "tool"}
        assert [m.id for m in await memory.get_memory(mark="tool")] == ["msg-2", "msg-3"]
        assert [m.id for m in await memory.get_memory(mark="important")] == ["msg-0", "msg-3"]
        await memory.add(_msg("next"), marks="tool")
        assert await memory.delete_by_mark("answer") == 1
        assert await _texts(memory, mark="tool") == ["", "next"]
        assert _rows(memory.get_engine(), 'SELECT max("index") FROM message') == [(4,)]
        # Nobody else's session.
        assert await AsyncSQLAlchemyMemory(f"sqlite:///{db}", "s1", "bob").size() == 0
    finally:
        await memory.close()


async def test_sql_accepts_the_asyncio_engines_agentscope_programs_pass(
    postgres_url: str, tmp_path: Path
) -> None:
    from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

    # Opened through the matching synchronous driver, on asyncio and trio alike.
    async_engine = create_async_engine(postgres_url)
    for given in (async_engine, AsyncSession(async_engine), async_sessionmaker(async_engine)):
        memory = AsyncSQLAlchemyMemory(given, session_id="s", user_id="u")
        assert memory.get_engine().url.drivername == "postgresql+psycopg"
        await memory.add(_msg(type(given).__name__))
        await memory.close()
    plain = AsyncSQLAlchemyMemory(postgres_url, session_id="s", user_id="u")
    assert await _texts(plain) == ["AsyncEngine", "AsyncSession", "async_sessionmaker"]
    await plain.close()

    sqlite_engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'a.db'}")
    memory = AsyncSQLAlchemyMemory(sqlite_engine)
    assert memory.get_engine().url.drivername == "sqlite"
    await memory.add(_msg("via aiosqlite's URL"))
    assert await _texts(AsyncSQLAlchemyMemory(f"sqlite:///{tmp_path / 'a.db'}")) == [
        "via aiosqlite's URL"
    ]
    memory = AsyncSQLAlchemyMemory(f"sqlite+aiosqlite:///{tmp_path / 'a.db'}")
    assert memory.get_engine().url.drivername == "sqlite"
    assert await memory.size() == 1


def test_sql_explains_what_to_pass_instead() -> None:
    import sqlalchemy as sa
    from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

    with pytest.raises(ValueError, match=r"in-memory SQLite database.*'sqlite:///memory\.db'"):
        AsyncSQLAlchemyMemory(create_async_engine("sqlite+aiosqlite://"))
    with pytest.raises(ValueError, match=r"cannot tell the database.*sqlalchemy\.create_engine"):
        AsyncSQLAlchemyMemory(async_sessionmaker())
    with pytest.raises(ValueError, match="must be a database URL"):
        AsyncSQLAlchemyMemory(42)
    with pytest.raises(ValueError, match="StaticPool"):
        AsyncSQLAlchemyMemory(sa.create_engine("sqlite://"))
    with pytest.raises(ValueError, match="longer than 255"):
        AsyncSQLAlchemyMemory("sqlite://", session_id="s" * 300)


async def test_sql_in_memory_database_is_shared_by_the_worker_threads() -> None:
    memory = AsyncSQLAlchemyMemory("sqlite://")
    await memory.add([_msg(str(i)) for i in range(5)])
    assert await memory.size() == 5


def test_sql_repr_hides_the_password() -> None:
    memory = AsyncSQLAlchemyMemory("postgresql+psycopg://user:s3cret@127.0.0.1:1/db")
    assert "s3cret" not in repr(memory)
    assert "user" in repr(memory)


# -- RedisMemory ----------------------------------------------------------------------------


def _redis(port: int) -> Any:
    import redis

    return redis.Redis(host="127.0.0.1", port=port, decode_responses=True)


def _dump(client: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in sorted(client.keys("*")):
        kind = client.type(key)
        if kind == "list":
            out[key] = client.lrange(key, 0, -1)
        elif kind == "set":
            out[key] = sorted(client.smembers(key))
        else:
            out[key] = client.get(key)
    return out


async def test_redis_keys_are_agentscopes(redis_port: int) -> None:
    memory = RedisMemory("s1", "alice", host="127.0.0.1", port=redis_port, key_prefix="app:")
    a, b, c = _msg("a"), _msg("b"), _msg("c")
    await memory.add([a, b], marks=["m1", "m2"])
    await memory.add(c)
    client = _redis(redis_port)
    base = "app:user_id:alice:session:s1:"
    dump = _dump(client)
    assert dump == {
        base + "marks_index": ["m1", "m2"],
        base + "mark:m1": [a.id, b.id],
        base + "mark:m2": [a.id, b.id],
        base + "messages": [a.id, b.id, c.id],
        base + f"msg:{a.id}": json.dumps(a.to_dict(), ensure_ascii=False),
        base + f"msg:{b.id}": json.dumps(b.to_dict(), ensure_ascii=False),
        base + f"msg:{c.id}": json.dumps(c.to_dict(), ensure_ascii=False),
    }
    # A mark no message carries any more leaves no key behind.
    await memory.update_messages_mark(None, old_mark="m1")
    await memory.delete_by_mark("m2")
    assert _dump(client) == {
        base + "messages": [c.id],
        base + f"msg:{c.id}": json.dumps(c.to_dict(), ensure_ascii=False),
    }
    await memory.clear()
    assert client.keys("*") == []
    client.close()
    await memory.close()


async def test_redis_reads_and_extends_what_agentscope_wrote(redis_port: int) -> None:
    client = _redis(redis_port)
    for key, value in json.loads((AGENTSCOPE_DATA / "redis_keys.json").read_text()).items():
        if key.endswith(":messages") or ":mark:" in key:
            client.rpush(key, *value)
        elif key.endswith(":marks_index"):
            client.sadd(key, *value)
        else:
            client.set(key, value)
    memory = RedisMemory("s1", "alice", host="127.0.0.1", port=redis_port, key_prefix="app:")
    stored = await memory.get_memory()
    assert [m.id for m in stored] == ["msg-0", "msg-1", "msg-2", "msg-3"]
    assert stored[3].metadata == {"source": "tool"}
    # AgentScope's mark list is in marking order (msg-3, msg-0); reads follow the conversation.
    assert [m.id for m in await memory.get_memory(mark="important")] == ["msg-0", "msg-3"]
    assert await memory.delete_by_mark("answer") == 1
    assert client.lrange("app:user_id:alice:session:s1:mark:tool", 0, -1) == ["msg-2"]
    assert await memory.update_messages_mark("important", old_mark="tool") == 1
    assert [m.id for m in await memory.get_memory(mark="important")] == ["msg-0", "msg-2"]
    assert sorted(client.smembers("app:user_id:alice:session:s1:marks_index")) == ["important"]
    client.close()
    await memory.close()


async def test_redis_ttl_slides_over_every_key_of_the_session(redis_port: int) -> None:
    memory = RedisMemory("s", "u", host="127.0.0.1", port=redis_port, key_ttl=1000)
    other = RedisMemory("s", "other", host="127.0.0.1", port=redis_port)
    await memory.add([_msg("a"), _msg("b")], marks="m")
    await other.add(_msg("no ttl"))
    client = _redis(redis_port)
    own = client.keys("user_id:u:*")
    assert len(own) == 5
    assert all(0 < client.ttl(key) <= 1000 for key in own)
    assert all(client.ttl(key) == -1 for key in client.keys("user_id:other:*"))
    # Each operation, reads included, renews the expiry of every key of the session.
    for operation in (memory.size(), memory.get_memory(), memory.update_messages_mark("n")):
        for key in own:
            client.expire(key, 5)
        await operation
        assert all(client.ttl(key) > 5 for key in client.keys("user_id:u:*"))
    client.close()
    with pytest.raises(ValueError, match="key_ttl"):
        RedisMemory(key_ttl=0)
    with pytest.raises(ValueError, match="key_ttl"):
        RedisMemory(key_ttl=1.5)  # type: ignore[arg-type]


def test_redis_refuses_an_asyncio_pool_and_hides_the_password() -> None:
    import redis.asyncio

    with pytest.raises(TypeError, match=r"synchronous ConnectionPool \(redis.ConnectionPool\)"):
        RedisMemory(connection_pool=redis.asyncio.ConnectionPool())
    assert "s3cret" not in repr(RedisMemory(password="s3cret"))


_WRITER = """
import sys, anyio
from agentscope_rt.memory import RedisMemory
from agentscope_rt.message import Msg

async def main():
    memory = RedisMemory("s", "u", host="127.0.0.1", port=int(sys.argv[1]))
    round = 0
    while True:
        round += 1
        batch = [Msg("user", f"{round}-{i}", "user") for i in range(20)]
        await memory.add(batch, marks=["a", "b"])
        await memory.update_messages_mark("c", old_mark="a", msg_ids=[m.id for m in batch[:10]])
        await memory.delete([m.id for m in batch[::3]])
        print(round, flush=True)

anyio.run(main, backend=sys.argv[2])
"""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_redis_a_killed_writer_leaves_every_id_with_its_message(
    redis_port: int, backend: str
) -> None:
    client = _redis(redis_port)
    base = "user_id:u:session:s:"
    for _ in range(5):
        child = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(redis_port), backend],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        for _ in range(3):  # let it write a few rounds, then kill it wherever it is
            child.stdout.readline()
        child.kill()
        child.wait()
        ids = client.lrange(base + "messages", 0, -1)
        assert len(ids) == len(set(ids))
        assert all(client.exists(base + f"msg:{i}") for i in ids)
        assert len(client.keys(base + "msg:*")) == len(ids)
        for mark in client.smembers(base + "marks_index"):
            assert set(client.lrange(base + f"mark:{mark}", 0, -1)) <= set(ids)
    client.close()
