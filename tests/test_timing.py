"""The timing helpers of tests/_timing.py catch what they promise to, on both backends."""

from __future__ import annotations

import time

import anyio
import anyio.lowlevel
import pytest

from . import _timing
from ._timing import InFlight, finishes_within, hang_limit, takes_about, takes_at_least


@pytest.fixture
def short_hangs(monkeypatch: pytest.MonkeyPatch) -> float:
    """A hang floor of 0.2 s, so the failing cases fail quickly."""
    monkeypatch.setattr(_timing, "HANG_FLOOR_S", 0.2)
    return 0.2


def test_hang_limit_is_ten_times_the_expected_time_and_at_least_five_seconds() -> None:
    assert hang_limit() == 5.0
    assert hang_limit(0.2) == 5.0
    assert hang_limit(2.0) == 20.0


async def test_takes_at_least_holds_for_a_sleep_and_fails_a_shorter_block() -> None:
    async with takes_at_least(0.05):
        await anyio.sleep(0.05)
    with pytest.raises(AssertionError, match=r"expected at least 0\.5 s"):
        async with takes_at_least(0.5):
            await anyio.sleep(0.01)
    async with takes_about(0.05):
        await anyio.sleep(0.05)


async def test_finishes_within_refuses_a_limit_below_the_floor() -> None:
    with pytest.raises(ValueError, match="below HANG_FLOOR_S"):
        async with finishes_within(1.0, what="anything"):
            pass


async def test_finishes_within_cancels_and_fails_a_hang(short_hangs: float) -> None:
    with pytest.raises(pytest.fail.Exception, match=r"the stuck call did not finish within 0\.2 s"):
        async with finishes_within(short_hangs, what="the stuck call"):
            await anyio.sleep(30)


async def test_finishes_within_fails_a_hang_turned_into_another_error(short_hangs: float) -> None:
    async def converts_cancellation() -> None:
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            raise RuntimeError("gave up") from None

    with pytest.raises(pytest.fail.Exception, match="RuntimeError"):
        async with finishes_within(short_hangs, what="the stuck call"):
            await converts_cancellation()


async def test_finishes_within_passes_a_quick_block_and_its_errors_through() -> None:
    async with finishes_within(what="a quick block"):
        await anyio.lowlevel.checkpoint()
    with pytest.raises(KeyError):
        async with finishes_within(what="a failing block"):
            raise KeyError("mine")


async def test_in_flight_counts_overlapping_async_and_thread_calls() -> None:
    flight = InFlight(together=4)

    def in_thread() -> None:
        with flight.call_in_thread():
            time.sleep(0.01)

    async def in_task() -> None:
        async with flight.call():
            await anyio.sleep(0.01)

    async with anyio.create_task_group() as tg:
        for i in range(4):
            if i % 2:
                tg.start_soon(anyio.to_thread.run_sync, in_thread)
            else:
                tg.start_soon(in_task)
    assert flight.peak == 4
    assert flight.now == 0


async def test_in_flight_fails_calls_that_run_one_at_a_time(short_hangs: float) -> None:
    flight = InFlight(together=2)
    with pytest.raises(AssertionError, match="at most 1 of 2 calls were in flight at once"):
        async with flight.call():
            await anyio.lowlevel.checkpoint()

    def in_thread() -> None:
        with flight.call_in_thread():
            pass

    with pytest.raises(AssertionError, match="did not overlap"):
        await anyio.to_thread.run_sync(in_thread)
    assert flight.peak == 1
    assert flight.now == 0


async def test_in_flight_wakes_a_waiting_task_when_a_thread_completes_the_count() -> None:
    flight = InFlight(together=2)
    left: list[str] = []

    async def in_task() -> None:
        async with flight.call():
            pass
        left.append("task")

    def in_thread() -> None:
        with flight.call_in_thread():
            pass
        left.append("thread")

    async with (
        finishes_within(what="a task waiting for a thread's call"),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(in_task)
        await anyio.wait_all_tasks_blocked()  # the task waits for a second call
        assert left == []
        await anyio.to_thread.run_sync(in_thread)
    assert sorted(left) == ["task", "thread"]
    assert flight.peak == 2
