"""Timing and overlap checks for the tests, under one tolerance policy.

The suite runs on shared, often loaded machines: a task that is ready to run may wait a long
time for a core. Load only ever makes things slower, never faster, so the two directions of a
timing check are treated differently:

- A lower bound is exact-ish. ``anyio.sleep``, ``fail_after`` and the back-offs built on them
  never wake before their deadline on the event loop's clock, so ``takes_at_least(0.2)``
  asserts at least 0.2 s on that clock (``anyio.current_time()``), less ``CLOCK_SLACK_S`` for
  float rounding and timer resolution. Load cannot make such a check fail.
- An upper bound is only a hang detector: it turns "never finishes" (a lost wake-up, a 30 s
  sleep that should have been cut short) into a failure, never "was slow". Its limit is at
  least ten times the expected time and at least ``HANG_FLOOR_S`` (5 s): ``hang_limit`` gives
  it and ``finishes_within`` refuses anything smaller. A test may bound time from above only
  where the behaviour under test would otherwise take much longer than that limit (the thing
  that should be cut short sleeps or blocks for 10 s or more).
- That calls overlap is never shown by a wall-clock budget ("four 0.1 s calls in under
  0.3 s" has under 2x headroom and fails on a busy machine). ``InFlight`` counts the calls
  inside a block at once and keeps the most it saw; with ``together=n`` each call also waits,
  on leaving, until n calls have been inside at once. Calls that run concurrently then reach a
  peak of n whatever the scheduling, and calls that run one at a time never do: the first one
  waits until the hang detector fails it.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import anyio
import anyio.from_thread
import anyio.lowlevel
import pytest

CLOCK_SLACK_S = 0.001
"""Allowed shortfall of a lower bound: float rounding of the clock readings and asyncio's
timer resolution (it runs a timer that falls due within its clock's resolution)."""

HANG_FLOOR_S = 5.0
"""The smallest upper bound a test may assert: below it, a loaded machine can stall a healthy
test past the limit."""

HANG_FACTOR = 10.0
"""An upper bound is at least this many times the expected duration."""


def hang_limit(expected_s: float = 0.0) -> float:
    """The upper bound the policy allows for something expected to take *expected_s*.

    :param expected_s: the duration the block should take on a quiet machine.
    :returns: ``max(HANG_FACTOR * expected_s, HANG_FLOOR_S)``.
    """
    return max(HANG_FACTOR * expected_s, HANG_FLOOR_S)


@asynccontextmanager
async def takes_at_least(min_s: float) -> AsyncIterator[None]:
    """Assert that the block took at least *min_s* seconds on the event loop's clock.

    :param min_s: the shortest duration the behaviour under test guarantees (a back-off, a
        deadline, calls that run one after another).
    :raises AssertionError: the block returned sooner (less ``CLOCK_SLACK_S``).
    """
    start = anyio.current_time()
    yield
    elapsed = anyio.current_time() - start
    assert elapsed >= min_s - CLOCK_SLACK_S, f"took {elapsed:.4f} s, expected at least {min_s} s"


@asynccontextmanager
async def finishes_within(limit_s: float = HANG_FLOOR_S, *, what: str) -> AsyncIterator[None]:
    """Fail the test if the block is still running *limit_s* seconds after it started.

    The block is cancelled at the limit, so a hang fails the test instead of stalling it. This
    is a hang detector, not a speed check: see the module's tolerance policy.

    :param limit_s: seconds the block may take; at least ``HANG_FLOOR_S`` (use ``hang_limit``
        to scale it to a longer expected duration).
    :param what: what the block does, for the failure message ("the interrupted reply").
    :raises ValueError: *limit_s* is below ``HANG_FLOOR_S``.
    :raises pytest.fail.Exception: the block reached the limit.
    """
    if limit_s < HANG_FLOOR_S:
        raise ValueError(
            f"an upper bound of {limit_s} s is below HANG_FLOOR_S ({HANG_FLOOR_S} s): a loaded "
            "machine can stall a healthy test that long; use hang_limit(expected_s)"
        )
    start = anyio.current_time()
    with anyio.CancelScope(deadline=start + limit_s) as scope:
        try:
            yield
        except BaseException as exc:
            if scope.cancel_called and not isinstance(exc, anyio.get_cancelled_exc_class()):
                pytest.fail(f"{what} did not finish within {limit_s} s ({exc!r} at the limit)")
            raise
    elapsed = anyio.current_time() - start
    if scope.cancel_called or elapsed > limit_s:
        pytest.fail(f"{what} did not finish within {limit_s} s (took {elapsed:.2f} s)")


@asynccontextmanager
async def takes_about(expected_s: float) -> AsyncIterator[None]:
    """Assert that the block took at least *expected_s* seconds and did not hang.

    :param expected_s: how long the block takes on a quiet machine, and at least.
    :raises AssertionError: the block returned sooner than *expected_s*.
    :raises pytest.fail.Exception: the block ran past ``hang_limit(expected_s)``.
    """
    what = f"a block expected to take {expected_s} s"
    async with finishes_within(hang_limit(expected_s), what=what), takes_at_least(expected_s):
        yield


class InFlight:
    """Counts the calls inside ``call()`` (or ``call_in_thread()``) at once and keeps the most.

    Safe to share between the event loop's tasks and worker threads, so sync tools run in
    threads and async ones can be counted together. Use one instance within one event loop.

    :param together: each call waits, on leaving its block, until this many calls have been
        inside at once (1: no waiting). A call that waits ``HANG_FLOOR_S`` in vain raises
        ``AssertionError``: the calls did not overlap.
    """

    def __init__(self, together: int = 1) -> None:
        self.together = together
        self.now = 0
        self.peak = 0
        # Threads wait on the condition; tasks on an anyio event, which a thread sets through
        # the loop's token (a thread cannot set it directly, and a task must not block).
        self._changed = threading.Condition()
        self._met_event: anyio.Event | None = None
        self._loop_token: anyio.lowlevel.EventLoopToken | None = None

    @asynccontextmanager
    async def call(self) -> AsyncIterator[None]:
        """Count a call made in a task of the event loop for the length of the block.

        :raises AssertionError: ``together`` calls were never inside at once.
        """
        event = self._enter()
        if event is not None:
            event.set()
        try:
            yield
            event = self._event_unless_met()
            if event is not None:
                with anyio.move_on_after(HANG_FLOOR_S):
                    await event.wait()
            self._check_met()
        finally:
            self._leave()

    @contextmanager
    def call_in_thread(self) -> Iterator[None]:
        """Count a call made in a worker thread for the length of the block.

        :raises AssertionError: ``together`` calls were never inside at once.
        """
        event = self._enter()
        if event is not None:
            anyio.from_thread.run_sync(event.set, token=self._loop_token)
        try:
            yield
            with self._changed:
                self._changed.wait_for(self._met, timeout=HANG_FLOOR_S)
            self._check_met()
        finally:
            self._leave()

    def _enter(self) -> anyio.Event | None:
        """Count one more call; the event to set if that made the peak reach ``together``."""
        with self._changed:
            self.now += 1
            self.peak = max(self.peak, self.now)
            self._changed.notify_all()
            return self._met_event if self.peak == self.together else None

    def _event_unless_met(self) -> anyio.Event | None:
        """The event a task waits on for the peak to reach ``together``; None if it has."""
        # Under the lock, so a thread that makes the peak reach the target either sees the
        # event (and sets it) or happened before this check (which then sees the peak).
        with self._changed:
            if self._met():
                return None
            if self._met_event is None:
                self._met_event = anyio.Event()
                self._loop_token = anyio.lowlevel.current_token()
            return self._met_event

    def _met(self) -> bool:
        return self.peak >= self.together

    def _check_met(self) -> None:
        assert self._met(), (
            f"at most {self.peak} of {self.together} calls were in flight at once after "
            f"{HANG_FLOOR_S} s: the calls did not overlap"
        )

    def _leave(self) -> None:
        with self._changed:
            self.now -= 1
