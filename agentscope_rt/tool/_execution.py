"""Running one tool call: stepping through its chunks, timeouts, failures and interrupts.

Why steps and not one big ``async for``: a streaming tool hands its chunks to the consumer,
and the consumer's code runs while this generator is suspended at ``yield``. A cancel scope
(the timeout) held open across that ``yield`` would cancel the *consumer's* code, and on trio
corrupt the cancel-scope stack. So every step — start the tool, or fetch its next chunk — runs
in its own short-lived scope with the call's single deadline, and nothing is yielded from
inside a scope. The timeout therefore bounds the time spent in the tool, measured from the
start of the call.

Interrupts are cancellations from outside. When one lands inside a step, the generator
catches it, yields one last chunk marked ``is_interrupted=True`` (the last cumulative chunk's
content plus the interrupt notice), and re-raises the very same cancellation when the
consumer asks for the next chunk. The consumer therefore always has a result to record, and
the cancellation is never swallowed.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import AsyncGenerator, AsyncIterator, Generator
from typing import Any, cast

import anyio
import attrs

from ..message import TextBlock, ToolUseBlock
from ._response import ToolResponse
from ._types import RegisteredToolFunction, ToolKind

__all__ = [
    "INTERRUPTED_TEXT",
    "NOT_STARTED",
    "describe_exception",
    "execute_tool",
    "failure_response",
    "interrupted_response",
    "text_response",
    "timeout_text",
]

INTERRUPTED_TEXT = "<system-info>The tool call has been interrupted by the user.</system-info>"

# How long cleanup that must not be cut short by an interrupt (closing a tool's generator,
# running a postprocess function on the interrupted chunk) may take before it is abandoned.
CLEANUP_TIMEOUT = 5.0

_DONE: Any = object()

NOT_STARTED: Any = object()
"""``execute_tool(..., initial=NOT_STARTED)``: the tool function has not been called yet."""


def text_response(text: str, **kwargs: Any) -> ToolResponse:
    """A one-text-block :class:`ToolResponse`."""
    return ToolResponse(content=[TextBlock(text=text)], **kwargs)


def _with_notice(last: ToolResponse | None, text: str, **flags: Any) -> ToolResponse:
    """The final chunk: *last*'s content (cumulative streams) plus a notice text block."""
    if last is None:
        return text_response(text, is_last=True, **flags)
    return attrs.evolve(last, content=[*last.content, TextBlock(text=text)], is_last=True, **flags)


def interrupted_response(last_chunk: ToolResponse | None = None) -> ToolResponse:
    """The final chunk of an interrupted call.

    It carries *last_chunk*'s content (the output so far, for a streaming tool) followed by
    the text ``<system-info>The tool call has been interrupted by the user.</system-info>``,
    with ``is_interrupted=True`` and ``is_last=True``. *last_chunk* itself is not modified.
    """
    if last_chunk is not None and last_chunk.is_interrupted:
        return last_chunk
    return _with_notice(last_chunk, INTERRUPTED_TEXT, is_interrupted=True)


def _next_or_done(gen: Generator[Any, None, None]) -> Any:
    try:
        return next(gen)
    except StopIteration:
        return _DONE


class _Stepper:
    """Runs a tool one step at a time; each step may be awaited inside its own scope."""

    __slots__ = ("_agen", "_busy", "_func", "_gen", "_initial", "_kind", "_kwargs", "_started")

    def __init__(
        self, func: Any, kind: ToolKind, kwargs: dict[str, Any], initial: Any = NOT_STARTED
    ) -> None:
        self._func = func
        self._kind = kind
        self._kwargs = kwargs
        self._started = False
        # What calling the function already returned, when the caller started the call itself.
        self._initial = initial
        self._agen: AsyncIterator[Any] | None = None
        self._gen: Generator[Any, None, None] | None = None
        self._busy = False  # a worker thread is inside the sync generator

    async def step(self) -> Any:
        """The next raw chunk, or ``_DONE``."""
        if not self._started:
            self._started = True
            initial, self._initial = self._initial, NOT_STARTED
            if initial is NOT_STARTED:
                result = await self._start()
            else:
                result = await initial if inspect.isawaitable(initial) else initial
            if inspect.isasyncgen(result):
                self._agen = result
            elif inspect.isgenerator(result):
                self._gen = cast("Generator[Any, None, None]", result)
            else:
                return result
        if self._agen is not None:
            try:
                return await self._agen.__anext__()
            except StopAsyncIteration:
                self._agen = None
                return _DONE
        if self._gen is not None:
            self._busy = True
            item = await anyio.to_thread.run_sync(_next_or_done, self._gen, abandon_on_cancel=True)
            self._busy = False
            if item is _DONE:
                self._gen = None
            return item
        return _DONE

    async def _start(self) -> Any:
        kind, func, kwargs = self._kind, self._func, self._kwargs
        if kind is ToolKind.COROUTINE:
            return await func(**kwargs)
        if kind in (ToolKind.ASYNC_GENERATOR, ToolKind.SYNC_GENERATOR, ToolKind.INLINE):
            result = func(**kwargs)  # creating a generator runs none of its code
        else:
            result = await anyio.to_thread.run_sync(
                functools.partial(func, **kwargs), abandon_on_cancel=True
            )
        if inspect.isawaitable(result):
            # A sync callable that hands back a coroutine (e.g. a decorated async function).
            result = await result
        return result

    async def aclose(self) -> None:
        """Close the tool's generator (bounded, and not cut short by a pending cancel)."""
        agen, gen = self._agen, self._gen
        self._agen = self._gen = None
        if agen is None and (gen is None or self._busy):
            # A thread abandoned on cancel may still be inside the generator: it cannot be
            # closed now and finishes on its own.
            return
        with anyio.CancelScope(shield=True) as scope:
            scope.deadline = anyio.current_time() + CLEANUP_TIMEOUT
            if agen is not None:
                await agen.aclose()  # type: ignore[attr-defined]
            elif gen is not None:
                await anyio.to_thread.run_sync(gen.close, abandon_on_cancel=True)


def _failure_text(exc: BaseException) -> str:
    return f"Error: {describe_exception(exc)}"


def describe_exception(exc: BaseException) -> str:
    """``"<Type>: <message>"`` for *exc*, naming the real cause: an exception group with one
    member (what a task group raises when one of its tasks fails, also nested) is described
    by that member; a group with several lists them all after its own text."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    message = str(exc)
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    if isinstance(exc, BaseExceptionGroup):
        text += ": " + "; ".join(describe_exception(member) for member in exc.exceptions)
    return text


def failure_response(exc: BaseException) -> ToolResponse:
    """The final chunk of a call whose tool raised *exc* before producing any chunk:
    ``"Error: <Type>: <message>"`` (see :func:`describe_exception`)."""
    return text_response(_failure_text(exc), is_last=True)


def timeout_text(tool_name: str, limit: float | None) -> str:
    """The notice ending a call that ran out of time."""
    return (
        f"TimeoutError: The tool '{tool_name}' exceeded its timeout of {limit} s and was cancelled."
    )


async def _postprocess(
    tool: RegisteredToolFunction, tool_call: ToolUseBlock, chunk: ToolResponse
) -> ToolResponse:
    func = tool.postprocess_func
    if func is None:
        return chunk
    result = func(tool_call, chunk)
    if inspect.isawaitable(result):
        result = await result
    return result if isinstance(result, ToolResponse) else chunk


async def execute_tool(
    tool: RegisteredToolFunction,
    kwargs: dict[str, Any],
    tool_call: ToolUseBlock,
    limit: float | None,
    *,
    initial: Any = NOT_STARTED,
    deadline: float | None = None,
) -> AsyncGenerator[ToolResponse, None]:
    """Run *tool* and yield its (cumulative) chunks; failures become a final chunk.

    See the module docstring for the timeout and interrupt contract.

    :param initial: what calling the tool function already returned (an async generator,
        generator or awaitable to go on with), when the caller made the call itself.
    :param deadline: the call's deadline, when the caller already started the clock.
    """
    stepper = _Stepper(tool.original_func, tool.kind, kwargs, initial)
    if deadline is None:
        deadline = math.inf if limit is None else anyio.current_time() + limit
    cancelled_exc = anyio.get_cancelled_exc_class()
    # Without a time limit no scope of its own is needed: an interrupt (a cancellation of the
    # caller's scope) is caught below all the same. A scope per step costs as much as a quick
    # tool's whole call.
    timed = deadline != math.inf
    last: ToolResponse | None = None
    try:
        while True:
            final: ToolResponse | None = None
            pending: BaseException | None = None
            chunk: Any = _DONE
            timed_out = False
            try:
                if timed:
                    with anyio.CancelScope(deadline=deadline) as scope:
                        chunk = await _next_chunk(stepper, tool, tool_call)
                    timed_out = scope.cancelled_caught
                else:
                    chunk = await _next_chunk(stepper, tool, tool_call)
            except cancelled_exc as exc:
                pending = exc
                final = interrupted_response(last)
            except Exception as exc:
                final = _with_notice(last, _failure_text(exc))
            else:
                if timed_out:
                    final = _with_notice(last, timeout_text(tool.name, limit))
                elif chunk is _DONE:
                    return
            if final is None:
                last = chunk
                yield chunk
                continue
            await stepper.aclose()
            final = await _postprocess_final(tool, tool_call, final, shielded=pending is not None)
            yield final
            if pending is not None:
                raise pending
            return
    finally:
        await stepper.aclose()


async def _next_chunk(
    stepper: _Stepper, tool: RegisteredToolFunction, tool_call: ToolUseBlock
) -> Any:
    """The tool's next chunk, post-processed, or ``_DONE``.

    :raises TypeError: when the tool gave something other than a ToolResponse.
    """
    chunk = await stepper.step()
    if chunk is _DONE:
        return chunk
    if not isinstance(chunk, ToolResponse):
        raise TypeError(
            f"tool {tool.name!r} returned {type(chunk).__name__}; a tool function must return a "
            "ToolResponse, or yield ToolResponse chunks"
        )
    return await _postprocess(tool, tool_call, chunk)


async def _postprocess_final(
    tool: RegisteredToolFunction, tool_call: ToolUseBlock, final: ToolResponse, shielded: bool
) -> ToolResponse:
    if tool.postprocess_func is None:
        return final
    result = final
    with anyio.CancelScope(shield=shielded) as scope:
        if shielded:
            scope.deadline = anyio.current_time() + CLEANUP_TIMEOUT
        try:
            result = await _postprocess(tool, tool_call, final)
        except Exception:
            # The final chunk already reports a failure; a failing postprocess must not hide it.
            result = final
    if final.is_interrupted and not result.is_interrupted:
        result = attrs.evolve(result, is_interrupted=True, is_last=True)
    return result
