"""What proxies and groups need to carry a durable run across processes and over the death
of their agent host: what the host must know to take a call inside the run, the caller's
side of the relay of its records, making a call again on a new host when the host dies
under it, and rebuilding things once when several tasks find them gone at the same time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import attrs

from ..durable import DurableRun, StepRecord, current_step_key
from ..exception import AgentError
from ._wire import as_data

if TYPE_CHECKING:
    from ._host import AgentHost

__all__ = ["AgentHostDiedError", "OnHost", "OneAtATime", "Relayed", "on_host", "run_link"]

# How many times the host may die under one call of a durable run before the call gives up
# (a call that kills its host each time, say a local model running out of memory, would be
# made again for ever).
DEATHS_PER_CALL = 3


class AgentHostDiedError(AgentError):
    """The agent host holding an agent is gone (its Ray actor died or was killed): the agent
    and everything it held are lost. The message names the agent and the host."""


class OnHost(Protocol):
    """A proxy or a group: what a call on a host is made for."""

    host: AgentHost
    generation: int
    _restoring: OneAtATime

    @property
    def _who(self) -> str: ...

    async def _restore(self, run: DurableRun) -> None: ...


async def restored_on(who: OnHost, run: DurableRun) -> Any:
    """The actor holding *who* in *run*: a host that died is replaced first, and *who*
    restored on the new actor (once, however many tasks ask)."""
    host = who.host
    if host.dead:
        await host.replace(host.generation)
    await who._restoring.run(lambda: who.generation != host.generation, lambda: who._restore(run))
    return host.actor_for(who)


def run_link(run: DurableRun) -> dict[str, Any]:
    """What a host needs to take the call the calling task is in inside *run*: the run's
    ids, the call's key and its records so far (JSON data). The host writes nothing itself:
    it relays its records to this process, which writes them (a store writes only to the
    runs it owns, and the host needs no access to it)."""
    key = current_step_key() or ""
    return {
        "run_id": run.run_id,
        "user_id": run.user_id,
        "key": key,
        "records": [as_data(record) for record in run.records_under(key)] if key else [],
    }


async def on_host(
    host: AgentHost,
    who: OnHost,
    run: DurableRun | None,
    reach: Callable[[], Awaitable[Any]],
    attempt: Callable[[Any], Awaitable[Any]],
) -> Any:
    """What ``attempt(actor)`` answers, *actor* being what ``reach()`` answers (the host's
    actor, the agent or group restored there); in a durable run, made again (reached again
    first) when the host dies under it, which replaces the host.

    :raises AgentHostDiedError: outside a durable run, or when the host died under the call
        :data:`DEATHS_PER_CALL` times.
    """
    deaths = 0
    while True:
        actor = await reach()
        generation = who.generation
        try:
            return await attempt(actor)
        except AgentHostDiedError as exc:
            if run is None:
                raise
            deaths += 1
            if deaths >= DEATHS_PER_CALL:
                raise AgentHostDiedError(
                    f"{exc}; it died under this call of durable run {run.run_id!r} "
                    f"{DEATHS_PER_CALL} times, so the call is not made again (the run can "
                    "be resumed once the cause is fixed)"
                ) from None
        await host.replace(generation)


@attrs.define(eq=False)
class Relayed:
    """The caller's side of one call on a host (:attr:`call_id`, on :attr:`actor`): in a
    durable run, the records the host relays are written with the run's store, each as it
    comes (its step waits on the host until it is), and the host's question for the records
    of its agents' calls is answered. Kept by the caller across waits, so a wait that is
    cancelled and taken up again (to let the call end) writes no record twice.

    :ivar handed: the keys of the records handed to the host.
    """

    host: AgentHost
    who: OnHost | None
    actor: Any
    call_id: str
    run: DurableRun | None
    handed: list[str] = attrs.Factory(list)
    _written: set[int] = attrs.Factory(set)
    # Written since the last fetch: said with the next one (not the whole set each time: a
    # group call relays hundreds of thousands of records).
    _fresh: list[int] = attrs.Factory(list)
    _answer: list[dict[str, Any]] | None = None

    async def result(self, ref: Any) -> Any:
        """The value of *ref* (the call), once the host relayed the call's last record.

        :raises AgentHostDiedError: when the host is gone.
        :raises Exception: what the call raised.
        """
        if self.run is not None:
            done = False
            while not done:
                fresh, answer = self._fresh, self._answer
                self._fresh, self._answer = [], None
                fetch = self.actor.relay.remote(self.call_id, fresh, answer)
                records, done, question = await self.host.wait(fetch, self.who)
                await self._write(self.run, records)
                if question is not None:
                    found = self.run.records_of(question)
                    self.handed = [record.key for record in found]
                    self._answer = [as_data(record) for record in found]
        return await self.host.wait(ref, self.who)

    async def _write(self, run: DurableRun, records: list[tuple[int, dict[str, Any]]]) -> None:
        # One write for the batch (one wait for the disk, with a store that can).
        new = [(number, record) for number, record in records if number not in self._written]
        await run.put_records([StepRecord(**record) for _, record in new])
        for number, _ in new:
            self._written.add(number)
            self._fresh.append(number)


class OneAtATime:
    """Runs a repair once while several tasks find it needed: the others wait for it, then
    see whether it is still needed."""

    def __init__(self) -> None:
        self._busy: anyio.Event | None = None

    async def run(self, needed: Callable[[], bool], repair: Callable[[], Awaitable[None]]) -> None:
        while self._busy is not None:
            await self._busy.wait()
        if not needed():
            return
        busy = self._busy = anyio.Event()
        try:
            await repair()
        finally:
            self._busy = None
            busy.set()
