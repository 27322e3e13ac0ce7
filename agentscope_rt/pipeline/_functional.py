"""Pipelines: agents one after another, side by side, and everything they print as a stream.

Concurrency promises (each pinned by a test on asyncio and trio):

* :func:`fanout_pipeline` runs the agents in one task group: when one agent fails the others
  are cancelled and nothing keeps running after the call returns or raises; at most
  ``max_concurrency`` agents reply at once.
* :func:`stream_printing_messages` runs the coroutine in a task group of its own and stops it
  (cancelling it) when the consumer stops early; afterwards no agent feeds the stream.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Sequence
from typing import TYPE_CHECKING, Any, Final

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from .._backend import open_task_group
from ..message import Msg

if TYPE_CHECKING:
    from ..agent import AgentBase

__all__ = ["fanout_pipeline", "sequential_pipeline", "stream_printing_messages"]

PRINT_STREAM_SIZE: Final = 64
"""Printed chunks buffered for the consumer of :func:`stream_printing_messages`; a printing
agent waits when the consumer is this far behind (bounded memory instead of a growing queue)."""


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
    *max_concurrency* at a time when given); otherwise one after another.

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
    limiter = anyio.CapacityLimiter(max_concurrency) if max_concurrency is not None else None

    async def run(index: int, agent: AgentBase) -> None:
        if limiter is None:
            results[index] = await agent(_copy_input(msg), **kwargs)
        else:
            async with limiter:
                results[index] = await agent(_copy_input(msg), **kwargs)

    try:
        # One task per agent: a task group without anyio's per-task handle where that is
        # cheaper (see _backend.open_task_group).
        async with open_task_group() as task_group:
            for index, agent in enumerate(agent_list):
                task_group.start_soon(run, index, agent)
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1 and isinstance(group.exceptions[0], Exception):
            raise group.exceptions[0] from None
        raise
    return results


async def stream_printing_messages(
    agents: Sequence[AgentBase],
    coroutine_task: Awaitable[Any],
) -> AsyncGenerator[tuple[Msg, bool], None]:
    """Run *coroutine_task* and yield every chunk the *agents* print, as ``(msg, last)``.

    Chunks come in the order they were printed; chunks of one streamed message share
    ``msg.id`` and ``last`` is true on its final chunk. Iteration ends when the coroutine
    finishes; if it raised, its exception is re-raised (unwrapped) after the chunks printed
    before it. Stopping early cancels the coroutine and waits for it to unwind — stop with
    ``break`` inside ``async with contextlib.aclosing(stream_printing_messages(...)) as
    stream:`` so that this happens at once, in the consumer's task (an async generator
    abandoned without ``aclose`` is finalised later, by the garbage collector, outside any
    task group). Either way, afterwards the agents no longer send what they print to the
    stream.

    :param agents: the agents whose printing is captured (their message queue is set for the
        duration and disabled afterwards).
    :param coroutine_task: the awaitable to run, e.g. ``agent(msg)`` or a pipeline call.
    :raises TypeError: when *coroutine_task* is not awaitable or *agents* not agents.
    """
    agent_list = _check_agents(agents, "stream_printing_messages")
    if not inspect.isawaitable(coroutine_task):
        raise TypeError(
            "stream_printing_messages: coroutine_task must be awaitable (e.g. agent(msg)), "
            f"not {type(coroutine_task).__name__}"
        )
    send, receive = anyio.create_memory_object_stream[tuple[Msg, bool]](PRINT_STREAM_SIZE)
    for agent in agent_list:
        agent.set_msg_queue_enabled(True, send)
    failure: list[Exception] = []

    async def run() -> None:
        try:
            await coroutine_task
        except Exception as exc:
            # Kept, not raised into the task group: the consumer first gets every chunk
            # printed before the failure, then the exception itself.
            failure.append(exc)
        finally:
            send.close()

    stopped_early = False
    try:
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(run)
            while True:
                try:
                    item = await receive.receive()
                except anyio.EndOfStream:
                    break
                try:
                    yield item
                except GeneratorExit:
                    stopped_early = True
                    task_group.cancel_scope.cancel()
                    break
    finally:
        _disable_queue(agent_list, send)
        send.close()
        receive.close()
    if not stopped_early and failure:
        raise failure[0]


def _disable_queue(agents: list[AgentBase], send: MemoryObjectSendStream[tuple[Msg, bool]]) -> None:
    for agent in agents:
        # Leave alone an agent whose queue was pointed elsewhere meanwhile.
        if getattr(agent, "msg_queue", None) is send:
            agent.set_msg_queue_enabled(False)
