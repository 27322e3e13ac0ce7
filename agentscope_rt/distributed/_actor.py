"""The body of an agent host: one Ray actor (an async actor, so its methods run concurrently
on the actor's asyncio loop) holding many agents, addressed by their ids."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from ..agent import AgentBase, GenerateReason
from ..durable import DurableRun, StepRecord, join_run
from ._relay import Relay
from ._wire import WireMsg, msg_from_wire, msg_to_wire

__all__ = ["HostActor"]

_EARLY_MAX = 10_000


class HostActor:
    """Agents built on this side from a factory; replies, observations, interrupts and state
    by agent id. Everything that comes in or goes out is JSON data (messages through
    ``Msg.to_dict``) except the factory, which Ray pickles."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._agents: dict[str, AgentBase] = {}
        # call id -> agent, while the call is in progress on this host.
        self._running: dict[str, AgentBase] = {}
        # Interrupts that arrived before their call did (Ray may start tasks out of order).
        # Kept in arrival order and bounded: an interrupt that crossed its call's answer
        # leaves an id here that nothing will claim.
        self._early: dict[str, None] = {}
        # call id -> the records of a call of a durable run, on their way to the caller.
        self._relays: dict[str, Relay] = {}

    def ping(self) -> str:
        return self._name

    def create(
        self, factory: Callable[..., Any], calls: list[dict[str, Any]]
    ) -> list[tuple[str, str]]:
        """Build one agent per keyword-arguments dict of *calls*; their ids and names.

        :raises TypeError: when the factory returns something that is not an agent (none of
            this call's agents are kept then).
        """
        built = [_build(factory, kwargs, index) for index, kwargs in enumerate(calls)]
        out = []
        for agent in built:
            self._agents[agent.id] = agent
            out.append((agent.id, str(getattr(agent, "name", type(agent).__name__))))
        return out

    def count(self) -> int:
        return len(self._agents)

    def _agent(self, agent_id: str) -> AgentBase:
        try:
            return self._agents[agent_id]
        except KeyError:
            raise LookupError(f"agent host {self._name!r} holds no agent {agent_id!r}") from None

    def restore(
        self,
        agent_id: str,
        factory: Callable[..., Any],
        kwargs: dict[str, Any],
        state: dict[str, Any] | None,
    ) -> None:
        """Build again, under its old id, an agent that lived on a host that died, and load
        *state* into it (``None``: leave it as the factory builds it)."""
        agent = _build(factory, kwargs, 0)
        if state is not None:
            agent.load_state_dict(state, strict=True)
        agent.id = agent_id
        self._agents[agent_id] = agent

    async def reply(
        self,
        agent_id: str,
        call_id: str,
        msg: WireMsg,
        kwargs: dict[str, Any],
        link: dict[str, Any] | None = None,
    ) -> Any:
        """The agent's reply; with *link* (a call of a durable run, see :meth:`_joined`)
        the reply with the agent's state and the steps taken."""
        async with self._joined(call_id, link) as run:
            agent = self._agent(agent_id)
            self._running[call_id] = agent
            try:
                if call_id in self._early:
                    del self._early[call_id]
                    answer = await agent.handle_interrupt(msg_from_wire(msg), **kwargs)
                else:
                    answer = await agent(msg_from_wire(msg), **kwargs)
            finally:
                del self._running[call_id]
        wire = msg_to_wire(answer, f"the reply of {agent_id}")
        return wire if run is None else {"reply": wire, **_report(agent, run)}

    async def observe(
        self,
        agent_id: str,
        msg: WireMsg,
        link: dict[str, Any] | None = None,
        call_id: str = "",
    ) -> dict[str, Any] | None:
        async with self._joined(call_id, link) as run:
            agent = self._agent(agent_id)
            await agent.observe(msg_from_wire(msg))
        return None if run is None else _report(agent, run)

    @asynccontextmanager
    async def _joined(
        self, call_id: str, link: dict[str, Any] | None
    ) -> AsyncIterator[DurableRun | None]:
        """Where call *call_id* runs: inside the durable run *link* names (its ids, the
        call's key and records), its records relayed to the caller (:meth:`relay`); nowhere
        in particular without."""
        if link is None:
            yield None
            return
        # Whatever happens, the caller hears that the call ended (it waits for its records).
        relay = self._relays.setdefault(call_id, Relay())
        try:
            records = [StepRecord(**record) for record in link["records"]]
            async with join_run(
                relay, link["run_id"], link["key"], records, user_id=link["user_id"]
            ) as run:
                yield run
        finally:
            relay.finish()

    async def relay(
        self, call_id: str, written: list[int]
    ) -> tuple[list[tuple[int, dict[str, Any]]], bool]:
        """The records of call *call_id* the caller did not write yet (waiting for one),
        once it said which it wrote (*written*); and whether the call ended."""
        relay = self._relays.setdefault(call_id, Relay())
        records, done = await relay.take(written)
        if done:
            del self._relays[call_id]
        return records, done

    def interrupt(self, call_id: str) -> bool:
        """Interrupt the call *call_id*; ``False`` when it has not started here yet (it will
        answer with the agent's interrupt reply when it does)."""
        agent = self._running.get(call_id)
        if agent is None:
            self._early[call_id] = None
            if len(self._early) > _EARLY_MAX:
                del self._early[next(iter(self._early))]
            return False
        agent.interrupt()
        return True

    def state_dict(self, agent_id: str) -> dict[str, Any]:
        return self._agent(agent_id).state_dict()

    def load_state_dict(self, agent_id: str, state: dict[str, Any], strict: bool) -> None:
        self._agent(agent_id).load_state_dict(state, strict=strict)

    def remove(self, agent_ids: list[str]) -> int:
        """Forget the agents *agent_ids*; how many there were."""
        return sum(self._agents.pop(agent_id, None) is not None for agent_id in agent_ids)


def _build(factory: Callable[..., Any], kwargs: dict[str, Any], index: int) -> AgentBase:
    agent = factory(**kwargs)
    if not isinstance(agent, AgentBase):
        raise TypeError(
            f"the agent factory must return an AgentBase, got {type(agent).__name__} "
            f"for call {index}"
        )
    return agent


def _report(agent: AgentBase, run: DurableRun) -> dict[str, Any]:
    """What the caller records after a call of a durable run: the agent's state (to restore
    it on another host) and the steps taken here."""
    return {
        "interrupted": agent.generate_reason == GenerateReason.INTERRUPTED,
        "state": agent.state_dict(),
        "taken": sorted(run.taken),
        "replayed": run.replayed,
    }
