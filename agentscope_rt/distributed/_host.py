"""AgentHost: one Ray actor holding many agents, and the proxies that reach them."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.to_thread

from .._ids import new_id
from .._ray import (
    driver_only_modules,
    ensure_ray,
    import_ray,
    kill_actors,
    send_by_value,
    wait_ref,
)
from ..agent import AgentBase
from ._actor import HostActor
from ._group import RemoteGroup
from ._proxy import AgentHostDiedError, RemoteAgent
from ._recovery import OneAtATime, OnHost

__all__ = ["AgentFactory", "AgentHost", "GroupFactory"]

AgentFactory = Callable[..., AgentBase]
"""Builds one agent on the host from keyword arguments; must be picklable (a module-level
function or class: Ray sends it with cloudpickle)."""

GroupFactory = Callable[..., Sequence[AgentBase]]
"""Builds a group's agents on the host from keyword arguments, in one call (so they may
share a model, a formatter, a toolkit); picklable, as :data:`AgentFactory`."""

# Who a call is for: an agent's proxy, a group, or (None) the host itself.
_For = OnHost | None

logger = logging.getLogger("agentscope_rt.distributed")

# Agents created per Ray call: large batches are one message each way, not one per agent.
_CREATE_BATCH = 2_000


class AgentHost:
    """A Ray actor holding many agents (thousands): one process, one event loop, the agents
    side by side as in a single-process program; callers hold a :class:`RemoteAgent` each.

    Use ``async with AgentHost("host-0") as host:`` (or :meth:`start` / :meth:`close`). Ray is
    started (``ray.init(**ray_init_options)``) when it is not running, from a thread kept for
    the life of the process, so it outlives the event loop that started it: hosts work in one
    event loop after another (``asyncio`` then ``trio``). The caller may run on either.

    In a durable run, a host whose actor dies is replaced by a new actor (:meth:`replace`)
    and its agents restored there (see :class:`RemoteAgent`); outside one, its proxies raise
    :class:`AgentHostDiedError`.

    :param name: the host's name (in errors and reprs); a fresh one by default.
    :param actor_options: more ``.options(...)`` for the actor (``num_cpus``, ``resources``,
        ``scheduling_strategy``...). By default the actor reserves no CPU (its agents mostly
        wait on models) and runs up to 10,000 calls at once.
    :param ray_init_options: keyword arguments of ``ray.init`` when this host starts Ray
        (``num_cpus``, ``address``...); ignored when Ray is already running.
    :raises ImportError: when Ray is not installed.
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        actor_options: dict[str, Any] | None = None,
        ray_init_options: dict[str, Any] | None = None,
    ) -> None:
        self._ray = import_ray("agentscope_rt.distributed")
        self.name = name or f"agent-host-{new_id()[:8]}"
        self.actor_options = dict(actor_options or {})
        self.ray_init_options = dict(ray_init_options or {})
        self._actor: Any = None
        self._dead = False
        self._closed = False
        # Which actor the host is on: a host replaced after its actor died counts up.
        self.generation = 0
        self._replacing = OneAtATime()

    def __repr__(self) -> str:
        state = "dead" if self._dead else "running" if self._actor is not None else "not started"
        return f"AgentHost(name={self.name!r}, {state})"

    @property
    def dead(self) -> bool:
        """Whether the host's actor is known to have died (and was not replaced yet)."""
        return self._dead

    @property
    def actor(self) -> Any:
        """The Ray actor handle.

        :raises RuntimeError: when the host is not started.
        """
        if self._actor is None:
            raise RuntimeError(f"agent host {self.name!r} is not started: await host.start()")
        return self._actor

    def actor_for(self, agent: OnHost) -> Any:
        """The Ray actor handle, for a call on behalf of *agent* (a proxy or a group).

        :raises AgentHostDiedError: when the host was closed or is known to be dead.
        """
        if self._actor is None or self._dead:
            state = "dead" if self._dead else "closed or not started"
            raise AgentHostDiedError(
                f"agent host {self.name!r} is {state}: {agent._who} is not reachable"
            )
        if agent.generation != self.generation:
            raise AgentHostDiedError(
                f"agent host {self.name!r} died and was replaced; {agent._who} was lost with "
                "it (only agents taking part in a durable run are restored on the new host)"
            )
        return self._actor

    async def replace(self, generation: int) -> None:
        """Start a new actor in place of the actor of *generation*, which died (once, when
        several callers find it dead; nothing when it was replaced already).

        :raises AgentHostDiedError: when the host was closed.
        """

        async def start_again() -> None:
            began = time.monotonic()
            actor = await anyio.to_thread.run_sync(self._start_actor)
            self._actor, self._dead = actor, False
            self.generation += 1
            await self.wait(actor.ping.remote(), None)
            logger.warning(
                "agent host %r died; a new one answers after %.2f s: its agents taking part "
                "in a durable run are restored from their last recorded state, and their "
                "calls in flight retried",
                self.name,
                time.monotonic() - began,
            )

        if self._closed:
            raise AgentHostDiedError(f"agent host {self.name!r} was closed")
        await self._replacing.run(lambda: generation == self.generation, start_again)

    async def start(self) -> Self:
        """Start Ray when it is not running, then the actor, and wait until it answers.

        Cancellable throughout (a ``fail_after`` around it stops the wait); a Ray start that
        was under way goes on in its own thread and the next start waits for it.

        :raises RuntimeError: when already started.
        :raises AgentHostDiedError: when the actor died before it answered.
        :raises Exception: what ``ray.init`` raised when Ray could not start.
        """
        if self._actor is not None or self._dead:
            raise RuntimeError(f"agent host {self.name!r} was already started")
        await ensure_ray(self._ray, self.ray_init_options)
        self._closed = False
        self._actor = await anyio.to_thread.run_sync(self._start_actor)
        try:
            await self.wait(self._actor.ping.remote(), None)
        except BaseException:
            # `async with` runs no __aexit__ for a failed __aenter__: the actor goes here.
            await self.close()
            raise
        return self

    def _start_actor(self) -> Any:
        options = {"num_cpus": 0, "max_concurrency": 10_000, **self.actor_options}
        return self._ray.remote(HostActor).options(**options).remote(self.name)

    async def close(self) -> None:
        """Kill the actor: its agents are gone (their proxies raise
        :class:`AgentHostDiedError`). Closing twice is a no-op."""
        actor, self._actor = self._actor, None
        self._closed = actor is not None or self._closed
        if actor is not None and not self._dead:
            await kill_actors(self._ray, [actor])

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def create_agent(self, factory: AgentFactory, /, **kwargs: Any) -> RemoteAgent:
        """Build ``factory(**kwargs)`` on the host; its proxy.

        :raises TypeError: when the factory cannot be pickled or does not return an agent.
        """
        (agent,) = await self.create_agents(factory, [kwargs])
        return agent

    async def create_agents(
        self, factory: AgentFactory, calls: Iterable[dict[str, Any]]
    ) -> list[RemoteAgent]:
        """Build ``factory(**kwargs)`` on the host for each *kwargs* of *calls* (in batches of
        a few thousand per Ray call); their proxies, in order.

        The factory's module is sent by value when the host could not import it (neither
        installed nor in the current folder, the script's folder or ``PYTHONPATH``).

        :raises TypeError: when the factory cannot be pickled, cannot be loaded on the host,
            or does not return an agent (agents of earlier batches stay on the host).
        :raises AgentHostDiedError: when the host is gone.
        """
        calls = [dict(kwargs) for kwargs in calls]
        send_by_value(self._ray, driver_only_modules([factory]))
        proxies: list[RemoteAgent] = []
        for start in range(0, len(calls), _CREATE_BATCH):
            batch = calls[start : start + _CREATE_BATCH]
            created = await self._build(self.actor.create, factory, batch)
            proxies += [
                RemoteAgent(self, agent_id, name, (factory, kwargs))
                for (agent_id, name), kwargs in zip(created, batch, strict=True)
            ]
        return proxies

    async def create_group(self, build: GroupFactory, /, **kwargs: Any) -> RemoteGroup:
        """Build a group of agents on the host: ``build(**kwargs)`` runs there once and
        returns the agents (a sequence); their handle, a :class:`RemoteGroup`, which
        reaches them all in one call. Nothing per agent is kept on this side.

        The build function's module is sent by value when the host could not import it, as
        for :meth:`create_agents`.

        :raises TypeError: when *build* cannot be pickled, cannot be loaded on the host, or
            does not return a sequence of agents.
        :raises AgentHostDiedError: when the host is gone.
        """
        send_by_value(self._ray, driver_only_modules([build]))
        group_id, size = await self._build(self.actor.create_group, build, kwargs)
        return RemoteGroup(self, group_id, size, (build, dict(kwargs)))

    async def _build(self, method: Any, *args: Any) -> Any:
        """What the building call ``method.remote(*args)`` answers, its pickling errors as
        TypeError.

        :raises TypeError: when the factory or its arguments cannot be sent or loaded.
        """
        try:
            ref = method.remote(*args)
        except Exception as exc:  # cloudpickle's own errors vary by what failed
            raise TypeError(
                f"agent host {self.name!r}: the agent factory (or its arguments) cannot be "
                f"sent to the host: {type(exc).__name__}: {exc}"
            ) from None
        try:
            return await self.wait(ref, None)
        except self._ray.exceptions.RaySystemError as exc:  # the arguments did not unpickle
            lines = str(exc).strip().splitlines()
            raise TypeError(
                f"agent host {self.name!r} cannot load the agent factory (or its arguments): "
                f"{lines[0] if lines else type(exc).__name__}; make its module importable "
                "there (installed, or in PYTHONPATH when Ray starts)"
            ) from None

    async def stats(self) -> dict[str, int]:
        """What the host counts: ``agents``, ``groups``, ``group_replies`` and
        ``group_observes`` (group calls made: one per group per fanout or broadcast),
        ``group_calls_running``, ``agents_busy`` (agents inside a group call now) and
        ``peak_rss_kib`` (the host process's peak resident memory).

        :raises AgentHostDiedError: when the host is gone.
        """
        stats: dict[str, int] = await self.wait(self.actor.stats.remote(), None)
        return stats

    async def count(self) -> int:
        """How many agents the host holds."""
        count: int = await self.wait(self.actor.count.remote(), None)
        return count

    # -- waiting for Ray, with its errors in this package's terms ------------------------

    async def wait(self, ref: Any, agent: _For) -> Any:
        """The value of *ref*, a call on this host for *agent* (a proxy or a group;
        ``None``: the host itself).

        :raises AgentHostDiedError: when the actor is gone.
        :raises Exception: what the remote call raised, as its own type when Ray carries it.
        """
        try:
            return await wait_ref(self._ray, ref)
        except self._ray.exceptions.RayError as exc:
            raise self._translate(exc, agent) from None

    def get(self, ref: Any, agent: _For) -> Any:
        """:meth:`wait`, blocking (for the synchronous state methods)."""
        try:
            return self._ray.get(ref)
        except self._ray.exceptions.RayError as exc:
            raise self._translate(exc, agent) from None

    def _translate(self, exc: BaseException, agent: _For) -> BaseException:
        ray = self._ray
        who = agent._who if agent is not None else "it"
        if isinstance(exc, ray.exceptions.RayActorError):
            # A late answer from an actor already replaced says nothing of the new one.
            if agent is None or agent.generation == self.generation:
                self._dead = True
            return AgentHostDiedError(
                f"agent host {self.name!r} is gone (its Ray actor died or was killed), and "
                f"{who} with it: {type(exc).__name__}"
            )
        if isinstance(exc, ray.exceptions.RayTaskError):
            cause = getattr(exc, "cause", None)
            if isinstance(cause, Exception):
                return cause
        return exc
