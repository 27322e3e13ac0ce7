"""RemoteAgent: the local stand-in of an agent that lives on an agent host."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from .._ids import new_id
from .._json import check_json
from ..agent import AgentBase
from ..exception import AgentError, MessageFormatError, StateError
from ..message import Msg
from ._wire import kwargs_to_wire, msg_from_wire, msg_to_wire

if TYPE_CHECKING:
    from ._host import AgentHost

__all__ = ["AgentHostDiedError", "RemoteAgent"]

# How long an interrupted (or cancelled) proxy waits for the remote agent's interrupt reply.
_INTERRUPT_WAIT_S = 30.0


class AgentHostDiedError(AgentError):
    """The agent host holding an agent is gone (its Ray actor died or was killed): the agent
    and everything it held are lost. The message names the agent and the host."""


class RemoteAgent(AgentBase):
    """An agent on an :class:`~agentscope_rt.distributed.AgentHost`, used like a local one.

    ``await proxy(msg)`` runs the remote agent's own ``__call__`` (its hooks, its memory) and
    returns its reply; the proxy's ``__call__`` adds this side's hooks, interrupts and
    broadcasting, so pipelines, ``MsgHub`` and ``fanout_pipeline`` take proxies and local
    agents alike. Messages cross as JSON (``Msg.to_dict``), so the reply is an equal copy,
    never the remote object.

    :meth:`interrupt` interrupts the remote reply (its cancel scope on the host) and the call
    answers with the remote agent's ``handle_interrupt`` reply. A cancellation from outside
    also interrupts the remote reply before it propagates. :meth:`state_dict` and
    :meth:`load_state_dict` are the remote agent's (they block while they fetch: call them
    where a blocking call is fine, or through ``anyio.to_thread.run_sync``).

    :ivar host: the agent host.
    :raises AgentHostDiedError: from any call once the host is gone.
    """

    def __init__(self, host: AgentHost, agent_id: str, name: str) -> None:
        super().__init__()
        self.id = agent_id
        self.name = name
        self.host = host
        self._interrupt_reply: Msg | None = None

    def __repr__(self) -> str:
        return f"RemoteAgent(name={self.name!r}, id={self.id!r}, host={self.host.name!r})"

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        """The remote agent's reply to *msg*.

        :raises TypeError: when *msg* is not messages or *kwargs* are not JSON data.
        :raises AgentHostDiedError: when the host is gone.
        :raises Exception: what the remote reply raised (its own type when Ray can carry it).
        """
        where = f"{self.name}.reply"
        payload = msg_to_wire(msg, where)
        kwargs_to_wire(kwargs, where)
        call_id = new_id()
        self._interrupt_reply = None
        actor = self.host.actor_for(self)
        ref = actor.reply.remote(self.id, call_id, payload, kwargs)
        try:
            data = await self.host.wait(ref, self)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                self._interrupt_reply = await self._interrupt_remote(actor, call_id, ref)
            raise
        answer = msg_from_wire(data)
        if not isinstance(answer, Msg):
            raise AgentError(f"the remote agent {self.name!r} answered {type(answer).__name__}")
        return answer

    async def _interrupt_remote(self, actor: Any, call_id: str, ref: Any) -> Msg | None:
        """Interrupt remote call *call_id* and wait (bounded) for its interrupt reply;
        ``None`` when it does not come (the host is gone, the reply failed, the wait ran out)."""
        with anyio.move_on_after(_INTERRUPT_WAIT_S):
            try:
                actor.interrupt.remote(call_id)
                answer = msg_from_wire(await self.host.wait(ref, self))
            except Exception:
                return None
            return answer if isinstance(answer, Msg) else None
        return None

    async def handle_interrupt(self, *args: Any, **kwargs: Any) -> Msg:
        """The remote agent's interrupt reply (the default one when it did not come)."""
        answer, self._interrupt_reply = self._interrupt_reply, None
        if answer is not None:
            return answer
        return await super().handle_interrupt(*args, **kwargs)

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        """Let the remote agent observe *msg*; returns once it has.

        :raises AgentHostDiedError: when the host is gone.
        """
        payload = msg_to_wire(msg, f"{self.name}.observe")
        await self.host.wait(self.host.actor_for(self).observe.remote(self.id, payload), self)

    def state_dict(self) -> dict[str, Any]:
        """The remote agent's state (its own layout: AgentScope's for AgentScope's classes).

        :raises AgentHostDiedError: when the host is gone.
        """
        ref = self.host.actor_for(self).state_dict.remote(self.id)
        state: dict[str, Any] = self.host.get(ref, self)
        return state

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Load *state_dict* into the remote agent (all or nothing, as locally).

        :raises StateError: when *state_dict* is not JSON data or the remote agent refuses it.
        :raises AgentHostDiedError: when the host is gone.
        """
        try:
            check_json(state_dict, "state_dict")
        except MessageFormatError as exc:
            raise StateError(f"{self.name}: cannot load {exc}") from None
        actor = self.host.actor_for(self)
        self.host.get(actor.load_state_dict.remote(self.id, state_dict, strict), self)
