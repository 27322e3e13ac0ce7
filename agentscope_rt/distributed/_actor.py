"""The body of an agent host: one Ray actor (an async actor, so its methods run concurrently
on the actor's asyncio loop) holding many agents, addressed by their ids."""

from __future__ import annotations

import resource
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import anyio

from .._ids import new_id
from ..agent import AgentBase, GenerateReason
from ..durable import DurableRun, StepRecord, join_calls, join_run
from ..message import Msg, share
from ._relay import Relay
from ._tasks import run_all
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
        # group id -> its agents, in order (see create_group).
        self._groups: dict[str, list[AgentBase]] = {}
        # call id -> the cancel scope of a group call in progress; cancels that arrived
        # before their call (kept as interrupts are, in arrival order and bounded).
        self._batches: dict[str, anyio.CancelScope] = {}
        self._cancelled_early: dict[str, None] = {}
        # Group calls per kind, and agents of groups inside a reply or observe now.
        self._calls: Counter[str] = Counter()
        self._busy = 0

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
        self, call_id: str, written: list[int], answer: list[dict[str, Any]] | None = None
    ) -> tuple[list[tuple[int, dict[str, Any]]], bool, list[str] | None]:
        """The records of call *call_id* the caller did not write yet (waiting for one),
        once it said which it wrote (*written*) and answered the call's question (*answer*,
        see :meth:`Relay.ask`); whether the call ended; the call's question, until answered."""
        relay = self._relays.setdefault(call_id, Relay())
        if answer is not None:
            relay.answer(answer)
        records, done = await relay.take(written)
        if done:
            del self._relays[call_id]
        return records, done, relay.question

    def interrupt(self, call_id: str) -> bool:
        """Interrupt the call *call_id*; ``False`` when it has not started here yet (it will
        answer with the agent's interrupt reply when it does)."""
        agent = self._running.get(call_id)
        if agent is None:
            _remember(self._early, call_id)
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

    # -- groups: many agents of this host addressed by one call -------------------------

    def create_group(
        self, build: Callable[..., Any], kwargs: dict[str, Any], group_id: str | None = None
    ) -> tuple[str, int]:
        """Build a group with ``build(**kwargs)`` (a sequence of agents); its id (a fresh one,
        or *group_id*: a group built again on a new host) and size.

        :raises TypeError: when *build* returns something that is not a sequence of agents
            (nothing is kept then).
        """
        built = build(**kwargs)
        if isinstance(built, AgentBase) or not isinstance(built, Iterable):
            raise TypeError(
                "a group's build function must return a sequence of agents, got "
                f"{type(built).__name__}"
            )
        agents = list(built)
        for index, agent in enumerate(agents):
            if not isinstance(agent, AgentBase):
                raise TypeError(
                    f"a group's build function must return agents (AgentBase), got "
                    f"{type(agent).__name__} at index {index}"
                )
        group_id = group_id or new_id()
        self._groups[group_id] = agents
        for agent in agents:
            self._agents[agent.id] = agent
        return group_id, len(agents)

    def members(self, group_id: str, start: int, stop: int) -> list[tuple[str, str]]:
        """The ids and names of the agents ``start:stop`` of group *group_id*."""
        return [(a.id, str(getattr(a, "name", ""))) for a in self._group(group_id)[start:stop]]

    def _group(self, group_id: str) -> list[AgentBase]:
        try:
            return self._groups[group_id]
        except KeyError:
            raise LookupError(f"agent host {self._name!r} holds no group {group_id!r}") from None

    async def group_reply(
        self,
        group_id: str,
        call_id: str,
        msg: WireMsg,
        kwargs: dict[str, Any],
        keep: tuple[str, str | None],
        limit: int,
        link: dict[str, Any] | None = None,
    ) -> Any:
        """Every agent of the group replies to its own copy of *msg*, at most *limit* at
        once; what *keep* says of each reply, in agent order (``("reply", None)``: the reply
        as JSON data, ``("metadata", None)``: its metadata, ``("metadata", key)``: that key
        of its metadata, ``None`` where missing). ``None`` when the call was cancelled.
        With *link* (see :meth:`_joined_group`), that in a dict with what the run needs.

        :raises Exception: what an agent raised (the others are cancelled), with a note
            naming the agent.
        """
        agents = self._group(group_id)
        received = msg_from_wire(msg)
        out: list[Any] = [None] * len(agents)

        async def one(index: int, agent: AgentBase) -> None:
            answer = await agent(_copy(received), **kwargs)
            out[index] = _kept(answer, keep, agent)

        async with self._joined_group(call_id, link, agents) as report:
            done = await self._batch("reply", call_id, agents, one, limit)
        return (out if done else None) if link is None else {"out": out, **report}

    async def group_observe(
        self,
        group_id: str,
        call_id: str,
        msg: WireMsg,
        limit: int,
        link: dict[str, Any] | None = None,
    ) -> Any:
        """Every agent of the group observes *msg*, at most *limit* at once; ``False`` when
        the call was cancelled. As a hub delivers it: one shared snapshot
        (``agentscope_rt.message.share``) that every memory holds, not a copy per agent.
        With *link* (see :meth:`_joined_group`), that in a dict with what the run needs.

        :raises Exception: what an observer raised (the others are cancelled), with a note
            naming the agent.
        """
        agents = self._group(group_id)
        received = msg_from_wire(msg)
        if isinstance(received, list):
            received = [share(one) for one in received]
        elif received is not None:
            received = share(received)

        async def one(index: int, agent: AgentBase) -> None:
            await agent.observe(received)

        async with self._joined_group(call_id, link, agents) as report:
            done = await self._batch("observe", call_id, agents, one, limit)
        return done if link is None else {"out": done, **report}

    @asynccontextmanager
    async def _joined_group(
        self, call_id: str, link: dict[str, Any] | None, agents: list[AgentBase]
    ) -> AsyncIterator[dict[str, Any]]:
        """Where the group call *call_id* runs: inside the durable run *link* names (its
        ids, and ``call``: the number of the agents' calls, or ``delivery``: where and which
        delivery), the records of the agents' calls asked from the caller and their new
        records relayed to it (:meth:`relay`); nowhere in particular without. Yields what
        the caller is told once the block ends: how many steps were replayed and the keys
        of the records handed that were not taken."""
        report: dict[str, Any] = {}
        if link is None:
            yield report
            return
        relay = self._relays.setdefault(call_id, Relay())
        delivery = link.get("delivery")
        try:
            async with join_calls(
                relay,
                link["run_id"],
                [str(getattr(agent, "name", "")) for agent in agents],
                relay.ask,
                user_id=link["user_id"],
                call=link.get("call"),
                delivery=None if delivery is None else (delivery[0], delivery[1]),
            ) as run:
                yield report
            report.update(replayed=run.replayed, untaken=run.untaken)
        finally:
            relay.finish()

    async def _batch(
        self,
        kind: str,
        call_id: str,
        agents: list[AgentBase],
        work: Callable[[int, AgentBase], Awaitable[None]],
        limit: int,
    ) -> bool:
        """``work(index, agent)`` for each agent in *limit* tasks, under a cancel scope that
        :meth:`cancel` reaches by *call_id*; whether it ran to its end."""
        self._calls[kind] += 1
        scope = anyio.CancelScope()
        if call_id in self._cancelled_early:
            del self._cancelled_early[call_id]
            scope.cancel()
        self._batches[call_id] = scope
        try:
            with scope:
                await _each(agents, self._named(work), limit)
        finally:
            del self._batches[call_id]
        return not scope.cancel_called

    def _named(
        self, work: Callable[[int, AgentBase], Awaitable[None]]
    ) -> Callable[[int, AgentBase], Awaitable[None]]:
        """*work*, counted as busy while it runs, its errors noting the agent."""

        async def named(index: int, agent: AgentBase) -> None:
            self._busy += 1
            try:
                await work(index, agent)
            except Exception as exc:
                exc.add_note(
                    f"raised by agent {getattr(agent, 'name', '')!r} ({agent.id}), number "
                    f"{index} of its group on agent host {self._name!r}"
                )
                raise
            finally:
                self._busy -= 1

        return named

    def cancel(self, call_id: str) -> None:
        """Cancel the group call *call_id* (or, when it has not started here yet, mark it to
        end at once when it does)."""
        scope = self._batches.get(call_id)
        if scope is None:
            _remember(self._cancelled_early, call_id)
        else:
            scope.cancel()

    def stats(self) -> dict[str, int]:
        """Counts for tests and measurements: agents, groups, group calls made per kind,
        group calls and agents' calls in progress, the process's peak RSS in KiB."""
        return {
            "agents": len(self._agents),
            "groups": len(self._groups),
            "group_replies": self._calls["reply"],
            "group_observes": self._calls["observe"],
            "group_calls_running": len(self._batches),
            "agents_busy": self._busy,
            "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        }


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


def _remember(early: dict[str, None], call_id: str) -> None:
    """Keep *call_id* in *early*, dropping the oldest beyond ``_EARLY_MAX`` (one that
    crossed its call's answer is never claimed)."""
    early[call_id] = None
    if len(early) > _EARLY_MAX:
        del early[next(iter(early))]


async def _each(
    agents: list[AgentBase], work: Callable[[int, AgentBase], Awaitable[None]], limit: int
) -> None:
    """``work(index, agent)`` for every agent, in at most *limit* tasks (not one task per
    agent: a host holds hundreds of thousands); one failure cancels the rest and is raised
    as itself, as ``fanout_pipeline`` raises it."""
    indices = iter(range(len(agents)))

    async def worker() -> None:
        # One iterator shared by the workers: each index is taken once.
        for index in indices:
            await work(index, agents[index])

    await run_all(worker for _ in range(min(limit, len(agents))))


def _copy(msg: Msg | list[Msg] | None) -> Msg | list[Msg] | None:
    """Each agent's own copy of a fanout's input, as ``fanout_pipeline`` gives."""
    if msg is None:
        return None
    return [one.copy() for one in msg] if isinstance(msg, list) else msg.copy()


def _kept(answer: Any, keep: tuple[str, str | None], agent: AgentBase) -> Any:
    """What the caller asked to get back of the reply *answer*."""
    what, key = keep
    if what == "reply":
        return msg_to_wire(answer, f"the reply of {agent.id}")
    metadata = answer.metadata if isinstance(answer, Msg) else None
    if key is None:
        return metadata
    return metadata.get(key) if isinstance(metadata, dict) else None
