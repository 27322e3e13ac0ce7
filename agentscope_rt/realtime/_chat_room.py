"""AgentScope's :class:`ChatRoom` on anyio: several realtime agents in one conversation.

Every agent delivers its server events to the room; the room hands each to the frontend's
outgoing stream and to every other agent (so one agent's speech reaches the others as audio
input, as in AgentScope), and hands the frontend's client events to every agent.
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from ._client_events import ClientEvents
from ._realtime_agent import Deliver, RealtimeAgent, _deliverer
from ._server_events import ServerEvents

__all__ = ["ChatRoom"]


class ChatRoom:
    """Broadcasts among realtime agents and between them and the frontend.

    :param agents: the agents in the room.
    """

    def __init__(self, agents: list[RealtimeAgent]) -> None:
        self.agents = agents
        self._stack: contextlib.AsyncExitStack | None = None
        self._send: Any = None

    def __repr__(self) -> str:
        return f"ChatRoom(agents={[a.name for a in self.agents]!r})"

    async def start(self, outgoing_queue: Any) -> None:
        """Start the room's forwarding task and every agent (each connects its model).

        Call :meth:`start` and :meth:`stop` from one task. The agents deliver to the room
        through a stream without buffer, so a chunk of speech counts as heard (for barge-in)
        when the room passed it on.

        :param outgoing_queue: where every agent's server events go (the frontend): an anyio
            memory object send stream (or anything with an async ``send``; an
            ``asyncio.Queue`` works under asyncio).
        :raises RuntimeError: when already started.
        :raises TypeError: for an *outgoing_queue* that can take no events.
        :raises ModelAPIError: when an agent's model cannot connect (the agents started
            before it are stopped again).
        """
        if self._stack is not None:
            raise RuntimeError("the ChatRoom is already started")
        deliver = _deliverer(outgoing_queue)
        stack = contextlib.AsyncExitStack()
        try:
            group = await stack.enter_async_context(anyio.create_task_group())
            send, receive = anyio.create_memory_object_stream[Any](0)
            stack.callback(receive.close)
            stack.callback(send.close)
            stack.callback(group.cancel_scope.cancel)
            group.start_soon(self._forward_loop, receive, deliver)
            for agent in self.agents:
                await agent.start(send)
                stack.push_async_callback(agent.stop)
        except BaseException:
            await stack.aclose()
            raise
        self._stack, self._send = stack, send

    async def stop(self) -> None:
        """Stop every agent (in reverse order), then the room's task. Safe to call twice."""
        stack, self._stack, self._send = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    async def handle_input(self, event: ClientEvents.EventBase) -> None:
        """Hand an event of the frontend to every agent of the room. Never blocks (each
        agent queues its inputs): the frontend may hand its audio over while the room waits
        for it to read.

        :raises RuntimeError: when the room is not started.
        """
        if self._send is None:
            raise RuntimeError("the ChatRoom is not started")
        for agent in self.agents:
            await agent.handle_input(event)

    async def _forward_loop(
        self, receive: MemoryObjectReceiveStream[Any], deliver: Deliver
    ) -> None:
        async for event in receive:
            if isinstance(event, ClientEvents.EventBase):
                for agent in self.agents:
                    await agent.handle_input(event)
            elif isinstance(event, ServerEvents.EventBase):
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await deliver(event)
                sender = getattr(event, "agent_id", None)
                if sender:
                    for agent in self.agents:
                        if agent.id != sender:
                            await agent.handle_input(event)
