"""Sessions: AgentScope's contract on three storages, AgentScope's files, and failure handling."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from agentscope_rt.exception import SessionError
from agentscope_rt.message import Msg
from agentscope_rt.session import JSONSession, RedisSession, SessionBase, SQLiteSession

from .._cancellation import used_then_cancelled
from .._servers import redis_clients
from ._agents import make_agent, make_memory

KINDS = ["json", "sqlite", "redis"]


@pytest.fixture(params=KINDS)
async def session(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionBase]:
    kind = request.param
    made: SessionBase
    if kind == "json":
        made = JSONSession(tmp_path / "sessions")
    elif kind == "sqlite":
        made = SQLiteSession(tmp_path / "sessions.db")
    else:
        port = request.getfixturevalue("redis_port")
        made = RedisSession(host="127.0.0.1", port=port)
    async with made:
        yield made


async def _filled_agent(*texts: str) -> object:
    agent = make_agent()
    for text in texts:
        await agent.memory.add(Msg("user", text, "user"))
    return agent


# -- the contract, on every storage ---------------------------------------------------------


async def test_a_saved_session_loads_into_new_modules(session: SessionBase) -> None:
    agent = make_agent()
    await agent.memory.add([Msg("user", "hi ☕", "user"), Msg("Friday", "hello", "assistant")])
    agent.toolkit.update_tool_groups(["weather"], active=True)
    notes = make_memory()
    await notes.add(Msg("user", "remember Paris", "user"), marks="important")

    await session.save_session_state("s1", user_id="alice", friday=agent, notes=notes)

    agent2, notes2 = make_agent(), make_memory()
    await session.load_session_state("s1", user_id="alice", friday=agent2, notes=notes2)
    assert agent2.state_dict() == agent.state_dict()
    assert notes2.state_dict() == notes.state_dict()
    assert [m.get_text_content() for m in await notes2.get_memory(mark="important")] == [
        "remember Paris"
    ]


async def test_sessions_and_users_are_kept_apart(session: SessionBase) -> None:
    for user in ("alice", "bob"):
        for sid in ("s1", "s2"):
            memory = make_memory()
            await memory.add(Msg("user", f"{user}/{sid}", "user"))
            await session.save_session_state(sid, user_id=user, memory=memory)
    for user in ("alice", "bob"):
        for sid in ("s1", "s2"):
            memory = make_memory()
            await session.load_session_state(sid, user_id=user, memory=memory)
            assert [m.get_text_content() for m in await memory.get_memory()] == [f"{user}/{sid}"]


async def test_loading_touches_only_the_names_in_both(session: SessionBase) -> None:
    saved = make_memory()
    await saved.add(Msg("user", "saved", "user"))
    await session.save_session_state("s", memory=saved)

    memory, other = make_memory(), make_memory()
    await other.add(Msg("user", "untouched", "user"))
    await session.load_session_state("s", memory=memory, other=other)
    assert [m.get_text_content() for m in await memory.get_memory()] == ["saved"]
    assert [m.get_text_content() for m in await other.get_memory()] == ["untouched"]


async def test_a_missing_session_is_skipped_or_an_error(session: SessionBase) -> None:
    memory = make_memory()
    await memory.add(Msg("user", "kept", "user"))
    await session.load_session_state("never-saved", memory=memory)
    assert await memory.size() == 1
    with pytest.raises(SessionError, match="never-saved"):
        await session.load_session_state("never-saved", allow_not_exist=False, memory=memory)
    # AgentScope programs catch ValueError.
    with pytest.raises(ValueError):
        await session.load_session_state("never-saved", allow_not_exist=False, memory=memory)


async def test_an_incompatible_state_names_the_path_and_changes_nothing(
    session: SessionBase,
) -> None:
    good = make_memory()
    await good.add(Msg("user", "first", "user"))
    agent = make_agent(name="Saved")
    await session.save_session_state("s", a_memory=good, z_agent=agent)

    # The memory fits; the agent's state cannot go into a memory.
    a_memory = make_memory()
    await a_memory.add(Msg("user", "before", "user"))
    not_an_agent = make_memory()
    with pytest.raises(SessionError) as info:
        await session.load_session_state("s", a_memory=a_memory, z_agent=not_an_agent)
    message = str(info.value)
    assert "'s'" in message and "z_agent" in message
    assert "unexpected keys" in message or "missing keys" in message
    # All or nothing: the memory loaded before the failing module was put back.
    assert [m.get_text_content() for m in await a_memory.get_memory()] == ["before"]
    assert await not_an_agent.size() == 0


@pytest.mark.parametrize("bad", ["../escape", "a/b", "a\\b", "..", "", "nul\x00"])
async def test_ids_that_could_escape_the_storage_are_refused(
    session: SessionBase, bad: str
) -> None:
    with pytest.raises(SessionError):
        await session.save_session_state(bad, memory=make_memory())
    with pytest.raises(SessionError):
        await session.save_session_state("ok", user_id=bad or "a/b", memory=make_memory())


async def test_a_value_that_is_not_a_module_is_refused(session: SessionBase) -> None:
    with pytest.raises(TypeError, match="StateModule"):
        await session.save_session_state("s", memory=[1, 2])  # type: ignore[arg-type]


async def test_saves_of_different_sessions_run_concurrently(session: SessionBase) -> None:
    async def save(i: int) -> None:
        memory = make_memory()
        await memory.add([Msg("user", f"{i}-{j}", "user") for j in range(20)])
        await session.save_session_state(f"s{i}", user_id="u", memory=memory)

    async with anyio.create_task_group() as tg:
        for i in range(16):
            tg.start_soon(save, i)
    for i in range(16):
        memory = make_memory()
        await session.load_session_state(f"s{i}", user_id="u", allow_not_exist=False, memory=memory)
        assert [m.get_text_content() for m in await memory.get_memory()] == [
            f"{i}-{j}" for j in range(20)
        ]


async def test_concurrent_saves_of_one_session_leave_one_whole_state(session: SessionBase) -> None:
    async def save(i: int) -> None:
        memory = make_memory()
        await memory.add([Msg("user", f"{i}", "user") for _ in range(50)])
        await session.save_session_state("same", memory=memory)

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(save, i)
    memory = make_memory()
    await session.load_session_state("same", memory=memory)
    texts = {m.get_text_content() for m in await memory.get_memory()}
    assert len(texts) == 1 and await memory.size() == 50


# -- AgentScope's files ---------------------------------------------------------------------


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _canonical(state: dict[str, object]) -> str:
    return json.dumps(state, sort_keys=True, ensure_ascii=False)


async def test_agentscope_session_files_load_and_save_back_identically(
    agentscope_sessions: Path, tmp_path: Path
) -> None:
    original = json.loads((agentscope_sessions / "alice_chat_1.json").read_text("utf-8"))
    friday, notes = make_agent(), make_memory()

    # 'alice_chat_1.json' may also be user 'alice_chat''s session '1': read when asked.
    await JSONSession(agentscope_sessions, read_agentscope_names=True).load_session_state(
        "chat_1", user_id="alice", allow_not_exist=False, friday=friday, notes=notes
    )
    memory = await friday.memory.get_memory()
    assert [m.get_text_content() for m in memory] == [
        "Weather in Paris? café ☕",
        "Let me check.",
        None,
        "It is sunny in Paris.",
    ]
    assert memory[1].content[1] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "get_weather",
        "input": {"city": "Paris"},
    }
    assert [m.get_text_content() for m in await friday.memory.get_memory(mark="important")] == [
        "Weather in Paris? café ☕"
    ]
    assert friday.toolkit.state_dict() == {"active_groups": ["weather"]}

    # Saved back here, the file is the same JSON AgentScope wrote, under the pair's own name
    # ('_' in an id escaped, so that no other pair can have it).
    await JSONSession(tmp_path).save_session_state(
        "chat_1", user_id="alice", friday=friday, notes=notes
    )
    assert _names(tmp_path) == ["alice_chat%5F1.json"]
    written = json.loads((tmp_path / "alice_chat%5F1.json").read_text("utf-8"))
    assert _canonical(written) == _canonical(original)


async def test_json_session_files_are_named_as_agentscope_names_them(tmp_path: Path) -> None:
    session = JSONSession(tmp_path)
    await session.save_session_state("chat", user_id="bob", memory=make_memory())
    await session.save_session_state("solo", memory=make_memory())
    assert _names(tmp_path) == ["bob_chat.json", "solo.json"]
    # One line of JSON, non-ASCII kept as is (AgentScope's json.dumps(ensure_ascii=False)).
    memory = make_memory()
    await memory.add(Msg("user", "café", "user"))
    await session.save_session_state("solo", memory=memory)
    raw = (tmp_path / "solo.json").read_text("utf-8")
    assert "café" in raw and "\n" not in raw
    assert not [n for n in _names(tmp_path) if n.startswith(".")]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"memory": {"content": [', "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[1, 2]", "expected a JSON object"),
        (b'{"memory": 3}', "must be a JSON object"),
        (b'{"memory": {"content": [[{"id": 1}, []]], "_compressed_summary": ""}}', "memory"),
    ],
)
async def test_a_corrupted_json_file_is_a_session_error_and_is_left_alone(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / "u_s.json"
    path.write_bytes(content)
    memory = make_memory()
    await memory.add(Msg("user", "kept", "user"))
    with pytest.raises(SessionError, match=expected) as info:
        await JSONSession(tmp_path).load_session_state("s", user_id="u", memory=memory)
    assert str(path) in str(info.value)
    assert path.read_bytes() == content
    assert [m.get_text_content() for m in await memory.get_memory()] == ["kept"]


async def test_a_json_session_that_cannot_write_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from agentscope_rt.session import _json_session

    session = JSONSession(tmp_path)
    memory = make_memory()
    await memory.add(Msg("user", "old", "user"))
    await session.save_session_state("s", memory=memory)
    before = (tmp_path / "s.json").read_bytes()

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    # The disk is the boundary: it fills up while the new state is being flushed.
    monkeypatch.setattr(_json_session.os, "fsync", disk_full)
    await memory.add(Msg("user", "new", "user"))
    with pytest.raises(SessionError, match="No space left"):
        await session.save_session_state("s", memory=memory)
    assert (tmp_path / "s.json").read_bytes() == before
    assert _names(tmp_path) == ["s.json"]


# -- SQLite ---------------------------------------------------------------------------------


async def test_sqlite_session_lists_and_deletes_sessions(tmp_path: Path) -> None:
    session = SQLiteSession(tmp_path / "db" / "sessions.db")
    await session.save_session_state("s1", user_id="alice", memory=make_memory())
    await session.save_session_state("s2", user_id="alice", memory=make_memory())
    await session.save_session_state("s1", user_id="bob", memory=make_memory())
    assert await session.list_sessions() == [("alice", "s1"), ("alice", "s2"), ("bob", "s1")]
    assert await session.list_sessions("bob") == [("bob", "s1")]
    assert await session.delete_session("s1", user_id="alice") is True
    assert await session.delete_session("s1", user_id="alice") is False
    assert await session.list_sessions("alice") == [("alice", "s2")]


def test_sqlite_session_refuses_an_in_memory_database() -> None:
    with pytest.raises(SessionError, match="database file"):
        SQLiteSession(":memory:")


async def test_a_corrupted_sqlite_row_is_a_session_error(tmp_path: Path) -> None:
    import sqlite3

    session = SQLiteSession(tmp_path / "s.db")
    await session.save_session_state("s", memory=make_memory())
    with sqlite3.connect(tmp_path / "s.db") as connection:
        connection.execute("UPDATE agentscope_session SET state = '{broken'")
    with pytest.raises(SessionError, match="not valid JSON"):
        await session.load_session_state("s", memory=make_memory())


# -- Redis ----------------------------------------------------------------------------------


async def test_redis_session_uses_agentscope_keys_and_a_sliding_ttl(redis_port: int) -> None:
    import redis

    async with RedisSession(
        host="127.0.0.1", port=redis_port, key_prefix="app:", key_ttl=100
    ) as session:
        await session.save_session_state("s1", memory=make_memory())
        client = redis.Redis(host="127.0.0.1", port=redis_port)
        key = "app:user_id:default_user:session:s1:state"
        assert client.keys("*") == [key.encode()]
        assert json.loads(client.get(key)) == {"memory": make_memory().state_dict()}
        client.expire(key, 10)
        await session.load_session_state("s1", memory=make_memory())
        assert client.ttl(key) > 10  # the load renewed the expiry
        client.close()


async def test_a_redis_session_cancelled_mid_use_still_closes_its_connections(
    redis_port: int,
) -> None:
    # The close of ``async with`` runs in the cancelled scope: it must still disconnect.
    before = await anyio.to_thread.run_sync(redis_clients, redis_port)
    session = RedisSession(host="127.0.0.1", port=redis_port)
    await used_then_cancelled(session, lambda s: s.save_session_state("s1", memory=make_memory()))
    assert await anyio.to_thread.run_sync(redis_clients, redis_port) == before


async def test_redis_session_errors_name_the_server_not_the_password(tmp_path: Path) -> None:
    port = _unused_port()
    session = RedisSession(host="127.0.0.1", port=port, password="s3cret-pass")
    assert "s3cret" not in repr(session)
    with pytest.raises(SessionError) as info:
        await session.save_session_state("s", memory=make_memory())
    assert f"127.0.0.1:{port}" in str(info.value)
    assert "s3cret" not in str(info.value)
    await session.aclose()


def test_redis_session_refuses_an_asyncio_pool() -> None:
    import redis.asyncio

    with pytest.raises(TypeError, match="synchronous ConnectionPool"):
        RedisSession(connection_pool=redis.asyncio.ConnectionPool())


def _unused_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
