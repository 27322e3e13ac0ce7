"""The run stores keep one contract (agentscope_rt.durable.RunStore): SQLite in a file,
PostgreSQL and Redis on real servers on 127.0.0.1, each test run on all three.

Ownership across processes is checked with a child process that holds a run (``_hold.py``):
a second owner is refused while it lives, and once it is killed (SIGKILL) the run can be
acquired again, with the step it recorded: at once for SQLite and PostgreSQL, once its lease
has expired for Redis.
"""

from __future__ import annotations

import math
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from agentscope_rt.durable import (
    DurableRunError,
    PostgresRunStore,
    RedisRunStore,
    RunStore,
    SQLiteRunStore,
    StepRecord,
    durable_run,
)
from agentscope_rt.message import Msg
from agentscope_rt.pipeline import MsgHub, sequential_pipeline
from tests._servers import free_port

from . import _hold
from ._stores import KINDS
from ._world import World, transcript
from .conftest import StoreFactory

pytestmark = pytest.mark.anyio

PATIENCE_S = 60.0
"""Turns a hang into a failure; never a bound on how fast a store must be."""


def record(key: str, seq: int, status: str = "done", payload: Any = None) -> StepRecord:
    return StepRecord(key, "step", status, f"fp-{key}", payload, seq)


async def open_run(store: RunStore, user_id: str, run_id: str, *records: StepRecord) -> None:
    """Acquire the run, write *records*, release it as finished."""
    await store.acquire(user_id, run_id)
    try:
        for each in records:
            await store.put_step(user_id, run_id, each)
    finally:
        await store.release(user_id, run_id, "finished")


# -- ownership --------------------------------------------------------------------------------


async def test_acquire_marks_the_run_running_and_release_records_how_it_ended(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    info = await store.acquire("u", "r")
    assert (info.user_id, info.run_id, info.status, info.steps, info.last_step) == (
        "u",
        "r",
        "running",
        0,
        None,
    )
    assert (await store.get_run("u", "r")) == info
    await store.release("u", "r", "failed")
    ended = await store.get_run("u", "r")
    assert ended is not None and ended.status == "failed"
    assert ended.created_at == info.created_at

    again = await store.acquire("u", "r")  # a failed run is resumable
    assert again.status == "running" and again.created_at == info.created_at
    await store.release("u", "r", "finished")
    finished = await store.get_run("u", "r")
    assert finished is not None and finished.status == "finished"


async def test_a_run_open_in_this_process_is_refused_a_second_time(
    make_store: StoreFactory,
) -> None:
    store, other = make_store(), make_store()
    await store.acquire("u", "r")
    try:
        with pytest.raises(DurableRunError, match="already open in this process"):
            await store.acquire("u", "r")
        # Another store on the same storage is another owner, refused as well.
        with pytest.raises(DurableRunError, match="open in another process"):
            await other.acquire("u", "r")
        with pytest.raises(DurableRunError, match="is open"):
            await store.delete_run("u", "r")
        with pytest.raises(DurableRunError, match="open in another process"):
            await other.delete_run("u", "r")
        await other.acquire("u", "r2")  # another run is free
        await other.release("u", "r2", "finished")
    finally:
        await store.release("u", "r", "finished")
    await other.acquire("u", "r")
    await other.release("u", "r", "finished")


async def _child(
    kind: str, location: str, user_id: str, run_id: str, lease: float | None = None
) -> tuple[Process, str]:
    """A child process that tries to hold the run, and what it said: ``held`` (it holds the
    run and recorded ``held#1``) or ``refused``."""
    argv = [sys.executable, _hold.__file__, kind, location, user_id, run_id]
    process = await anyio.open_process([*argv, *([] if lease is None else [str(lease)])])
    assert process.stdout is not None
    seen = b""
    with anyio.fail_after(PATIENCE_S):
        while not seen.endswith(b"\n"):
            seen += await process.stdout.receive()
    return process, seen.decode().strip()


async def _hold_in_child(
    kind: str, location: str, user_id: str, run_id: str, lease: float | None = None
) -> Process:
    """A child process that holds the run (and recorded ``held#1``) once this returns."""
    process, said = await _child(kind, location, user_id, run_id, lease)
    assert said == "held"
    return process


async def _kill(process: Process) -> None:
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            process.send_signal(signal.SIGKILL)
        await process.wait()
        await process.aclose()


async def test_closing_another_store_of_the_process_keeps_the_run_held(
    make_store: StoreFactory, store_kind: str, store_location: str
) -> None:
    # (POSIX locks belong to the process: a store closing its descriptor of the lock file
    # would drop the locks of every store of the process on it.)
    store, other = make_store(), make_store()
    await store.acquire("u", "r")
    try:
        await open_run(other, "u", "another")
        await other.aclose()
        child, said = await _child(store_kind, store_location, "u", "r")
        await _kill(child)
        assert said == "refused"
    finally:
        await store.release("u", "r", "finished")


async def test_a_run_held_by_another_process_is_refused(
    make_store: StoreFactory, store_kind: str, store_location: str
) -> None:
    child = await _hold_in_child(store_kind, store_location, "u", "r")
    try:
        store = make_store()
        with pytest.raises(DurableRunError, match="open in another process") as refused:
            await store.acquire("u", "r")
        if store_kind == "redis":
            assert "lease expires" in str(refused.value)
        with pytest.raises(DurableRunError, match="open in another process"):
            await store.delete_run("u", "r")
        # What the other process recorded is readable meanwhile.
        assert [r.key for r in await store.load_steps("u", "r")] == ["held#1"]
        info = await store.get_run("u", "r")
        assert info is not None and info.status == "running" and info.steps == 1
    finally:
        await _kill(child)


async def test_a_killed_owner_leaves_its_records_and_the_run_can_be_acquired_again(
    make_store: StoreFactory, store_kind: str, store_location: str
) -> None:
    # Redis: a short lease, so that the killed owner's lease soon expires.
    child = await _hold_in_child(store_kind, store_location, "u", "r", lease=0.5)
    await _kill(child)
    store = make_store()
    attempts = 0
    with anyio.fail_after(PATIENCE_S):
        while True:
            attempts += 1
            try:
                info = await store.acquire("u", "r")
                break
            except DurableRunError as exc:
                # PostgreSQL ends the dead client's session a moment after the kill.
                assert store_kind != "sqlite", exc
                assert "open in another process" in str(exc)
                await anyio.sleep(0.05)
    assert info.steps == 1 and info.last_step == "held#1"
    [held] = await store.load_steps("u", "r")
    assert (held.key, held.payload, held.seq) == ("held#1", [1], 1)
    await store.put_step("u", "r", record("next#1", 2))
    await store.release("u", "r", "finished")
    assert [r.key for r in await store.load_steps("u", "r")] == ["held#1", "next#1"]


# -- records ----------------------------------------------------------------------------------


async def test_put_step_replaces_the_record_with_the_same_key(make_store: StoreFactory) -> None:
    store = make_store()
    await store.acquire("u", "r")
    await store.put_step("u", "r", record("A#1", 1, payload={"reply": "hi"}))
    await store.put_step("u", "r", record("A#1/tool:c1", 2, status="started"))
    await store.put_step("u", "r", record("dice#1", 3, payload=4))
    await store.put_step("u", "r", record("A#1/tool:c1", 4, payload={"content": ["done"]}))
    await store.release("u", "r", "finished")
    steps = await store.load_steps("u", "r")
    assert [(s.key, s.status, s.seq, s.payload) for s in steps] == [
        ("A#1", "done", 1, {"reply": "hi"}),
        ("dice#1", "done", 3, 4),
        ("A#1/tool:c1", "done", 4, {"content": ["done"]}),
    ]
    assert all(s.fingerprint == f"fp-{s.key}" and s.kind == "step" and s.at for s in steps)
    info = await store.get_run("u", "r")
    assert info is not None and (info.steps, info.last_step) == (3, "A#1/tool:c1")


async def test_load_steps_is_in_seq_order_whatever_the_order_of_the_writes(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    # Concurrent agents may finish out of order: the writes need not follow seq.
    order = [5, 2, 9, 1, 7, 3]
    await open_run(store, "u", "r", *(record(f"k{seq}", seq, payload=seq) for seq in order))
    loaded = await store.load_steps("u", "r")
    assert [s.seq for s in loaded] == sorted(order)
    assert [s.payload for s in loaded] == sorted(order)
    assert await store.load_steps("u", "unknown") == []


async def test_put_step_needs_the_run_acquired(make_store: StoreFactory) -> None:
    store = make_store()
    with pytest.raises(DurableRunError, match="acquire it"):
        await store.put_step("u", "r", record("A#1", 1))
    await open_run(store, "u", "r")
    with pytest.raises(DurableRunError, match="acquire it"):
        await store.put_step("u", "r", record("A#1", 1))  # released
    assert await store.load_steps("u", "r") == []


@pytest.mark.parametrize("payload", [object(), float("nan"), {"set": {1, 2}}, {1j: "x"}])
async def test_a_payload_that_is_not_json_data_is_refused_and_nothing_is_written(
    make_store: StoreFactory, payload: Any
) -> None:
    store = make_store()
    await store.acquire("u", "r")
    try:
        await store.put_step("u", "r", record("ok#1", 1, payload=[1]))
        with pytest.raises(DurableRunError, match="'bad#1': its result is not JSON data"):
            await store.put_step("u", "r", record("bad#1", 2, payload=payload))
        # Nor does it replace the record it would have replaced.
        with pytest.raises(DurableRunError, match="not JSON data"):
            await store.put_step("u", "r", record("ok#1", 3, payload=payload))
    finally:
        await store.release("u", "r", "failed")
    assert [(s.key, s.payload) for s in await store.load_steps("u", "r")] == [("ok#1", [1])]
    info = await store.get_run("u", "r")
    assert info is not None and (info.steps, info.last_step) == (1, "ok#1")


async def test_a_batch_of_records_is_written_at_once_or_none_of_it(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    await store.acquire("u", "r")
    try:
        await store.put_step("u", "r", record("A#1/tool:c1", 1, status="started"))
        batch = [record("A#1/chat#1", 2), record("A#1/tool:c1", 3), record("A#1", 4)]
        await store.put_steps("u", "r", batch)
        bad = [record("B#1", 5), record("B#1/chat#1", 6, payload={1})]
        with pytest.raises(DurableRunError, match="'B#1/chat#1': its result is not JSON"):
            await store.put_steps("u", "r", bad)
    finally:
        await store.release("u", "r", "finished")
        await store.aclose()
    steps = await store.load_steps("u", "r")
    assert [(s.key, s.status, s.seq) for s in steps] == [
        ("A#1/chat#1", "done", 2),
        ("A#1/tool:c1", "done", 3),
        ("A#1", "done", 4),
    ]
    # Counted by key: the tool's record replaced its started record.
    info = await store.get_run("u", "r")
    assert info is not None and (info.steps, info.last_step) == (3, "A#1")


# -- listing and deleting ---------------------------------------------------------------------


async def test_list_runs_per_user_and_of_everyone_latest_first(make_store: StoreFactory) -> None:
    store = make_store()
    assert await store.list_runs() == [] and await store.list_runs("alice") == []
    await open_run(store, "alice", "one", record("s#1", 1))
    await open_run(store, "bob", "two")
    await open_run(store, "alice", "three", record("s#1", 1), record("s#2", 2))
    alice = await store.list_runs("alice")
    assert [(r.run_id, r.steps, r.status) for r in alice] == [
        ("three", 2, "finished"),
        ("one", 1, "finished"),
    ]
    everyone = await store.list_runs()
    assert [(r.user_id, r.run_id) for r in everyone] == [
        ("alice", "three"),
        ("bob", "two"),
        ("alice", "one"),
    ]
    assert await store.list_runs("carol") == []
    assert await store.get_run("alice", "two") is None


async def test_delete_run_removes_the_run_and_its_records(make_store: StoreFactory) -> None:
    store = make_store()
    assert await store.delete_run("u", "r") is False
    await open_run(store, "u", "r", record("s#1", 1))
    await open_run(store, "u", "kept", record("s#1", 1))
    assert await store.delete_run("u", "r") is True
    assert await store.get_run("u", "r") is None
    assert await store.load_steps("u", "r") == []
    assert [r.run_id for r in await store.list_runs("u")] == ["kept"]
    assert await store.delete_run("u", "r") is False
    # A deleted run starts afresh.
    info = await store.acquire("u", "r")
    assert info.steps == 0
    await store.release("u", "r", "finished")


# -- ids --------------------------------------------------------------------------------------

# Pairs that a store joining ids with a separator, unescaped, would confuse.
TRICKY_PAIRS = [
    ("a", "b:c"),
    ("a:b", "c"),
    ("a%3Ab", "c"),
    ("a", "b:steps"),
    ("a/b", "c"),
    ("a", "b/c"),
    ("", "x"),
    ("runs", "x"),
    ("a:x:steps", "y"),
]


async def test_users_never_reach_each_others_runs(make_store: StoreFactory) -> None:
    store = make_store()
    users = sorted({user_id for user_id, _ in TRICKY_PAIRS})
    for user_id, run_id in TRICKY_PAIRS:
        await open_run(store, user_id, run_id, record("who#1", 1, payload=[user_id, run_id]))
    for user_id in users:
        await open_run(store, user_id, "shared", record(f"{user_id}#1", 1, payload=user_id))
    for user_id, run_id in TRICKY_PAIRS:
        [own] = await store.load_steps(user_id, run_id)
        assert own.payload == [user_id, run_id]
    for user_id in users:
        [shared] = await store.load_steps(user_id, "shared")
        assert (shared.key, shared.payload) == (f"{user_id}#1", user_id)
        mine = {run_id for user, run_id in TRICKY_PAIRS if user == user_id} | {"shared"}
        assert {r.run_id for r in await store.list_runs(user_id)} == mine
    assert len(await store.list_runs()) == len(TRICKY_PAIRS) + len(users)
    # One user's run held does not hold the same run id of another user.
    await store.acquire("a", "shared")
    await store.acquire("a:b", "shared")
    await store.release("a", "shared", "finished")
    await store.release("a:b", "shared", "finished")
    assert await store.delete_run("a", "shared")
    assert [r.key for r in await store.load_steps("a:b", "shared")] == ["a:b#1"]


ODD_IDS = [":", "/", "%", "%25", "a:b/c%d", "Zoë 🎲", "日本語", " ", "\t\n", "*", "{x}", "\\"]


async def test_ids_with_odd_characters_are_kept_as_they_are(make_store: StoreFactory) -> None:
    store = make_store()
    for value in ODD_IDS:
        await open_run(store, value, value, record(f"{value}#1", 1, payload=value))
    for value in ODD_IDS:
        [only] = await store.load_steps(value, value)
        assert (only.key, only.payload) == (f"{value}#1", value)
        [run] = await store.list_runs(value)
        assert (run.user_id, run.run_id) == (value, value)
    assert sorted((r.user_id, r.run_id) for r in await store.list_runs()) == sorted(
        (value, value) for value in ODD_IDS
    )


@pytest.mark.parametrize(
    ("user_id", "run_id", "error", "match"),
    [
        ("u", "", DurableRunError, "non-empty run_id"),
        ("u", "a\x00b", DurableRunError, "no store can keep"),
        ("a\x00", "r", DurableRunError, "no store can keep"),
        ("u", "\ud800", DurableRunError, "no store can keep"),
        ("u", 5, TypeError, "run_id must be a str"),
        (None, "r", TypeError, "user_id must be a str"),
    ],
)
async def test_invalid_ids_are_refused_before_the_store_is_touched(
    make_store: StoreFactory, user_id: Any, run_id: Any, error: type[Exception], match: str
) -> None:
    store = make_store()
    for call in (store.acquire, store.load_steps, store.get_run, store.delete_run):
        with pytest.raises(error, match=match):
            await call(user_id, run_id)
    assert await store.list_runs() == []


# -- failures ---------------------------------------------------------------------------------

SECRET = "s3cret-Pa55word"


def _unreachable(kind: str, tmp_path: Path) -> tuple[RunStore, str]:
    """A store that cannot be reached, and the name its errors give it."""
    if kind == "sqlite":
        (tmp_path / "a-file").write_text("")
        path = tmp_path / "a-file" / "runs.db"  # a folder that is a file
        return SQLiteRunStore(path), str(path)
    port = free_port()  # nothing listens there
    if kind == "postgres":
        url = f"postgresql://agent:{SECRET}@127.0.0.1:{port}/runs"
        return PostgresRunStore(url, connect_timeout=5), f"postgresql://agent@127.0.0.1:{port}/runs"
    url = f"redis://:{SECRET}@127.0.0.1:{port}/0"
    return RedisRunStore(url, socket_connect_timeout=5), f"redis://127.0.0.1:{port}/0"


@pytest.mark.parametrize("kind", KINDS)
async def test_an_unreachable_store_is_a_durable_run_error_without_the_password(
    kind: str, tmp_path: Path
) -> None:
    store, name = _unreachable(kind, tmp_path)
    assert SECRET not in repr(store)
    try:
        for call in (store.acquire, store.load_steps, store.get_run, store.delete_run):
            with pytest.raises(DurableRunError) as failed:
                await call("u", "r")
            text = "".join(traceback.format_exception(failed.value))
            assert name in str(failed.value)
            assert SECRET not in text
        with pytest.raises(DurableRunError, match="cannot") as failed:
            async with durable_run("r", store):
                pass
        assert SECRET not in "".join(traceback.format_exception(failed.value))
        if kind != "sqlite":
            assert type(store).__name__ in str(failed.value)
    finally:
        await store.aclose()


# -- Redis: the lease --------------------------------------------------------------------------


@pytest.fixture
async def redis_location(durable_redis_server: Any) -> str:
    durable_redis_server.flush()
    return f"redis://127.0.0.1:{durable_redis_server.port}/0"


async def _until_lapsed(store: RedisRunStore, user_id: str, run_id: str) -> None:
    key = f"durable:{user_id}:{run_id}:lease"
    with anyio.fail_after(PATIENCE_S):
        while True:  # (nothing to wait on but the server's clock)
            if not await anyio.to_thread.run_sync(store.get_client().exists, key):
                return
            await anyio.sleep(store.lease_seconds / 4)


async def test_a_redis_lease_that_lapsed_is_taken_back_when_no_one_took_the_run(
    redis_location: str,
) -> None:
    store = RedisRunStore(redis_location, lease_seconds=0.2)
    try:
        await store.acquire("u", "r")
        await _until_lapsed(store, "u", "r")
        await store.put_step("u", "r", record("late#1", 1))  # takes the lease back
        with pytest.raises(DurableRunError, match="open in another process"):
            await RedisRunStore(redis_location).acquire("u", "r")
        await store.release("u", "r", "finished")
    finally:
        await store.aclose()
    assert [r.key for r in await RedisRunStore(redis_location).load_steps("u", "r")] == ["late#1"]


async def test_a_redis_owner_whose_run_was_taken_over_writes_nothing_more(
    redis_location: str,
) -> None:
    slow = RedisRunStore(redis_location, lease_seconds=0.2)
    other = RedisRunStore(redis_location)
    try:
        await slow.acquire("u", "r")
        await slow.put_step("u", "r", record("a#1", 1))
        await _until_lapsed(slow, "u", "r")
        await other.acquire("u", "r")
        with pytest.raises(DurableRunError, match="taken over by another process"):
            await slow.put_step("u", "r", record("b#1", 2))
        await slow.release("u", "r", "failed")  # leaves the run to its new owner
        info = await other.get_run("u", "r")
        assert info is not None and info.status == "running"
        await other.put_step("u", "r", record("c#1", 2))
        await other.release("u", "r", "finished")
        assert [r.key for r in await other.load_steps("u", "r")] == ["a#1", "c#1"]
    finally:
        await slow.aclose()
        await other.aclose()


def test_a_redis_lease_must_be_positive() -> None:
    for lease in (0, -1, math.nan, True, "30"):
        with pytest.raises(ValueError, match="lease_seconds"):
            RedisRunStore("redis://127.0.0.1:1/0", lease_seconds=lease)  # type: ignore[arg-type]


# -- PostgreSQL: the lock's connection ----------------------------------------------------------


def _on_postgres(url: str, *statements: str) -> Any:
    """Run *statements* on a connection of their own (autocommit); the open connection."""
    import psycopg

    connection = psycopg.connect(url, autocommit=True)
    for statement in statements:
        connection.execute(statement)
    return connection


async def test_a_postgres_owner_that_lost_its_lock_connection_writes_nothing_more(
    durable_postgres_server: Any,
) -> None:
    durable_postgres_server.reset()
    url = f"postgresql://postgres@127.0.0.1:{durable_postgres_server.port}/postgres"
    store, other = PostgresRunStore(url), PostgresRunStore(url)
    try:
        await store.acquire("u", "r")
        await store.put_step("u", "r", record("a#1", 1))

        await anyio.to_thread.run_sync(
            _on_postgres,
            url,
            "SELECT pg_terminate_backend(pid) FROM pg_locks "
            "WHERE locktype = 'advisory' AND pid <> pg_backend_pid()",
        )
        # The lock went with the session: another process may take the run...
        with anyio.fail_after(PATIENCE_S):
            while True:
                try:
                    await other.acquire("u", "r")
                    break
                except DurableRunError:
                    await anyio.sleep(0.05)
        # ... and the first owner, without the lock, writes nothing.
        with pytest.raises(DurableRunError, match="ownership"):
            await store.put_step("u", "r", record("b#1", 2))
        await other.release("u", "r", "finished")
        assert [r.key for r in await other.load_steps("u", "r")] == ["a#1"]
        with pytest.raises(DurableRunError):
            await store.release("u", "r", "failed")
    finally:
        await store.aclose()
        await other.aclose()


async def test_a_postgres_statement_that_waits_too_long_is_cancelled(
    durable_postgres_server: Any,
) -> None:
    durable_postgres_server.reset()
    url = f"postgresql://postgres@127.0.0.1:{durable_postgres_server.port}/postgres"
    store = PostgresRunStore(url, statement_timeout=0.3)
    try:
        await open_run(store, "u", "r")
        # Another session holds the table: the read waits on the server until the timeout.
        blocker = await anyio.to_thread.run_sync(
            _on_postgres, url, "BEGIN", "LOCK TABLE agentscope_runs IN ACCESS EXCLUSIVE MODE"
        )
        try:
            with anyio.fail_after(PATIENCE_S), pytest.raises(DurableRunError, match="timeout"):
                await store.get_run("u", "r")
        finally:
            await anyio.to_thread.run_sync(blocker.close)
        info = await store.get_run("u", "r")  # the store goes on after the failure
        assert info is not None and info.status == "finished"
    finally:
        await store.aclose()


async def test_a_redis_server_that_never_answers_is_a_timeout(redis_location: str) -> None:
    async def accept_and_say_nothing(stream: Any) -> None:
        async with stream:
            await anyio.sleep_forever()

    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with anyio.create_task_group() as group:
            group.start_soon(listener.serve, accept_and_say_nothing)
            store = RedisRunStore(f"redis://127.0.0.1:{port}/0", socket_timeout=0.3)
            try:
                with anyio.fail_after(PATIENCE_S), pytest.raises(DurableRunError, match="imeout"):
                    await store.get_run("u", "r")
            finally:
                await store.aclose()
            group.cancel_scope.cancel()


# -- a whole program, crashed and resumed --------------------------------------------------------


class Crash(Exception):
    """Stands for the death of the process part-way."""


async def play(world: World, store: RunStore, run_id: str, crash_at: int | None = None) -> Any:
    """Two ReAct agents with a tool speak in turn for three rounds in a hub; the program
    dies before round *crash_at*. Returns their memories (contents, not ids)."""
    agents = [world.agent(name) for name in ("Alice", "Bob")]
    announcement = Msg("host", "Begin.", "user")
    async with (
        durable_run(run_id, store, user_id="player"),
        MsgHub(agents, announcement=announcement),
    ):
        for number in range(3):
            if number == crash_at:
                raise Crash
            await sequential_pipeline(agents)
    return await transcript(*agents)


async def test_a_crashed_program_resumes_from_its_records(make_store: StoreFactory) -> None:
    store = make_store()
    reference_world = World()
    reference = await play(reference_world, store, "reference")
    # Each agent's turn: a model call asking for the tool, the tool, a model call answering.
    assert len(reference_world.paid) == 12 and len(reference_world.effects) == 6

    first = World()
    with pytest.raises(Crash):
        await play(first, store, "game", crash_at=2)
    assert len(first.paid) == 8 and first.effects == reference_world.effects[:4]
    crashed = await store.get_run("player", "game")
    assert crashed is not None and crashed.status == "failed"

    # The resumed program pays only for the last round and runs only its tools.
    second = World()
    assert await play(second, make_store(), "game") == reference
    assert second.paid == reference_world.paid[8:]
    assert second.effects == reference_world.effects[4:]
    finished = await store.get_run("player", "game")
    assert finished is not None and finished.status == "finished"
    assert finished.steps == (await store.get_run("player", "reference")).steps  # type: ignore[union-attr]
