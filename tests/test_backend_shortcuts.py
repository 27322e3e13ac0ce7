"""The backend-aware task group behaves like anyio's on both event loops."""

from __future__ import annotations

import anyio
import pytest

from agentscope_rt._backend import open_task_group


async def test_the_group_waits_for_every_task(anyio_backend: str) -> None:
    done: list[int] = []

    async def work(index: int) -> None:
        await anyio.sleep(0.01 * (3 - index))
        done.append(index)

    async with open_task_group() as group:
        for index in range(3):
            group.start_soon(work, index)
    assert sorted(done) == [0, 1, 2]
    if anyio_backend == "trio":
        import trio

        async with open_task_group() as group:
            assert isinstance(group, trio.Nursery)


async def test_a_failing_task_cancels_the_others_and_leaves_in_an_exception_group() -> None:
    cancelled: list[str] = []

    async def long() -> None:
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            cancelled.append("long")
            raise

    async def boom() -> None:
        await anyio.sleep(0.01)
        raise ValueError("boom")

    with pytest.raises(ExceptionGroup) as caught:
        async with open_task_group() as group:
            group.start_soon(long)
            group.start_soon(boom)
    assert [type(e) for e in caught.value.exceptions] == [ValueError]
    assert cancelled == ["long"]


async def test_a_cancellation_from_outside_stops_every_task() -> None:
    started = 0

    async def long() -> None:
        nonlocal started
        started += 1
        await anyio.sleep(30)

    with anyio.move_on_after(0.05) as scope:
        async with open_task_group() as group:
            for _ in range(3):
                group.start_soon(long)
    assert scope.cancelled_caught and started == 3
