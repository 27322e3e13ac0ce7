"""Pipelines: agents one after another, side by side, and everything they print as a stream.

Concurrency promises (each pinned by a test on asyncio and trio):

* :func:`fanout_pipeline` runs the agents in one task group: when one agent fails the others
  are cancelled and nothing keeps running after the call returns or raises; at most
  ``max_concurrency`` agents reply at once.
* :func:`stream_printing_messages` runs the coroutine in a task group of its own and stops it
  (cancelling it) when the consumer stops early; afterwards no agent feeds the stream.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncGenerator, Awaitable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, overload

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .._backend import open_task_group
from ..message import Msg

if TYPE_CHECKING:
    from ..agent import AgentBase, PrintedChunk, Speech

__all__ = ["fanout_pipeline", "sequential_pipeline", "stream_printing_messages"]

PRINT_STREAM_SIZE: Final = 64
"""Printed chunks buffered for the consumer of :func:`stream_printing_messages`; a printing
agent waits when the consumer is this far behind (bounded memory instead of a growing queue)."""

END_SIGNAL: Final = "[END]"
"""The default ``end_signal`` of :func:`stream_printing_messages` (AgentScope's)."""

PrintQueue: TypeAlias = (
    "tuple[MemoryObjectSendStream[PrintedChunk | str], MemoryObjectReceiveStream[Any]]"
)
"""What :func:`stream_printing_messages` accepts as ``queue``: the pair that
``anyio.create_memory_object_stream(size)`` returns."""


def _check_agents(agents: Any, where: str) -> list[AgentBase]:
    if isinstance(agents, str | bytes) or not isinstance(agents, Sequence):
        raise TypeError(
            f"{where}: agents must be a sequence of agents, not {type(agents).__name__}"
        )
    result = list(agents)
    for index, agent in enumerate(result):
        if not callable(agent):
            raise TypeError(
                f"{where}: agents[{index}] must be an agent (awaitable when called), "
                f"not {type(agent).__name__}"
            )
    return result


def _copy_input(msg: Msg | list[Msg] | None) -> Msg | list[Msg] | None:
    if msg is None:
        return None
    if isinstance(msg, list):
        return [m.copy() for m in msg]
    return msg.copy()


def _check_input(msg: Any, where: str) -> None:
    if msg is None or isinstance(msg, Msg):
        return
    if isinstance(msg, list) and all(isinstance(m, Msg) for m in msg):
        return
    raise TypeError(f"{where}: msg must be a Msg, a list of Msg or None, not {type(msg).__name__}")


async def sequential_pipeline(
    agents: Sequence[AgentBase],
    msg: Msg | list[Msg] | None = None,
) -> Msg | list[Msg] | None:
    """Call the agents one after another, each with the previous one's reply.

    :param agents: the agents, in order.
    :param msg: the input of the first agent.
    :returns: the reply of the last agent (*msg* itself when *agents* is empty).
    :raises TypeError: when *agents* is not a sequence of agents or *msg* not a Msg.
    :raises Exception: whatever an agent raises (the later agents are not called).
    """
    agent_list = _check_agents(agents, "sequential_pipeline")
    _check_input(msg, "sequential_pipeline")
    for agent in agent_list:
        msg = await agent(msg)
    return msg


async def fanout_pipeline(
    agents: Sequence[AgentBase],
    msg: Msg | list[Msg] | None = None,
    enable_gather: bool = True,
    max_concurrency: int | None = None,
    **kwargs: Any,
) -> list[Msg]:
    """Give the same input to every agent and collect their replies, in agent order.

    Each agent gets its own copy of *msg* (``Msg.copy()``), so no agent sees another's
    changes. With *enable_gather* the agents reply concurrently in one task group (at most
    *max_concurrency* at a time when given: that many tasks take the agents in order, each
    starting the next agent when its reply ends); otherwise one after another.

    When an agent raises, the agents still running are cancelled and the call raises that
    agent's exception itself (not wrapped), as AgentScope's ``asyncio.gather`` does. Only
    when several agents raise before the cancellation reaches them is an
    :class:`ExceptionGroup` holding all their errors raised; ``except*`` catches both forms.

    :param kwargs: passed to every agent call.
    :raises TypeError: for agents that are not agents or a msg that is not a Msg.
    :raises ValueError: when *max_concurrency* is not a positive int.
    """
    agent_list = _check_agents(agents, "fanout_pipeline")
    _check_input(msg, "fanout_pipeline")
    if max_concurrency is not None and (
        isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int)
    ):
        raise ValueError(
            f"fanout_pipeline: max_concurrency must be a positive int or None, "
            f"not {max_concurrency!r}"
        )
    if max_concurrency is not None and max_concurrency < 1:
        raise ValueError(
            f"fanout_pipeline: max_concurrency must be a positive int or None, "
            f"not {max_concurrency!r}"
        )
    if not enable_gather:
        return [await agent(_copy_input(msg), **kwargs) for agent in agent_list]

    results: list[Any] = [None] * len(agent_list)

    async def run(index: int, agent: AgentBase) -> None:
        results[index] = await agent(_copy_input(msg), **kwargs)

    # Agents not started yet, in order, shared by the workers (each is taken once).
    waiting = iter(enumerate(agent_list))

    async def work() -> None:
        for index, agent in waiting:
            results[index] = await agent(_copy_input(msg), **kwargs)

    try:
        # A task group without anyio's per-task handle where that is cheaper (see
        # _backend.open_task_group). One task per agent, or with max_concurrency that many
        # workers taking the agents in order: a million agents at 1,000 at a time hold 1,000
        # tasks, not a million waiting for their turn.
        async with open_task_group() as task_group:
            if max_concurrency is None or max_concurrency >= len(agent_list):
                for index, agent in waiting:
                    task_group.start_soon(run, index, agent)
            else:
                for _ in range(max_concurrency):
                    task_group.start_soon(work)
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1 and isinstance(group.exceptions[0], Exception):
            raise group.exceptions[0] from None
        raise
    return results


@overload
def stream_printing_messages(
    agents: Sequence[AgentBase],
    coroutine_task: Awaitable[Any],
    queue: PrintQueue | None = None,
    end_signal: str = END_SIGNAL,
    yield_speech: Literal[False] = False,
) -> AsyncGenerator[tuple[Msg, bool], None]: ...


@overload
def stream_printing_messages(
    agents: Sequence[AgentBase],
    coroutine_task: Awaitable[Any],
    queue: PrintQueue | None = None,
    end_signal: str = END_SIGNAL,
    *,
    yield_speech: Literal[True],
) -> AsyncGenerator[tuple[Msg, bool, Speech | None], None]: ...


@overload
def stream_printing_messages(
    agents: Sequence[AgentBase],
    coroutine_task: Awaitable[Any],
    queue: PrintQueue | None,
    end_signal: str,
    yield_speech: bool,
) -> AsyncGenerator[tuple[Msg, bool] | tuple[Msg, bool, Speech | None], None]: ...


async def stream_printing_messages(
    agents: Sequence[AgentBase],
    coroutine_task: Awaitable[Any],
    queue: PrintQueue | None = None,
    end_signal: str = END_SIGNAL,
    yield_speech: bool = False,
) -> AsyncGenerator[tuple[Msg, bool] | tuple[Msg, bool, Speech | None], None]:
    """Run *coroutine_task* and yield every chunk the *agents* print, as ``(msg, last)`` (or
    ``(msg, last, speech)`` with *yield_speech*).

    Each ``agent.print(...)`` call is yielded once, in the order they were printed; chunks of
    one streamed message share ``msg.id`` and ``last`` is true on its final chunk. Iteration
    ends when the coroutine finishes; if it raised, its exception is re-raised (unwrapped)
    after the chunks printed before it. Stopping early cancels the coroutine and waits for it
    to unwind — stop with ``break`` inside ``async with contextlib.aclosing(
    stream_printing_messages(...)) as stream:`` so that this happens at once, in the
    consumer's task (an async generator abandoned without ``aclose`` is finalised later, by
    the garbage collector, outside any task group). Either way, afterwards the agents no
    longer send what they print to the stream.

    :param agents: the agents whose printing is captured (their message queue is set for the
        duration and disabled afterwards).
    :param coroutine_task: the awaitable to run, e.g. ``agent(msg)`` or a pipeline call.
    :param queue: a stream to use instead of a private one, as AgentScope's ``queue``: the
        ``(send, receive)`` pair that ``anyio.create_memory_object_stream(size)`` returns.
        Others may send printed ``(msg, last, speech)`` tuples (or ``(msg, last)`` pairs) into
        it too; they are yielded like the agents' own. The streams stay open (they are the
        caller's): when the coroutine ends, *end_signal* is sent into it to end the
        iteration. An ``asyncio.Queue`` is refused on both backends (it cannot work under
        trio); the memory object stream is its equivalent on either.
    :param end_signal: the string that ends the iteration when received from the stream. Sent
        by this function when the coroutine ends (with a *queue* of the caller's); sent by
        anyone else before that, it ends the iteration early, which cancels the coroutine as
        stopping early does (AgentScope would leave it running).
    :param yield_speech: yield ``(msg, last, speech)`` triples, *speech* being the audio the
        agent printed with the message (``None`` when none).
    :raises TypeError: when *coroutine_task* is not awaitable, *agents* not agents, *queue*
        not a memory object stream pair, *end_signal* not a str, or when the stream delivers
        something that is neither a printed chunk nor *end_signal* (raised after the
        coroutine is cancelled).
    """
    agent_list = _check_agents(agents, "stream_printing_messages")
    if not inspect.isawaitable(coroutine_task):
        raise TypeError(
            "stream_printing_messages: coroutine_task must be awaitable (e.g. agent(msg)), "
            f"not {type(coroutine_task).__name__}"
        )
    if not isinstance(end_signal, str):
        _close_unawaited(coroutine_task)
        raise TypeError(
            f"stream_printing_messages: end_signal must be a str, not {type(end_signal).__name__}"
        )
    send: MemoryObjectSendStream[PrintedChunk | str]
    receive: MemoryObjectReceiveStream[Any]
    if queue is None:
        send, receive = anyio.create_memory_object_stream(PRINT_STREAM_SIZE)
        own_stream = True
    else:
        try:
            send, receive = _check_queue(queue)
        except TypeError:
            _close_unawaited(coroutine_task)
            raise
        own_stream = False
    for agent in agent_list:
        agent.set_msg_queue_enabled(True, send)
    failure: list[Exception] = []
    finished = False

    async def run() -> None:
        nonlocal finished
        try:
            await coroutine_task
        except Exception as exc:
            # Kept, not raised into the task group: the consumer first gets every chunk
            # printed before the failure, then the exception itself.
            failure.append(exc)
        finally:
            if own_stream:
                send.close()
        finished = True
        if not own_stream:
            # The caller's stream stays open: the end signal marks where this run ends.
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await send.send(end_signal)

    stopped_early = False
    bad_item: Any = _NOTHING
    try:
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(run)
            while True:
                try:
                    item = await receive.receive()
                except anyio.EndOfStream:
                    break
                if item.__class__ is tuple and 2 <= len(item) <= 3:
                    chunk: Any = item
                elif isinstance(item, str) and item == end_signal:
                    if not finished:
                        stopped_early = True
                        task_group.cancel_scope.cancel()
                    break
                else:
                    bad_item = item
                    task_group.cancel_scope.cancel()
                    break
                if yield_speech:
                    chunk = chunk if len(chunk) == 3 else (chunk[0], chunk[1], None)
                else:
                    chunk = chunk if len(chunk) == 2 else (chunk[0], chunk[1])
                try:
                    yield chunk
                except GeneratorExit:
                    stopped_early = True
                    task_group.cancel_scope.cancel()
                    break
    finally:
        _disable_queue(agent_list, send)
        if own_stream:
            send.close()
            receive.close()
    if bad_item is not _NOTHING:
        raise TypeError(
            f"stream_printing_messages: the stream delivered {bad_item!r}, which is neither a "
            f"printed (msg, last, speech) tuple nor the end signal {end_signal!r}"
        )
    if not stopped_early and failure:
        raise failure[0]


_NOTHING: Final = object()


def _check_queue(queue: Any) -> tuple[MemoryObjectSendStream[Any], MemoryObjectReceiveStream[Any]]:
    """The send and receive ends of *queue*, a memory object stream pair.

    :raises TypeError: for anything else, saying what to pass instead.
    """
    if (
        isinstance(queue, tuple)
        and len(queue) == 2
        and isinstance(queue[0], MemoryObjectSendStream)
        and isinstance(queue[1], MemoryObjectReceiveStream)
    ):
        return queue[0], queue[1]
    hint = (
        " (an asyncio.Queue does not work under trio)"
        if type(queue).__module__.startswith("asyncio")
        else ""
    )
    raise TypeError(
        "stream_printing_messages: queue must be the (send, receive) pair of an anyio memory "
        f"object stream, e.g. anyio.create_memory_object_stream(100), not "
        f"{type(queue).__name__}{hint}"
    )


def _close_unawaited(awaitable: Awaitable[Any]) -> None:
    # A coroutine that will never run is closed, so Python does not warn that it was never
    # awaited on top of the error the caller gets.
    if inspect.iscoroutine(awaitable):
        awaitable.close()


def _disable_queue(agents: list[AgentBase], send: MemoryObjectSendStream[Any]) -> None:
    for agent in agents:
        # Leave alone an agent whose queue was pointed elsewhere meanwhile.
        if getattr(agent, "msg_queue", None) is send:
            agent.set_msg_queue_enabled(False)
