"""Observers of the routes: told of each call before and after it, taking no part in it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest

from agentscope_rt import _intercept
from agentscope_rt._intercept import Call, Routed


class Counter(Routed):
    async def add(self, value: int, step: int = 1, *, twice: bool = False) -> int:
        if value < 0:
            raise ValueError("negative")
        return (value + step) * (2 if twice else 1)

    async def add_all(self, *values: int) -> list[int]:
        return [await self.add(value) for value in values]

    async def wait(self, event: anyio.Event) -> None:
        await event.wait()

    def count(self, upto: int) -> list[int]:
        if upto < 0:
            raise ValueError("negative")
        return list(range(upto))

    def stream(self, upto: int, log: list[Any]) -> AsyncIterator[int]:
        async def items() -> AsyncIterator[int]:
            for item in range(upto):
                log.append(("item", item))
                yield item

        return items()


_intercept.declare(Counter, "add", "test_observe")
_intercept.declare(Counter, "add_all", "test_observe")
_intercept.declare(Counter, "wait", "test_observe")
_intercept.declare(Counter, "count", "test_observe_sync", is_async=False)
_intercept.declare(Counter, "stream", "test_observe_sync", is_async=False)


class Doubling(Counter):
    async def add(self, value: int, step: int = 1, *, twice: bool = False) -> int:
        return 2 * await super().add(value, step, twice=twice)


class Watcher:
    """An observer logging what it is told; ``before`` returns a state of its own."""

    def __init__(self, label: str, log: list[Any]) -> None:
        self.label = label
        self.log = log

    def __repr__(self) -> str:
        return f"<watcher {self.label}>"

    def before(self, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self.log.append((self.label, "before", obj, args, kwargs))
        return (self.label, args)

    def after(self, obj: Any, state: Any, result: Any, error: BaseException | None) -> None:
        self.log.append((self.label, "after", obj, state, result, error))


class Tagging:
    """An interceptor that changes the call and its result."""

    def __init__(self, log: list[Any]) -> None:
        self.log = log

    async def intercept(self, call: Call, proceed: Callable[..., Any]) -> Any:
        self.log.append(("interceptor", "in", call.args))
        result = await proceed((call.args[0] + 100,), call.kwargs)
        self.log.append(("interceptor", "out", result))
        return -result


@contextmanager
def observing(kind: str, *observers: Any) -> Iterator[None]:
    for observer in observers:
        _intercept.register_observer(kind, observer)
    try:
        yield
    finally:
        for observer in observers:
            _intercept.unregister_observer(kind, observer)


async def test_an_observer_sees_each_call_with_its_arguments_and_its_result() -> None:
    log: list[Any] = []
    counter = Counter()
    with observing("test_observe", Watcher("w", log)):
        assert await counter.add(1) == 2
        assert await counter.add(1, 2, twice=True) == 6
    # The method's parameters as the wrapper passes them on, defaults filled in.
    assert log == [
        ("w", "before", counter, (1, 1), {"twice": False}),
        ("w", "after", counter, ("w", (1, 1)), 2, None),
        ("w", "before", counter, (1, 2), {"twice": True}),
        ("w", "after", counter, ("w", (1, 2)), 6, None),
    ]
    log.clear()
    assert await counter.add(1) == 2  # unregistered: told nothing
    assert log == [] and "test_observe" not in _intercept.installed()


async def test_an_observer_sees_the_exception_and_the_caller_still_gets_it() -> None:
    log: list[Any] = []
    counter = Counter()
    with (
        observing("test_observe", Watcher("w", log)),
        pytest.raises(ValueError, match="negative") as raised,
    ):
        await counter.add(-1)
    assert [entry[:2] for entry in log] == [("w", "before"), ("w", "after")]
    assert log[1][4] is None and log[1][5] is raised.value


async def test_a_cancelled_call_is_told_once_and_the_cancellation_propagates() -> None:
    log: list[Any] = []
    counter = Counter()
    went_on: list[str] = []

    async def waiting() -> None:
        await counter.wait(anyio.Event())
        went_on.append("after the call")  # never: the cancellation reaches the caller

    with observing("test_observe", Watcher("w", log)):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiting)
            await anyio.sleep(0.01)
            assert [entry[:2] for entry in log] == [("w", "before")]
            tg.cancel_scope.cancel()
    assert went_on == [] and tg.cancel_scope.cancelled_caught
    assert [entry[:2] for entry in log] == [("w", "before"), ("w", "after")]
    assert isinstance(log[1][5], anyio.get_cancelled_exc_class()) and log[1][4] is None


async def test_a_call_cancelled_around_it_is_told_once() -> None:
    log: list[Any] = []
    counter = Counter()
    with observing("test_observe", Watcher("w", log)):
        with anyio.move_on_after(0.01) as scope:
            await counter.wait(anyio.Event())
    assert scope.cancelled_caught
    assert [entry[:2] for entry in log] == [("w", "before"), ("w", "after")]
    assert isinstance(log[1][5], anyio.get_cancelled_exc_class())


async def test_with_an_interceptor_observers_see_the_caller_s_view_once_outside_it() -> None:
    log: list[Any] = []
    counter = Counter()
    first, second = Watcher("first", log), Watcher("second", log)
    tagging = Tagging(log)
    _intercept.register("test_observe", tagging)
    try:
        with observing("test_observe", first, second):
            # The interceptor adds 100 to the value and negates the result.
            assert await counter.add(1) == -102
    finally:
        _intercept.unregister("test_observe", tagging)
    assert [entry[:2] for entry in log] == [
        ("first", "before"),
        ("second", "before"),
        ("interceptor", "in"),
        ("interceptor", "out"),
        ("second", "after"),
        ("first", "after"),
    ]
    assert log[0][3] == (1, 1) and log[-1][4] == -102  # the call as made, what the caller got
    assert "test_observe" not in _intercept.installed()


async def test_a_call_through_super_is_part_of_the_call_it_is_made_in() -> None:
    log: list[Any] = []
    doubling = Doubling()
    with observing("test_observe", Watcher("w", log)):
        assert await doubling.add(1) == 4
        # Another method of the kind calling add on the same object: two calls, each told.
        assert await doubling.add_all(1, 2) == [4, 6]
    told = [(entry[1], entry[3]) for entry in log if entry[1] == "before"]
    assert told == [("before", (1, 1)), ("before", (1, 2)), ("before", (1, 1)), ("before", (2, 1))]
    assert sum(entry[1] == "after" for entry in log) == 4


async def test_calls_from_several_tasks_are_each_told_once() -> None:
    log: list[Any] = []
    counter = Counter()
    with observing("test_observe", Watcher("w", log)):
        async with anyio.create_task_group() as tg:
            for value in range(10):
                tg.start_soon(counter.add, value)
    befores = sorted(entry[3][0] for entry in log if entry[1] == "before")
    afters = sorted(entry[4] for entry in log if entry[1] == "after")
    assert befores == list(range(10)) and afters == list(range(1, 11))


async def test_an_observer_unregistered_during_a_call_is_still_told_its_end() -> None:
    log: list[Any] = []
    counter, gate = Counter(), anyio.Event()
    watcher = Watcher("w", log)
    _intercept.register_observer("test_observe", watcher)
    async with anyio.create_task_group() as tg:
        tg.start_soon(counter.wait, gate)
        await anyio.sleep(0.01)
        _intercept.unregister_observer("test_observe", watcher)
        await counter.add(1)  # started after: not told
        gate.set()
    assert [entry[:2] for entry in log] == [("w", "before"), ("w", "after")]
    assert log[1][4] is None and log[1][5] is None


async def test_a_failing_observer_is_logged_and_the_call_carries_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log: list[Any] = []

    class Broken(Watcher):
        def before(self, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            super().before(obj, args, kwargs)
            raise RuntimeError("broken before")

        def after(self, obj: Any, state: Any, result: Any, error: BaseException | None) -> None:
            super().after(obj, state, result, error)
            raise RuntimeError("broken after")

    counter = Counter()
    for others in ((), (Watcher("sound", log),)):  # one observer, and one beside another
        log.clear()
        caplog.clear()
        with (
            caplog.at_level(logging.ERROR, "agentscope_rt"),
            observing("test_observe", Broken("broken", log), *others),
        ):
            assert await counter.add(1) == 2
            with pytest.raises(ValueError, match="negative"):
                await counter.add(-1)
        # after is told with the state None (before failed), and the call's own outcome.
        ends = [entry for entry in log if entry[:2] == ("broken", "after")]
        assert [entry[3:5] for entry in ends] == [(None, 2), (None, None)]
        assert isinstance(ends[1][5], ValueError)
        assert sum(entry[0] == "sound" for entry in log) == 2 * len(others) * 2
        failures = [r.getMessage() for r in caplog.records]
        assert (
            failures
            == [
                "<watcher broken> failed in before; the call it watches carries on",
                "<watcher broken> failed in after; the call it watches carries on",
            ]
            * 2
        )


def test_a_synchronous_route_is_observed_as_well() -> None:
    log: list[Any] = []
    counter = Counter()
    with observing("test_observe_sync", Watcher("w", log)):
        assert counter.count(3) == [0, 1, 2]
        with pytest.raises(ValueError, match="negative"):
            counter.count(-1)
    assert [entry[:2] for entry in log] == [("w", "before"), ("w", "after")] * 2
    assert log[1][4] == [0, 1, 2] and log[1][5] is None
    assert log[3][4] is None and isinstance(log[3][5], ValueError)


async def test_a_call_returning_a_stream_ends_when_the_stream_is_returned() -> None:
    log: list[Any] = []
    with observing("test_observe_sync", Watcher("w", log)):
        stream = Counter().stream(2, log)
        assert [item async for item in stream] == [0, 1]
    assert [entry[:2] for entry in log] == [
        ("w", "before"),
        ("w", "after"),
        ("item", 0),
        ("item", 1),
    ]
    assert log[1][4] is stream


def test_a_synchronous_route_with_an_interceptor_too() -> None:
    log: list[Any] = []

    class Appending:
        def intercept(self, call: Call, proceed: Callable[..., Any]) -> Any:
            return [*proceed(call.args, call.kwargs), "intercepted"]

    appending = Appending()
    _intercept.register("test_observe_sync", appending)
    try:
        with observing("test_observe_sync", Watcher("w", log)):
            assert Counter().count(1) == [0, "intercepted"]
    finally:
        _intercept.unregister("test_observe_sync", appending)
    assert log[1][4] == [0, "intercepted"]


def test_bad_observer_registrations_are_refused_and_installed_lists_observers() -> None:
    watcher = Watcher("w", [])
    with pytest.raises(ValueError, match="no route of kind 'nope'"):
        _intercept.register_observer("nope", watcher)
    with pytest.raises(ValueError, match="not registered"):
        _intercept.unregister_observer("test_observe", watcher)
    with observing("test_observe", watcher):
        with pytest.raises(ValueError, match="registered for 'test_observe' already"):
            _intercept.register_observer("test_observe", watcher)
        # What tests/conftest.py checks after each test: an observer left behind is seen.
        assert _intercept.installed()["test_observe"] == (watcher,)
        with pytest.raises(ValueError, match="not registered"):
            _intercept.unregister("test_observe", watcher)  # type: ignore[arg-type]
    assert "test_observe" not in _intercept.installed()


async def test_an_agent_s_replies_are_each_told_once_whatever_else_is_registered() -> None:
    # On the agents' own route: under AGENTSCOPE_RT_TEST_INTERCEPTORS=hooks,tracing the hooks'
    # interceptor of "reply" runs inside the observer.
    from agentscope_rt.agent import AgentBase
    from agentscope_rt.message import Msg

    class Echo(AgentBase):
        async def reply(self, msg: Any = None, **kwargs: Any) -> Msg:
            return Msg("echo", f"heard {msg.content}", "assistant")

        async def observe(self, msg: Any) -> None:
            return None

    class Louder(Echo):
        async def reply(self, msg: Any = None, **kwargs: Any) -> Msg:
            said = await super().reply(msg, **kwargs)
            return Msg("echo", str(said.content).upper(), "assistant")

    log: list[Any] = []
    agent = Louder()
    with observing("reply", Watcher("w", log)):
        said = await agent(Msg("user", "hi", "user"))
    assert said.content == "HEARD HI"
    assert [entry[:3] for entry in log] == [("w", "before", agent), ("w", "after", agent)]
    assert log[1][4] is said
