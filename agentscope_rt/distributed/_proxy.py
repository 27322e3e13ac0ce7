"""RemoteAgent: the local stand-in of an agent that lives on an agent host."""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from .._ids import new_id
from .._json import check_json
from ..agent import AgentBase
from ..durable import DurableRun, current_run
from ..exception import AgentError, DurableRunError, MessageFormatError, StateError
from ..message import Msg
from ._recovery import AgentHostDiedError, OneAtATime, Relayed, on_host, restored_on, run_link
from ._wire import kwargs_to_wire, msg_from_wire, msg_to_wire

if TYPE_CHECKING:
    from ._group import RemoteGroup
    from ._host import AgentHost

__all__ = ["AgentHostDiedError", "RemoteAgent"]

logger = logging.getLogger("agentscope_rt.distributed")

# How long an interrupted (or cancelled) proxy waits for the remote agent's interrupt reply.
_INTERRUPT_WAIT_S = 30.0


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

    Inside a durable run (:func:`~agentscope_rt.durable.durable_run`), the remote agent's
    model and tool calls are recorded in the run's store under the proxy's call key and
    replayed from it, as a local agent's are; each call and observation brings the agent's
    state back and records it (``"snapshot:<name>"``). When the host dies, the call starts
    a new host in its place (same options), rebuilds the agent there from its factory and
    that state, and is made again under the same key: its recorded steps replay, so no
    model call is paid for twice and no tool runs twice.

    :ivar host: the agent host.
    :ivar generation: which of the host's actors holds the agent (see
        :meth:`AgentHost.replace`).
    :raises AgentHostDiedError: from any call once the host is gone (outside a durable run).
    """

    def __init__(
        self,
        host: AgentHost,
        agent_id: str,
        name: str,
        recipe: tuple[Callable[..., AgentBase], dict[str, Any]] | None = None,
        *,
        group: RemoteGroup | None = None,
    ) -> None:
        super().__init__()
        self.id = agent_id
        self.name = name
        self.host = host
        self.generation = host.generation
        # The factory and its arguments: how to build the agent again on a new host.
        self._recipe = recipe
        # The group the agent belongs to (its calls in a durable run go through the group).
        self._group = group
        self._restoring = OneAtATime()
        # The run this proxy recorded the agent's state in (only a state recorded by this
        # process is the agent's current one: a resumed run rebuilds it by replay).
        self._snapshot_of: weakref.ref[DurableRun] | None = None
        self._interrupt_reply: Msg | None = None

    def __repr__(self) -> str:
        return f"RemoteAgent(name={self.name!r}, id={self.id!r}, host={self.host.name!r})"

    @property
    def _who(self) -> str:
        """The agent in an error message."""
        return f"agent {self.name!r} ({self.id})"

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        """The remote agent's reply to *msg*.

        :raises TypeError: when *msg* is not messages or *kwargs* are not JSON data.
        :raises AgentHostDiedError: when the host is gone.
        :raises Exception: what the remote reply raised (its own type when Ray can carry it).
        """
        where = f"{self.name}.reply"
        payload = msg_to_wire(msg, where)
        kwargs_to_wire(kwargs, where)
        self._interrupt_reply = None
        run = current_run()
        data = await self._on_host(
            run,
            lambda actor, call_id, link: actor.reply.remote(
                self.id, call_id, payload, kwargs, link
            ),
            interruptible=True,
        )
        interrupted = run is not None and data["interrupted"]
        answer = msg_from_wire(data if run is None else await self._took(run, data))
        if not isinstance(answer, Msg):
            raise AgentError(f"the remote agent {self.name!r} answered {type(answer).__name__}")
        if interrupted:
            # The remote call ended interrupted: so does this one, with the same answer, as
            # the run records it and replays it.
            self._interrupt_reply = answer
            self.interrupt()
        return answer

    async def _interrupt_remote(self, relayed: Relayed, ref: Any) -> Msg | None:
        """Interrupt the remote call *relayed* follows and wait (bounded) for its interrupt
        reply (in a durable run, taken as any answer is); ``None`` when it does not come
        (the host is gone, the reply failed, the wait ran out)."""
        with anyio.move_on_after(_INTERRUPT_WAIT_S):
            try:
                relayed.actor.interrupt.remote(relayed.call_id)
                data = await relayed.result(ref)
                run = relayed.run
                answer = msg_from_wire(data if run is None else await self._took(run, data))
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
        run = current_run()
        data = await self._on_host(
            run,
            lambda actor, call_id, link: actor.observe.remote(self.id, payload, link, call_id),
            interruptible=False,
        )
        if run is not None:
            await self._took(run, data)

    # -- a durable run over the death of the host ----------------------------------------

    async def _on_host(
        self,
        run: DurableRun | None,
        send: Callable[[Any, str, dict[str, Any] | None], Any],
        *,
        interruptible: bool,
    ) -> Any:
        """What the call ``send(actor, call_id, link)`` starts on the host answers; in a
        durable run (*link* says which call of it) made again on a new host when the host
        dies (see :func:`on_host`). *interruptible*: a cancellation interrupts the remote
        call (see :meth:`_interrupt_remote`) before it propagates.

        :raises DurableRunError: in a durable run, for an agent of a group.
        """
        if run is not None and self._group is not None:
            raise DurableRunError(
                f"{self._who} belongs to {self._group._who}: in a durable run, a group's "
                "agents are called through their group (fanout, broadcast), which numbers "
                "their calls; call the group, or this proxy outside the run"
            )

        async def attempt(actor: Any) -> Any:
            call_id = new_id()
            ref = send(actor, call_id, None if run is None else run_link(run))
            relayed = Relayed(self.host, self, actor, call_id, run)
            try:
                return await relayed.result(ref)
            except anyio.get_cancelled_exc_class():
                if interruptible:
                    with anyio.CancelScope(shield=True):
                        self._interrupt_reply = await self._interrupt_remote(relayed, ref)
                raise

        return await on_host(self.host, self, run, lambda: self._reach(run), attempt)

    async def _reach(self, run: DurableRun | None) -> Any:
        """The actor holding the agent; in a durable run, a host that died is replaced and
        the agent restored there first."""
        if run is not None:
            return await restored_on(self, run)
        return self.host.actor_for(self)

    async def _restore(self, run: DurableRun) -> None:
        if self._recipe is None:
            raise AgentHostDiedError(
                f"agent {self.name!r} ({self.id}) died with agent host {self.host.name!r} and "
                "cannot be restored: it was not built by the host's create_agents"
            )
        began = time.monotonic()
        recorded = self._snapshot_of is not None and self._snapshot_of() is run
        state = run.snapshot(self.name) if recorded else None
        factory, kwargs = self._recipe
        ref = self.host.actor.restore.remote(self.id, factory, kwargs, state)
        await self.host.wait(ref, None)
        self.generation = self.host.generation
        logger.info(
            "agent %r restored on the new agent host %r %s in %.2f s",
            self.name,
            self.host.name,
            "from its last recorded state" if recorded else "as its factory builds it",
            time.monotonic() - began,
        )

    async def _took(self, run: DurableRun, data: dict[str, Any]) -> Any:
        """Count the steps the host replayed for *run* and record the agent's state; what
        the call answered."""
        run.add_taken(data["taken"], replayed=data["replayed"])
        await run.record_snapshot(self.name, data["state"])
        self._snapshot_of = weakref.ref(run)
        return data.get("reply")

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
