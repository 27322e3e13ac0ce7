"""Toolkit behaviour: calls, failures, streaming, timeouts, interrupts, groups, middleware,
background tasks and state — every async test runs on asyncio and trio."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentscope_rt.exception import StateError, ToolError, ToolGroupError, ToolRegistrationError
from agentscope_rt.message import TextBlock, ToolUseBlock
from agentscope_rt.tool import INTERRUPTED_TEXT, Toolkit, ToolResponse

from .._timing import InFlight, finishes_within


def text(value: str) -> ToolResponse:
    return ToolResponse(content=[TextBlock(text=value)])


def call(name: str, /, **kwargs: Any) -> ToolUseBlock:
    return ToolUseBlock(id=f"call_{name}", name=name, input=kwargs)


async def collect(toolkit: Toolkit, tool_call: ToolUseBlock) -> list[ToolResponse]:
    return [chunk async for chunk in toolkit.call_tool_function(tool_call)]


async def one_text(toolkit: Toolkit, tool_call: ToolUseBlock) -> str:
    chunks = await collect(toolkit, tool_call)
    assert len(chunks) == 1
    return chunks[0].get_text()


# -- tools used below -------------------------------------------------------------------------


def add(a: int, b: int = 1) -> ToolResponse:
    """Add two numbers.

    Args:
        a: First.
        b: Second.
    """
    return text(str(a + b))


async def async_add(a: int, b: int) -> ToolResponse:
    """Add asynchronously.

    Args:
        a: First.
        b: Second.
    """
    await anyio.lowlevel.checkpoint()
    return text(str(a + b))


async def countdown(n: int) -> AsyncGenerator[ToolResponse, None]:
    """Stream a countdown (cumulative chunks).

    Args:
        n: Start.
    """
    seen: list[TextBlock] = []
    for i in range(n, 0, -1):
        seen.append(TextBlock(text=str(i)))
        yield ToolResponse(content=list(seen), stream=True, is_last=(i == 1))
        await anyio.lowlevel.checkpoint()


def sync_countdown(n: int) -> Generator[ToolResponse, None, None]:
    """Stream a countdown from a sync generator.

    Args:
        n: Start.
    """
    seen: list[TextBlock] = []
    for i in range(n, 0, -1):
        seen.append(TextBlock(text=str(i)))
        yield ToolResponse(content=list(seen), stream=True, is_last=(i == 1))


async def forever() -> ToolResponse:
    """Never returns."""
    await anyio.sleep_forever()
    raise AssertionError


def broken(reason: str) -> ToolResponse:
    """Always fails.

    Args:
        reason: Why.
    """
    raise RuntimeError(reason)


# -- plain calls ------------------------------------------------------------------------------


async def test_sync_async_and_partial_and_method_tools() -> None:
    class Calculator:
        def __init__(self, offset: int) -> None:
            self.offset = offset

        def shift(self, x: int) -> ToolResponse:
            """Shift.

            Args:
                x: Value.
            """
            return text(str(x + self.offset))

    toolkit = Toolkit()
    toolkit.register_tool_function(add)
    toolkit.register_tool_function(async_add)
    toolkit.register_tool_function(Calculator(100).shift)
    toolkit.register_tool_function(functools.partial(add, b=10), func_name="add_ten")
    assert await one_text(toolkit, call("add", a=2)) == "3"
    assert await one_text(toolkit, call("async_add", a=2, b=5)) == "7"
    assert await one_text(toolkit, call("shift", x=1)) == "101"
    assert await one_text(toolkit, call("add_ten", a=1)) == "11"
    # AgentScope style: the call may be awaited first.
    chunks = [c async for c in await toolkit.call_tool_function(call("add", a=0))]
    assert chunks[0].get_text() == "1"


async def test_sync_tool_runs_in_worker_thread() -> None:
    seen: list[int] = []

    def where() -> ToolResponse:
        """Report the thread."""
        seen.append(threading.get_ident())
        return text("ok")

    toolkit = Toolkit()
    toolkit.register_tool_function(where)
    assert await one_text(toolkit, call("where")) == "ok"
    assert seen and seen[0] != threading.get_ident()


async def test_parallel_calls_overlap_and_do_not_mix() -> None:
    # Each call waits until all four are in flight: run one at a time, the first would never end.
    flight = InFlight(together=4)

    def slow_sync(tag: str) -> ToolResponse:
        """Block.

        Args:
            tag: Tag.
        """
        with flight.call_in_thread():
            time.sleep(0.2)
        return text(tag)

    async def slow_async(tag: str) -> ToolResponse:
        """Sleep.

        Args:
            tag: Tag.
        """
        async with flight.call():
            await anyio.sleep(0.2)
        return text(tag)

    toolkit = Toolkit()
    toolkit.register_tool_function(slow_sync)
    toolkit.register_tool_function(slow_async)
    results: dict[str, str] = {}

    async def run(name: str, tag: str) -> None:
        results[tag] = await one_text(toolkit, call(name, tag=tag))

    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(run, "slow_sync" if i % 2 else "slow_async", f"t{i}")
    assert results == {f"t{i}": f"t{i}" for i in range(4)}
    assert flight.peak == 4


async def test_streaming_async_and_sync_generators_yield_cumulative_chunks() -> None:
    toolkit = Toolkit()
    toolkit.register_tool_function(countdown)
    toolkit.register_tool_function(sync_countdown)
    for name in ("countdown", "sync_countdown"):
        chunks = await collect(toolkit, call(name, n=3))
        assert [c.get_text() for c in chunks] == ["3", "32", "321"]
        assert [c.is_last for c in chunks] == [False, False, True]


async def test_postprocess_func_sync_and_async() -> None:
    def upper(tool_call: ToolUseBlock, response: ToolResponse) -> ToolResponse:
        return text(response.get_text().upper() + f"@{tool_call['name']}")

    async def keep(tool_call: ToolUseBlock, response: ToolResponse) -> None:
        await anyio.lowlevel.checkpoint()

    def greet(name: str) -> ToolResponse:
        """Greet.

        Args:
            name: Name.
        """
        return text(f"hi {name}")

    toolkit = Toolkit()
    toolkit.register_tool_function(greet, postprocess_func=upper)
    toolkit.register_tool_function(add, postprocess_func=keep)
    assert await one_text(toolkit, call("greet", name="bo")) == "HI BO@greet"
    assert await one_text(toolkit, call("add", a=1)) == "2"


async def test_preset_kwargs_win_over_model_arguments() -> None:
    def whoami(user: str, question: str) -> ToolResponse:
        """Answer.

        Args:
            user: The user.
            question: Question.
        """
        return text(f"{user}:{question}")

    toolkit = Toolkit()
    toolkit.register_tool_function(whoami, preset_kwargs={"user": "alice"})
    assert await one_text(toolkit, call("whoami", question="q")) == "alice:q"
    sneaky = await one_text(toolkit, call("whoami", question="q", user="mallory"))
    assert sneaky.startswith("InvalidArgumentsError") and "user" in sneaky


# -- failure paths ----------------------------------------------------------------------------


async def test_unknown_and_inactive_tools() -> None:
    toolkit = Toolkit()
    toolkit.create_tool_group("math", "Math tools")
    toolkit.register_tool_function(add, group_name="math")
    assert (
        await one_text(toolkit, call("nope"))
        == "FunctionNotFoundError: Cannot find the function named nope"
    )
    inactive = await one_text(toolkit, call("add", a=1))
    assert inactive.startswith("FunctionInactiveError: The function 'add' is in the inactive group")
    toolkit.update_tool_groups(["math"], True)
    assert await one_text(toolkit, call("add", a=1)) == "2"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "'a' is a required argument"),
        ({"a": "x"}, "argument 'a': 'x' is not of type 'integer'"),
        ({"a": 1, "b": [1]}, "argument 'b'"),
        ({"a": 1, "c": 2}, "unexpected argument(s) ['c']"),
    ],
)
async def test_invalid_arguments_name_the_argument(
    arguments: dict[str, Any], expected: str
) -> None:
    called: list[int] = []

    def guarded(a: int, b: int = 0) -> ToolResponse:
        """Guarded.

        Args:
            a: A.
            b: B.
        """
        called.append(a)
        return text("ran")

    toolkit = Toolkit()
    toolkit.register_tool_function(guarded)
    result = await one_text(toolkit, call("guarded", **arguments))
    assert result.startswith("InvalidArgumentsError: Invalid arguments for 'guarded':")
    assert expected in result
    assert called == []


async def test_unparsable_raw_input_is_reported() -> None:
    toolkit = Toolkit()
    toolkit.register_tool_function(add)
    tool_call = ToolUseBlock(id="1", name="add", input={}, raw_input='{"a": 1')
    result = await one_text(toolkit, tool_call)
    assert "not a valid JSON object" in result and '{"a": 1' in result


async def test_exceptions_become_readable_responses() -> None:
    async def async_broken() -> ToolResponse:
        """Fails."""
        raise ValueError("bad value")

    async def stream_broken() -> AsyncGenerator[ToolResponse, None]:
        """Fails mid-stream."""
        yield ToolResponse(content=[TextBlock(text="part")], stream=True, is_last=False)
        raise KeyError("gone")

    def wrong_type() -> str:
        """Returns the wrong type."""
        return "plain string"

    toolkit = Toolkit()
    for func in (broken, async_broken, stream_broken, wrong_type):
        toolkit.register_tool_function(func)
    assert await one_text(toolkit, call("broken", reason="boom")) == "Error: RuntimeError: boom"
    assert await one_text(toolkit, call("async_broken")) == "Error: ValueError: bad value"
    chunks = await collect(toolkit, call("stream_broken"))
    assert [c.get_text() for c in chunks] == ["part", "partError: KeyError: 'gone'"]
    assert chunks[-1].is_last
    wrong = await one_text(toolkit, call("wrong_type"))
    assert wrong.startswith("Error: TypeError: tool 'wrong_type' returned str")


async def test_coroutine_tools_that_hand_back_a_stream_or_an_awaitable() -> None:
    async def streams_later(n: int) -> Any:
        """Returns a stream.

        Args:
            n: how many.
        """
        return countdown(n)

    async def awaits_later(a: int) -> Any:
        """Returns an awaitable.

        Args:
            a: a number.
        """
        return async_add(a, 2)

    async def wrong_type() -> Any:
        """Returns the wrong type."""
        return 42

    async def slow_stream_later() -> Any:
        """Returns a slow stream."""

        async def slow() -> AsyncGenerator[ToolResponse, None]:
            yield ToolResponse(content=[TextBlock(text="first")], stream=True, is_last=False)
            await anyio.sleep(10)
            yield text("never")

        return slow()

    toolkit = Toolkit()
    for func in (streams_later, awaits_later, wrong_type):
        toolkit.register_tool_function(func)
    toolkit.register_tool_function(slow_stream_later, timeout=0.1)
    toolkit.register_tool_function(countdown)
    direct = [c.get_text() for c in await collect(toolkit, call("countdown", n=3))]
    assert direct == ["3", "32", "321"]
    assert [c.get_text() for c in await collect(toolkit, call("streams_later", n=3))] == direct
    assert await one_text(toolkit, call("awaits_later", a=1)) == "3"
    assert (await one_text(toolkit, call("wrong_type"))).startswith(
        "Error: TypeError: tool 'wrong_type' returned int"
    )
    async with finishes_within(what="a stream that sleeps 10 s past its 0.1 s timeout"):
        slow = await collect(toolkit, call("slow_stream_later"))
    assert [c.get_text() for c in slow[:1]] == ["first"]
    assert slow[-1].get_text().startswith("firstTimeoutError: The tool 'slow_stream_later'")


async def test_timeouts_per_tool_and_per_toolkit() -> None:
    async def sleepy(seconds: float) -> ToolResponse:
        """Sleep.

        Args:
            seconds: How long.
        """
        await anyio.sleep(seconds)
        return text("awake")

    def blocking(seconds: float) -> ToolResponse:
        """Block.

        Args:
            seconds: How long.
        """
        time.sleep(seconds)
        return text("done")

    async def slow_stream() -> AsyncGenerator[ToolResponse, None]:
        """Stream slowly."""
        yield ToolResponse(content=[TextBlock(text="first")], stream=True, is_last=False)
        await anyio.sleep(10)
        yield ToolResponse(content=[TextBlock(text="never")], stream=True)

    toolkit = Toolkit(timeout=0.2)
    toolkit.register_tool_function(sleepy)
    toolkit.register_tool_function(blocking, timeout=0.1)
    toolkit.register_tool_function(slow_stream)
    assert await one_text(toolkit, call("sleepy", seconds=0)) == "awake"
    async with finishes_within(what="a 10 s sleep past its 0.2 s timeout"):
        result = await one_text(toolkit, call("sleepy", seconds=10))
    assert (
        result == "TimeoutError: The tool 'sleepy' exceeded its timeout of 0.2 s and was cancelled."
    )
    assert await one_text(toolkit, call("blocking", seconds=1)) == (
        "TimeoutError: The tool 'blocking' exceeded its timeout of 0.1 s and was cancelled."
    )
    async with finishes_within(what="a stream that sleeps 10 s past its 0.2 s timeout"):
        chunks = await collect(toolkit, call("slow_stream"))
    assert chunks[0].get_text() == "first"
    assert chunks[-1].get_text().startswith("firstTimeoutError: The tool 'slow_stream'")


async def test_a_call_ends_after_its_last_chunk() -> None:
    toolkit = Toolkit()
    for func in (async_add, countdown, add, broken):
        toolkit.register_tool_function(func)

    single = toolkit.call_tool_function(call("async_add", a=1, b=2))
    assert (await single.__anext__()).get_text() == "3"
    with pytest.raises(StopAsyncIteration):
        await single.__anext__()

    # Streams, sync tools (run in a worker thread) and failures go through the general path.
    for tool_call, expected in (
        (call("countdown", n=2), 2),
        (call("add", a=1), 1),
        (call("broken", reason="x"), 1),
    ):
        stream = toolkit.call_tool_function(tool_call)
        chunks = []
        async for chunk in stream:
            chunks.append(chunk)
        assert len(chunks) == expected


async def test_a_cancellation_in_a_tool_is_reraised_after_the_interrupted_chunk() -> None:
    toolkit = Toolkit()
    toolkit.register_tool_function(forever)
    stream = toolkit.call_tool_function(call("forever"))
    went_on = False
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def cancel_soon() -> None:
                await anyio.sleep(0.02)
                scope.cancel()

            tg.start_soon(cancel_soon)
            chunk = await stream.__anext__()
            assert chunk.is_interrupted
            # The cancellation is re-raised by the next __anext__: a caller that stopped
            # here would lose it.
            await stream.__anext__()
            went_on = True
    assert scope.cancelled_caught and not went_on


# -- interrupts -------------------------------------------------------------------------------


async def _interrupt_after(
    toolkit: Toolkit, tool_call: ToolUseBlock, delay: float
) -> tuple[list[ToolResponse], bool]:
    """Iterate the call in a scope cancelled after *delay*; report chunks and propagation."""
    chunks: list[ToolResponse] = []
    propagated = False
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def cancel_later() -> None:
                await anyio.sleep(delay)
                scope.cancel()

            tg.start_soon(cancel_later)
            try:
                async for chunk in toolkit.call_tool_function(tool_call):
                    chunks.append(chunk)
            except anyio.get_cancelled_exc_class():
                propagated = True
                raise
    assert scope.cancelled_caught
    return chunks, propagated


async def test_interrupting_an_async_tool() -> None:
    toolkit = Toolkit()
    toolkit.register_tool_function(forever)
    chunks, propagated = await _interrupt_after(toolkit, call("forever"), 0.05)
    assert propagated
    assert len(chunks) == 1
    assert chunks[0].is_interrupted and chunks[0].is_last
    assert chunks[0].get_text() == INTERRUPTED_TEXT


async def test_interrupting_a_sync_tool_returns_promptly() -> None:
    release = threading.Event()
    finished = threading.Event()

    def stuck() -> ToolResponse:
        """Blocks until released."""
        release.wait(10)
        finished.set()
        return text("late")

    toolkit = Toolkit()
    toolkit.register_tool_function(stuck)
    async with finishes_within(what="interrupting a tool blocked 10 s in its thread"):
        chunks, propagated = await _interrupt_after(toolkit, call("stuck"), 0.05)
    assert propagated and [c.is_interrupted for c in chunks] == [True]
    # The worker thread was not killed: it finishes in the background once released.
    assert not finished.is_set()
    release.set()
    assert await anyio.to_thread.run_sync(finished.wait, 5)


async def test_interrupting_a_streaming_tool_appends_to_last_chunk() -> None:
    closed: list[bool] = []

    async def ticker() -> AsyncGenerator[ToolResponse, None]:
        """Tick forever."""
        seen: list[TextBlock] = []
        try:
            while True:
                seen.append(TextBlock(text="tick"))
                yield ToolResponse(content=list(seen), stream=True, is_last=False)
                await anyio.sleep(0.02)
        finally:
            closed.append(True)

    toolkit = Toolkit()
    toolkit.register_tool_function(ticker)
    chunks, propagated = await _interrupt_after(toolkit, call("ticker"), 0.1)
    assert propagated and closed == [True]
    final = chunks[-1]
    assert final.is_interrupted and final.is_last
    assert [b.text for b in final.content][:-1] == [b.text for b in chunks[-2].content]
    assert final.content[-1].text == INTERRUPTED_TEXT
    assert not any(c.is_interrupted for c in chunks[:-1])


async def test_interrupted_response_helper_for_cancel_between_chunks() -> None:
    partial = ToolResponse(content=[TextBlock(text="so far")], stream=True, is_last=False)
    final = Toolkit.interrupted_response(partial)
    assert [b.text for b in final.content] == ["so far", INTERRUPTED_TEXT]
    assert final.is_interrupted and final.is_last and final.id == partial.id
    assert len(partial.content) == 1  # the received chunk is not modified
    assert Toolkit.interrupted_response(final) is final
    assert Toolkit.interrupted_response().get_text() == INTERRUPTED_TEXT


# -- groups and the meta tool -----------------------------------------------------------------


async def test_groups_and_reset_equipped_tools() -> None:
    toolkit = Toolkit()
    toolkit.create_tool_group("math", "Math tools", notes="Use integers.")
    toolkit.create_tool_group("text", "Text tools")
    toolkit.register_tool_function(add, group_name="math")
    toolkit.register_tool_function(broken, group_name="text")
    toolkit.register_tool_function(toolkit.reset_equipped_tools)
    with pytest.raises(ToolGroupError):
        toolkit.create_tool_group("math", "again")
    with pytest.raises(ToolGroupError):
        toolkit.create_tool_group("basic", "reserved")
    with pytest.raises(ValueError, match="not found"):
        toolkit.register_tool_function(async_add, group_name="missing")

    names = [s["function"]["name"] for s in toolkit.get_json_schemas()]
    assert names == ["reset_equipped_tools"]
    meta = toolkit.get_json_schemas()[0]["function"]["parameters"]["properties"]
    assert meta == {
        "math": {"type": "boolean", "default": False, "description": "Math tools"},
        "text": {"type": "boolean", "default": False, "description": "Text tools"},
    }
    reply = await one_text(toolkit, call("reset_equipped_tools", math=True))
    assert "'math' are activated" in reply and "Use integers." in reply
    assert [s["function"]["name"] for s in toolkit.get_json_schemas()] == [
        "add",
        "reset_equipped_tools",
    ]
    bad = await one_text(toolkit, call("reset_equipped_tools", math="yes"))
    assert bad.startswith("Invalid arguments: the argument math should be a bool")
    toolkit.remove_tool_groups("math")
    assert "add" not in toolkit.tools and "math" not in toolkit.groups
    assert "math" not in toolkit.get_json_schemas()[0]["function"]["parameters"]["properties"]
    with pytest.raises(ToolGroupError):
        toolkit.remove_tool_groups(["basic"])


def test_namesake_strategies() -> None:
    toolkit = Toolkit()
    toolkit.register_tool_function(add)
    with pytest.raises(ToolRegistrationError, match="already registered"):
        toolkit.register_tool_function(add)
    toolkit.register_tool_function(async_add, func_name="add", namesake_strategy="skip")
    assert toolkit.tools["add"].original_func is add
    toolkit.register_tool_function(async_add, func_name="add", namesake_strategy="override")
    assert toolkit.tools["add"].original_func is async_add
    toolkit.register_tool_function(add, namesake_strategy="rename")
    renamed = [n for n in toolkit.tools if n.startswith("add_")]
    assert len(renamed) == 1
    assert toolkit.tools[renamed[0]].json_schema["function"]["name"] == renamed[0]
    with pytest.raises(ToolRegistrationError):
        toolkit.register_tool_function(add, namesake_strategy="explode")  # type: ignore[arg-type]
    toolkit.remove_tool_function("add")
    with pytest.raises(ToolRegistrationError):
        toolkit.remove_tool_function("add", allow_not_exist=False)
    toolkit.clear()
    assert toolkit.tools == {} and toolkit.groups == {}


# -- middleware -------------------------------------------------------------------------------


async def test_middleware_onion_order_and_short_circuit() -> None:
    events: list[str] = []

    def layer(tag: str) -> Callable[..., AsyncGenerator[ToolResponse, None]]:
        async def middleware(
            kwargs: dict[str, Any], next_handler: Callable[..., Any]
        ) -> AsyncGenerator[ToolResponse, None]:
            events.append(f"{tag}:before:{kwargs['tool_call']['name']}")
            async for response in await next_handler(**kwargs):
                yield text(f"{tag}({response.get_text()})")
            events.append(f"{tag}:after")

        return middleware

    async def deny(
        kwargs: dict[str, Any], next_handler: Callable[..., Any]
    ) -> AsyncGenerator[ToolResponse, None]:
        if kwargs["tool_call"]["name"] == "broken":
            yield text("Unauthorized")
            return
        async for response in await next_handler(**kwargs):
            yield response

    toolkit = Toolkit()
    toolkit.register_tool_function(add)
    toolkit.register_tool_function(broken)
    toolkit.register_middleware(layer("outer"))
    toolkit.register_middleware(layer("inner"))
    toolkit.register_middleware(deny)
    assert await one_text(toolkit, call("add", a=1)) == "outer(inner(2))"
    assert events == ["outer:before:add", "inner:before:add", "inner:after", "outer:after"]
    assert await one_text(toolkit, call("broken", reason="x")) == "outer(inner(Unauthorized))"


@pytest.mark.parametrize("with_middleware", [False, True])
@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_closing_a_call_early_closes_the_tool_generator(
    kind: str, with_middleware: bool
) -> None:
    finished = threading.Event()

    async def async_stream(n: int) -> AsyncGenerator[ToolResponse, None]:
        """Stream numbers.

        Args:
            n: How many.
        """
        try:
            for i in range(n):
                yield ToolResponse(content=[TextBlock(text=str(i))], stream=True, is_last=False)
                await anyio.lowlevel.checkpoint()
        finally:
            finished.set()

    def sync_stream(n: int) -> Generator[ToolResponse, None, None]:
        """Stream numbers.

        Args:
            n: How many.
        """
        try:
            for i in range(n):
                yield ToolResponse(content=[TextBlock(text=str(i))], stream=True, is_last=False)
        finally:
            finished.set()

    async def passthrough(
        kwargs: dict[str, Any], next_handler: Callable[..., Any]
    ) -> AsyncGenerator[ToolResponse, None]:
        async for response in await next_handler(**kwargs):
            yield response

    toolkit = Toolkit()
    toolkit.register_tool_function(
        async_stream if kind == "async" else sync_stream, func_name="stream"
    )
    if with_middleware:
        toolkit.register_middleware(passthrough)
    stream = toolkit.call_tool_function(call("stream", n=100))
    async for chunk in stream:
        assert chunk.get_text() == "0"
        break
    assert not finished.is_set()
    await stream.aclose()
    # Closed by aclose() itself, not later by the garbage collector.
    assert finished.is_set()


# -- background execution ---------------------------------------------------------------------


async def test_async_execution_view_wait_cancel() -> None:
    gate = anyio.Event()

    async def job(label: str) -> ToolResponse:
        """A long job.

        Args:
            label: Label.
        """
        await gate.wait()
        return text(f"done {label}")

    async def endless() -> ToolResponse:
        """Never ends."""
        await anyio.sleep_forever()
        raise AssertionError

    async with Toolkit() as toolkit:
        toolkit.register_tool_function(job, async_execution=True)
        toolkit.register_tool_function(endless, async_execution=True)
        names = {s["function"]["name"] for s in toolkit.get_json_schemas()}
        assert {"view_task", "wait_task", "cancel_task"} <= names

        reminder = await one_text(toolkit, call("job", label="A"))
        task_id = reminder.split("Task ID: ")[1].split(".")[0]
        assert await one_text(toolkit, call("view_task", task_id=task_id)) == (
            f"Task {task_id} is still running."
        )
        waited = await one_text(toolkit, call("wait_task", task_id=task_id, timeout=0.05))
        assert "still running after waiting" in waited
        gate.set()
        assert await one_text(toolkit, call("wait_task", task_id=task_id)) == "done A"
        assert "InvalidTaskIdError" in await one_text(toolkit, call("view_task", task_id=task_id))

        reminder = await one_text(toolkit, call("endless"))
        endless_id = reminder.split("Task ID: ")[1].split(".")[0]
        cancelled = await one_text(toolkit, call("cancel_task", task_id=endless_id))
        assert cancelled == f"Task {endless_id} has been cancelled."
        result = (await collect(toolkit, call("view_task", task_id=endless_id)))[0]
        assert result.is_interrupted and INTERRUPTED_TEXT in result.get_text()

        reminder = await one_text(toolkit, call("endless"))
    # Leaving the toolkit cancelled the still-running background call.
    assert toolkit._task_group is None


async def test_parallel_waits_on_one_task_all_get_its_result() -> None:
    gate = anyio.Event()

    async def job() -> ToolResponse:
        """A job that waits for the gate."""
        await gate.wait()
        return text("done")

    results: list[str] = []

    async def wait(task_id: str) -> None:
        results.append(await one_text(toolkit, call("wait_task", task_id=task_id)))

    async with Toolkit() as toolkit:
        toolkit.register_tool_function(job, async_execution=True)
        reminder = await one_text(toolkit, call("job"))
        task_id = reminder.split("Task ID: ")[1].split(".")[0]
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait, task_id)
            tg.start_soon(wait, task_id)
            await anyio.wait_all_tasks_blocked()
            gate.set()
    assert results == ["done", "done"]


async def test_async_execution_outside_context_is_a_clear_error() -> None:
    toolkit = Toolkit()
    toolkit.register_tool_function(add, async_execution=True)
    with pytest.raises(ToolError, match="async with toolkit"):
        await collect(toolkit, call("add", a=1))


# -- MCP clients (interface) -------------------------------------------------------------------


class _FakeMCPTool:
    def __init__(self, name: str) -> None:
        self.name = name


class _FakeMCPFunction:
    def __init__(self, name: str, client: str) -> None:
        self.name = name
        self.mcp_name = client
        self.description = f"Remote {name}."
        self.json_schema = {
            "type": "function",
            "function": {
                "name": name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": {"x": {"type": "integer"}, "token": {"type": "string"}},
                    "required": ["x", "token"],
                },
            },
        }

    async def __call__(self, **kwargs: Any) -> ToolResponse:
        return text(f"{self.name}:{kwargs['x']}:{kwargs['token']}")


class _FakeMCPClient:
    """Implements the client interface register_mcp_client relies on."""

    def __init__(self, name: str, tools: list[str]) -> None:
        self.name = name
        self._tools = tools

    async def list_tools(self) -> list[_FakeMCPTool]:
        return [_FakeMCPTool(n) for n in self._tools]

    async def get_callable_function(
        self, func_name: str, wrap_tool_result: bool = True
    ) -> _FakeMCPFunction:
        assert wrap_tool_result
        return _FakeMCPFunction(func_name, self.name)


async def test_register_mcp_client_with_function_granularity() -> None:
    toolkit = Toolkit()
    toolkit.create_tool_group("remote", "Remote tools")
    client = _FakeMCPClient("srv", ["alpha", "beta", "gamma"])
    await toolkit.register_mcp_client(
        client,
        group_name="remote",
        disable_funcs=["gamma"],
        preset_kwargs_mapping={"alpha": {"token": "t0k"}},
    )
    assert set(toolkit.tools) == {"alpha", "beta"}
    assert toolkit.tools["alpha"].mcp_name == "srv"
    toolkit.update_tool_groups(["remote"], True)
    alpha = next(s for s in toolkit.get_json_schemas() if s["function"]["name"] == "alpha")
    assert alpha["function"]["parameters"]["properties"] == {"x": {"type": "integer"}}
    assert await one_text(toolkit, call("alpha", x=4)) == "alpha:4:t0k"
    missing = await one_text(toolkit, call("beta", x=4))
    assert "InvalidArgumentsError" in missing and "'token'" in missing

    other = Toolkit()
    await other.register_mcp_client(client, enable_funcs=["gamma"])
    assert set(other.tools) == {"gamma"}
    with pytest.raises(ValueError, match="overlap"):
        await other.register_mcp_client(client, enable_funcs=["a"], disable_funcs=["a"])
    with pytest.raises(ValueError, match="offers no tool"):
        await other.register_mcp_client(client, enable_funcs=["delta"])
    await toolkit.remove_mcp_clients(["srv"])
    assert toolkit.tools == {}


# -- state -------------------------------------------------------------------------------------


def test_state_round_trip_restores_active_groups() -> None:
    def build() -> Toolkit:
        toolkit = Toolkit()
        toolkit.create_tool_group("a", "A")
        toolkit.create_tool_group("b", "B", active=True)
        toolkit.create_tool_group("c", "C")
        return toolkit

    source = build()
    source.update_tool_groups(["a"], True)
    source.update_tool_groups(["b"], False)
    state = source.state_dict()
    assert state == {"active_groups": ["a"]}
    target = build()
    target.load_state_dict(state)
    assert {n: g.active for n, g in target.groups.items()} == {"a": True, "b": False, "c": False}
    with pytest.raises(StateError):
        target.load_state_dict({"active_groups": "a"})
    with pytest.raises(StateError, match="unexpected"):
        target.load_state_dict({"active_groups": [], "extra": 1})
    target.load_state_dict({"active_groups": ["c"], "extra": 1}, strict=False)
    assert target.groups["c"].active and not target.groups["a"].active


def test_response_ids_are_unique_and_ignore_the_global_random_seed() -> None:
    import random

    from agentscope_rt.model import ChatResponse

    random.seed(0)
    first = (ToolResponse().id, ChatResponse().id)
    random.seed(0)
    second = (ToolResponse().id, ChatResponse().id)
    assert first[0] != second[0] and first[1] != second[1]
    ids = {ToolResponse().id for _ in range(1000)}
    assert len(ids) == 1000 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
