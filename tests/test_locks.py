"""The lock of objects that outlive an event loop (``agentscope_rt._locks.FairLock``, the
agent's call lock among them): arrival order, a waiter cancelled at hand-over passes it on, a
cancelled waiter leaves it usable, and one lock serves asyncio and then trio."""

from __future__ import annotations

import asyncio

import anyio
import anyio.lowlevel
import pytest
import trio
from anyio import wait_all_tasks_blocked

from agentscope_rt._locks import FairLock


async def test_waiters_are_served_in_arrival_order() -> None:
    lock = FairLock()
    await lock.acquire()
    order: list[int] = []

    async def waiter(index: int) -> None:
        await lock.acquire()
        order.append(index)
        await anyio.lowlevel.checkpoint()
        lock.release()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for index in range(5):
                tg.start_soon(waiter, index)
                await wait_all_tasks_blocked()
            lock.release()
    assert order == [0, 1, 2, 3, 4]
    assert not lock.held and not lock.waiters


async def test_waiter_cancelled_as_it_is_handed_the_lock_passes_it_on() -> None:
    lock = FairLock()
    await lock.acquire()
    order: list[str] = []
    b_scope = anyio.CancelScope()

    async def b() -> None:
        with b_scope:
            await lock.acquire()
            # If the hand-over won the race, b holds the lock until its next checkpoint.
            order.append("b")
            try:
                await anyio.lowlevel.checkpoint()
            finally:
                lock.release()

    async def c() -> None:
        await lock.acquire()
        order.append("c")
        lock.release()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(b)
            await wait_all_tasks_blocked()
            tg.start_soon(c)
            await wait_all_tasks_blocked()
            lock.release()  # hands the lock to b ...
            b_scope.cancel()  # ... which is cancelled before it runs again
    assert b_scope.cancel_called
    assert order[-1] == "c" and order.count("c") == 1
    assert not lock.held and not lock.waiters


async def test_waiter_cancelled_while_waiting_leaves_the_line() -> None:
    lock = FairLock()
    await lock.acquire()
    scope = anyio.CancelScope()

    async def waiter() -> None:
        with scope:
            await lock.acquire()

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await wait_all_tasks_blocked()
        scope.cancel()
    assert scope.cancelled_caught
    assert not lock.waiters and lock.held
    lock.release()
    assert not lock.held


async def test_a_cancelled_waiter_leaves_the_lock_usable_in_order() -> None:
    lock = FairLock()
    order: list[str] = []
    scope = anyio.CancelScope()

    async def waiter(name: str, cancellable: bool = False) -> None:
        with scope if cancellable else anyio.CancelScope():
            async with lock:
                order.append(name)

    with anyio.fail_after(5):
        async with lock, anyio.create_task_group() as tg:
            for name in ("a", "b", "c"):
                tg.start_soon(waiter, name, name == "b")
                await wait_all_tasks_blocked()
            scope.cancel()
            await wait_all_tasks_blocked()
            assert len(lock.waiters) == 2
            lock.release()
            await wait_all_tasks_blocked()
            await lock.acquire()
        assert order == ["a", "c"]
        async with lock:
            order.append("again")
    assert order == ["a", "c", "again"]
    assert not lock.held and not lock.waiters


async def test_try_acquire_takes_only_a_free_lock_and_never_jumps_the_line() -> None:
    lock = FairLock()
    assert lock.try_acquire() and lock.locked()
    assert not lock.try_acquire()
    got: list[str] = []

    async def waiter() -> None:
        async with lock:
            got.append("waiter")

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await wait_all_tasks_blocked()
        lock.release()  # handed to the waiter, which has not run yet
        assert not lock.try_acquire()
    assert got == ["waiter"] and not lock.locked()


def test_releasing_a_free_lock_raises() -> None:
    lock = FairLock()
    with pytest.raises(RuntimeError, match="not held"):
        lock.release()
    assert not lock.held


def test_one_lock_serves_asyncio_then_trio_under_contention() -> None:
    lock = FairLock()
    order: list[tuple[str, int]] = []

    async def contend(tag: str) -> None:
        async def worker(index: int) -> None:
            async with lock:
                order.append((tag, index))
                await anyio.lowlevel.checkpoint()

        with anyio.fail_after(5):
            async with lock:
                async with anyio.create_task_group() as tg:
                    for index in range(4):
                        tg.start_soon(worker, index)
                        await wait_all_tasks_blocked()
                    lock.release()
                await lock.acquire()  # released by the context manager

    asyncio.run(contend("asyncio"))
    trio.run(contend, "trio")
    anyio.run(contend, "again", backend="asyncio")
    assert order == [(tag, i) for tag in ("asyncio", "trio", "again") for i in range(4)]
    assert not lock.held and not lock.waiters
