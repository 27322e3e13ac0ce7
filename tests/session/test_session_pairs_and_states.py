"""Sessions keep every (user, session) pair apart, read unreadable states as SessionError, and
keep working across event loops.

On every storage (JSON files, SQLite, Redis): ids that AgentScope's naming would glue into the
same file name or key get storage of their own; AgentScope's existing files and keys are read
where their name can belong to one pair only (or when asked to); a state nested thousands of
levels deep or holding a huge integer is a SessionError naming the session; a module failing
in its own ``load_state_dict`` leaves every module as it was; ids too long for a file name
are saved anyway; and a save cancelled while it waits leaves nothing behind.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.exception import SessionError
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg
from agentscope_rt.module import StateModule
from agentscope_rt.session import JSONSession, RedisSession, SessionBase, SQLiteSession
from tests._servers import RedisServer

KINDS = ["json", "sqlite", "redis"]
AGENTSCOPE_FILES = Path(__file__).parent.parent / "session" / "data" / "agentscope_1_0_21"


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    yield server
    server.stop()


def _open(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> SessionBase:
    if kind == "json":
        return JSONSession(tmp_path / "sessions")
    if kind == "sqlite":
        return SQLiteSession(tmp_path / "sessions.db")
    server: RedisServer = request.getfixturevalue("redis_server")
    server.flush()
    return RedisSession(host="127.0.0.1", port=server.port)


@pytest.fixture(params=KINDS)
async def session(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionBase]:
    async with _open(request.param, tmp_path, request) as made:
        yield made


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


async def _memory(*texts: str) -> InMemoryMemory:
    memory = InMemoryMemory()
    for text in texts:
        await memory.add(Msg("user", text, "user"))
    return memory


async def _texts(memory: InMemoryMemory) -> list[str | None]:
    return [m.get_text_content() for m in await memory.get_memory()]


async def _store_raw(session: SessionBase, session_id: str, user_id: str, data: bytes) -> None:
    """Put *data* where *session* keeps that session, as a foreign writer would."""
    await session.save_session_state(session_id, user_id, memory=InMemoryMemory())
    if isinstance(session, JSONSession):
        session.get_save_path(session_id, user_id).write_bytes(data)
    elif isinstance(session, SQLiteSession):
        import sqlite3

        with sqlite3.connect(session.path) as connection:
            connection.execute(
                "UPDATE agentscope_session SET state = ? WHERE user_id = ? AND session_id = ?",
                (data.decode(), user_id, session_id),
            )
        connection.close()
    else:
        assert isinstance(session, RedisSession)
        session.get_client().set(session.get_session_key(session_id, user_id), data)


# -- every pair has storage of its own ------------------------------------------------------

# Pairs that AgentScope's naming (`{user}_{session}.json`, `user_id:{u}:session:{s}:state`)
# or a naive escaping would store in one place.
COLLIDING_PAIRS = [
    [("john", "doe_chat1"), ("john_doe", "chat1"), ("", "john_doe_chat1")],
    [("", "alice_c2"), ("alice", "c2")],
    [("a", "b_c"), ("a", "b%5Fc"), ("a_b", "c"), ("a%5Fb", "c"), ("", "a_b_c"), ("", "a%5Fb_c")],
    [("a:session:b", "c"), ("a", "b:session:c"), ("a:session:b:session:c", "x")],
    [("u", "s%3As"), ("u", "s:s"), ("u:s", "s")],
]


@pytest.mark.parametrize("pairs", COLLIDING_PAIRS, ids=lambda p: "|".join(map(str, p)))
async def test_pairs_that_agentscope_would_glue_together_keep_their_own_state(
    session: SessionBase, pairs: list[tuple[str, str]]
) -> None:
    for user_id, session_id in pairs:
        memory = await _memory(f"{user_id}/{session_id}")
        await session.save_session_state(session_id, user_id, memory=memory)
    for user_id, session_id in pairs:
        memory = InMemoryMemory()
        await session.load_session_state(session_id, user_id, allow_not_exist=False, memory=memory)
        assert await _texts(memory) == [f"{user_id}/{session_id}"]


async def test_a_json_session_gives_colliding_pairs_different_files(tmp_path: Path) -> None:
    session = JSONSession(tmp_path)
    paths = {session.get_save_path(s, u) for pairs in COLLIDING_PAIRS for u, s in pairs}
    assert len(paths) == sum(len(pairs) for pairs in COLLIDING_PAIRS)
    assert all(path.parent == tmp_path for path in paths)


async def test_plain_ids_keep_agentscope_names_and_keys(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    json_session = JSONSession(tmp_path)
    assert json_session.get_save_path("chat", "bob").name == "bob_chat.json"
    assert json_session.get_save_path("solo").name == "solo.json"
    async with RedisSession(host="127.0.0.1", port=redis_server.port, key_prefix="p:") as redis:
        assert redis.get_session_key("s1", "u1") == "p:user_id:u1:session:s1:state"


# -- AgentScope's files and keys ------------------------------------------------------------


async def _load_fixture(session: JSONSession, session_id: str, user_id: str) -> InMemoryMemory:
    notes = InMemoryMemory()
    await session.load_session_state(session_id, user_id, allow_not_exist=False, notes=notes)
    return notes


async def test_an_ambiguous_agentscope_file_is_read_only_when_asked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    shutil.copytree(AGENTSCOPE_FILES, tmp_path, dirs_exist_ok=True)
    # `alice_chat_1.json` may be alice's chat_1, alice_chat's 1, or the user-less alice_chat_1.
    for user_id, session_id in [("alice", "chat_1"), ("alice_chat", "1"), ("", "alice_chat_1")]:
        with pytest.raises(SessionError, match="read_agentscope_names") as info:
            await _load_fixture(JSONSession(tmp_path), session_id, user_id)
        assert "alice_chat_1.json" in str(info.value)
    memory = await _memory("mine")
    with caplog.at_level(logging.WARNING, logger="agentscope_rt.session"):
        await JSONSession(tmp_path).load_session_state("chat_1", "alice", notes=memory)
    assert await _texts(memory) == ["mine"]
    assert "read_agentscope_names" in caplog.text

    trusting = JSONSession(tmp_path, read_agentscope_names=True)
    assert len(await (await _load_fixture(trusting, "chat_1", "alice")).get_memory()) > 0
    assert await _texts(await _load_fixture(trusting, "chat_2", "")) is not None


async def test_the_new_file_of_a_pair_wins_over_its_agentscope_file(tmp_path: Path) -> None:
    (tmp_path / "john_doe_chat1.json").write_text(
        json.dumps({"memory": (await _memory("john_doe's")).state_dict()})
    )
    trusting = JSONSession(tmp_path, read_agentscope_names=True)
    await trusting.save_session_state("doe_chat1", "john", memory=await _memory("john's"))
    memory = InMemoryMemory()
    await trusting.load_session_state("doe_chat1", "john", memory=memory)
    assert await _texts(memory) == ["john's"]
    # Without the option, john never sees the file AgentScope wrote for john_doe.
    untrusting = JSONSession(tmp_path)
    memory = InMemoryMemory()
    with pytest.raises(SessionError):
        await untrusting.load_session_state("chat1", "john_doe", False, memory=memory)


async def test_an_unambiguous_agentscope_file_is_read(tmp_path: Path) -> None:
    # Only the user-less session 'a%b' can be named 'a%b.json', and no pair's new name is it.
    (tmp_path / "a%b.json").write_text(
        json.dumps({"memory": (await _memory("percent")).state_dict()})
    )
    session = JSONSession(tmp_path)
    memory = InMemoryMemory()
    await session.load_session_state("a%b", allow_not_exist=False, memory=memory)
    assert await _texts(memory) == ["percent"]
    # Saved back, it moves to its new name; the AgentScope file is left as it was.
    await session.save_session_state("a%b", memory=memory)
    assert session.get_save_path("a%b").name == "a%25b.json"
    assert _names(tmp_path) == ["a%25b.json", "a%b.json"]


async def test_an_agentscope_file_named_as_another_pairs_new_file_is_not_read(
    tmp_path: Path,
) -> None:
    # AgentScope named the user-less 'a%25b' 'a%25b.json', our name for the user-less 'a%b'.
    session = JSONSession(tmp_path)
    await session.save_session_state("a%b", memory=await _memory("a%b's"))
    memory = InMemoryMemory()
    await session.load_session_state("a%25b", memory=memory)
    assert await _texts(memory) == []


async def test_redis_reads_an_agentscope_key_that_can_belong_to_one_pair_only(
    redis_server: RedisServer,
) -> None:
    redis_server.flush()
    async with RedisSession(host="127.0.0.1", port=redis_server.port) as session:
        client = session.get_client()
        state = json.dumps({"memory": (await _memory("legacy")).state_dict()})
        client.set("user_id:a:b:session:c:state", state)
        memory = InMemoryMemory()
        await session.load_session_state("c", "a:b", allow_not_exist=False, memory=memory)
        assert await _texts(memory) == ["legacy"]
        # This key may be ('a', 'b:session:c')'s or ('a:session:b', 'c')'s: read by neither.
        client.set("user_id:a:session:b:session:c:state", state)
        for user_id, session_id in [("a", "b:session:c"), ("a:session:b", "c")]:
            memory = InMemoryMemory()
            await session.load_session_state(session_id, user_id, memory=memory)
            assert await _texts(memory) == []


# -- states too deep or too large to read --------------------------------------------------

DEEP = b'{"memory": {"content": ' + b"[" * 2000 + b"]" * 2000 + b"}}"
HUGE_INT = b'{"memory": {"content": [], "n": ' + b"7" * 5000 + b"}}"


@pytest.mark.parametrize("data", [DEEP, HUGE_INT], ids=["deep", "huge-int"])
async def test_an_unreadable_state_is_a_session_error(session: SessionBase, data: bytes) -> None:
    await _store_raw(session, "victim-session", "u", data)
    memory = await _memory("kept")
    with pytest.raises(SessionError, match="victim-session"):
        await session.load_session_state("victim-session", "u", memory=memory)
    assert await _texts(memory) == ["kept"]


class _Refuses(StateModule):
    """A user module whose own load_state_dict fails with a plain ValueError."""

    def __init__(self) -> None:
        super().__init__()
        self.value = 1
        self.register_state("value")

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        raise ValueError("refusing this state")


async def test_a_module_failing_with_any_exception_rolls_back_the_whole_load(
    session: SessionBase,
) -> None:
    await session.save_session_state(
        "s", "u", first=await _memory("saved"), refuses=_Refuses(), last=await _memory("x")
    )
    first, last = await _memory("current"), await _memory("current too")
    with pytest.raises(SessionError, match="refusing this state") as info:
        await session.load_session_state("s", "u", first=first, refuses=_Refuses(), last=last)
    assert isinstance(info.value.__cause__, ValueError)
    assert await _texts(first) == ["current"]
    assert await _texts(last) == ["current too"]


# -- long ids -------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [1, 200, 232, 233, 240, 250, 255, 256, 1000, 5000])
async def test_ids_of_any_length_are_saved_and_loaded(session: SessionBase, length: int) -> None:
    long_id = "s" * length
    twin = "s" * (length - 1) + "t"  # the same long prefix: must not share a hashed name
    await session.save_session_state(long_id, "u" * length, memory=await _memory("one"))
    await session.save_session_state(twin, "u" * length, memory=await _memory("two"))
    await session.save_session_state(long_id, "", memory=await _memory("three"))
    for session_id, user_id, text in [
        (long_id, "u" * length, "one"),
        (twin, "u" * length, "two"),
        (long_id, "", "three"),
    ]:
        memory = InMemoryMemory()
        await session.load_session_state(session_id, user_id, False, memory=memory)
        assert await _texts(memory) == [text]


async def test_long_non_ascii_ids_are_saved(tmp_path: Path) -> None:
    session = JSONSession(tmp_path)
    session_id = "会话" * 50  # 100 characters, 300 bytes in UTF-8
    await session.save_session_state(session_id, "用户", memory=await _memory("hi"))
    memory = InMemoryMemory()
    await session.load_session_state(session_id, "用户", False, memory=memory)
    assert await _texts(memory) == ["hi"]
    assert len(session.get_save_path(session_id, "用户").name.encode()) <= 255


# -- bad ids --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("session_id", "user_id", "error"),
    [
        ("", "u", SessionError),
        (".", "u", SessionError),
        ("..", "", SessionError),
        ("a/b", "u", SessionError),
        ("s", "a/b", SessionError),
        ("a\\b", "u", SessionError),
        ("a\x00b", "u", SessionError),
        ("\ud800", "u", SessionError),
        ("s", "\udcff", SessionError),
        (1, "u", TypeError),
        ("s", None, TypeError),
    ],
)
async def test_bad_ids_are_refused_before_anything_is_stored(
    session: SessionBase, session_id: Any, user_id: Any, error: type[Exception]
) -> None:
    with pytest.raises(error):
        await session.save_session_state(session_id, user_id, memory=InMemoryMemory())
    with pytest.raises(error):
        await session.load_session_state(session_id, user_id, memory=InMemoryMemory())


# -- locks and event loops ------------------------------------------------------------------


def test_a_json_save_cancelled_while_waiting_leaks_no_lock(tmp_path: Path) -> None:
    session = JSONSession(tmp_path)
    path = session.get_save_path("s", "u")

    async def cancel_a_waiting_save() -> None:
        async with session._file_lock(path), anyio.create_task_group() as group:
            group.start_soon(session.save_session_state, "s", "u")
            await anyio.wait_all_tasks_blocked()
            group.cancel_scope.cancel()
        assert session._locks == {}

    async def save_and_load() -> None:
        with anyio.fail_after(30):
            await session.save_session_state("s", "u", memory=await _memory("later"))
            memory = InMemoryMemory()
            await session.load_session_state("s", "u", False, memory=memory)
            assert await _texts(memory) == ["later"]
        assert session._locks == {}

    anyio.run(cancel_a_waiting_save, backend="asyncio")
    anyio.run(save_and_load, backend="trio")
    anyio.run(cancel_a_waiting_save, backend="trio")
    anyio.run(save_and_load, backend="asyncio")


def test_a_sqlite_session_that_failed_to_start_works_under_the_other_loop(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "db"
    blocker.write_text("a file where the database folder should be")
    session = SQLiteSession(blocker / "sessions.db")

    async def fails() -> None:
        with pytest.raises(SessionError):
            await session.save_session_state("s", memory=InMemoryMemory())

    async def works() -> None:
        await session.save_session_state("s", memory=await _memory("ok"))
        memory = InMemoryMemory()
        await session.load_session_state("s", "", False, memory=memory)
        assert await _texts(memory) == ["ok"]

    anyio.run(fails, backend="asyncio")
    blocker.unlink()
    anyio.run(works, backend="trio")
