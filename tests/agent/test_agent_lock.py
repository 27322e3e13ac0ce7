"""The agent's call lock: arrival order, and a waiter cancelled at hand-over passes it on."""

from __future__ import annotations

import anyio
import anyio.lowlevel
from anyio import wait_all_tasks_blocked

from agentscope_rt.agent._agent_base import _FairLock


async def test_waiters_are_served_in_arrival_order() -> None:
    lock = _FairLock()
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
    lock = _FairLock()
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
    lock = _FairLock()
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
