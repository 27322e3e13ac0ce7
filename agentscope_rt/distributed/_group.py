"""RemoteGroup: many agents of one agent host addressed together, one Ray call reaching them
all; and the fanout and broadcast over groups on several hosts.

Inside a durable run a group call is one call of the run for each of its agents: the host
joins the run for all of them at once (``join_calls``), under the keys one process gives
the same calls (``"p7#3"``, ``"observe:p7#2"``), asking the caller once for the records of
those calls and relaying the new ones back in batches. Nothing per agent is recorded beyond
what one process records: no snapshot. A group whose host died is built again on the new
host and the run's calls of the group so far are replayed there from their records (no
model call, no tool), as a resumed run rebuilds its agents; then the call in flight is made
again under the same keys. A snapshot of every agent after every group call would write the
group's whole memory each time (tens of MB a call for 10,000 players): replaying costs only
the host's time, and only when a host dies.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, overload

import anyio
import attrs

from .._ids import new_id
from ..durable import DurableRun, current_run
from ..message import Msg
from ._recovery import AgentHostDiedError, OneAtATime, Relayed, on_host, restored_on
from ._tasks import run_all
from ._wire import msg_to_wire

if TYPE_CHECKING:
    from ._host import AgentHost, GroupFactory
    from ._proxy import RemoteAgent

__all__ = ["GROUP_CONCURRENCY", "RemoteGroup", "broadcast_groups", "fanout_groups"]

GROUP_CONCURRENCY: Final = 1_000
"""How many agents of a group reply (or observe) at once on their host by default: a host
holds hundreds of thousands, and runs a group call in this many tasks, not one per agent."""

# How long a cancelled group call waits (shielded) for its host to stop the agents.
_CANCEL_WAIT_S = 30.0

logger = logging.getLogger("agentscope_rt.distributed")

# Starts a group call on a host: (actor, call id, link to a durable run or None) -> its ref.
_Send = Callable[[Any, str, dict[str, Any] | None], Any]


@attrs.frozen
class _GroupCall:
    """A group call made in a durable run: how to make it again, and its place in the run
    (``{"call": 3}`` or ``{"delivery": [where, 2]}``)."""

    what: str
    send: _Send
    place: dict[str, Any]


@attrs.define
class _InRun:
    """What a group keeps of one execution of a durable run: its calls counted per kind
    and place as they start (their numbers), and those that completed, in order (to
    rebuild the group on a new host)."""

    execution_id: str
    counts: dict[str, int] = attrs.Factory(dict)
    done: list[_GroupCall] = attrs.Factory(list)


class RemoteGroup:
    """Agents built together on one :class:`~agentscope_rt.distributed.AgentHost` (by
    :meth:`AgentHost.create_group`), addressed as one: :meth:`fanout` and :meth:`broadcast`
    are one Ray call each, whatever the group's size, and run on the host with its agents
    side by side (at most *max_concurrency* at once). The driver holds this handle only (a
    few hundred bytes), not a proxy per agent (:class:`RemoteAgent` costs about 0.9 KB).

    Replies come back in the group's order; a group call cancelled on this side cancels its
    agents' work on the host before the cancellation propagates.

    Inside a durable run (:func:`~agentscope_rt.durable.durable_run`) each agent's reply
    is recorded under the key one process gives it (``"p7#3"`` for the third call of
    ``p7``, its steps under it), and replayed on resume; what an agent does while it
    observes a broadcast is keyed under the delivery (``"observe:p7#2"``). A group's agents
    take part in a run only through their group (their proxies from :meth:`agents` refuse
    to); agent names must be distinct across the run. When the host dies under a group call
    of a run, a new host takes its place, the group is built there again and the run's
    calls of the group so far are replayed (not re-run), and the call is made again under
    the same keys; after three deaths under one call it raises
    :class:`AgentHostDiedError`.

    :ivar host: the agent host.
    :ivar id: the group's id on the host.
    :ivar generation: which of the host's actors holds the group.
    """

    __slots__ = ("_in_run", "_recipe", "_restoring", "generation", "host", "id", "size")

    def __init__(
        self,
        host: AgentHost,
        group_id: str,
        size: int,
        recipe: tuple[GroupFactory, dict[str, Any]] | None = None,
    ) -> None:
        self.host = host
        self.id = group_id
        self.size = size
        self.generation = host.generation
        # The build function and its arguments: how to build the group again on a new host.
        self._recipe = recipe
        self._restoring = OneAtATime()
        self._in_run: _InRun | None = None

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"RemoteGroup(id={self.id!r}, size={self.size}, host={self.host.name!r})"

    @property
    def _who(self) -> str:
        """The group in an error message."""
        return f"group {self.id} ({self.size:,} agents)"

    async def fanout(
        self,
        msg: Msg | list[Msg] | None = None,
        *,
        max_concurrency: int | None = None,
        **kwargs: Any,
    ) -> list[Msg]:
        """Every agent of the group replies to its own copy of *msg*, as
        ``fanout_pipeline(agents, msg, **kwargs)`` does on the host; the replies in the
        group's order.

        :param max_concurrency: how many agents reply at once on the host
            (:data:`GROUP_CONCURRENCY` by default).
        :param kwargs: passed to every agent's call; they cross with Ray's pickling, once
            per call (a ``structured_model`` class may be passed, as in one process).
        :raises TypeError: when *msg* is not messages or *kwargs* cannot be sent.
        :raises ValueError: when *max_concurrency* is not a positive int.
        :raises AgentHostDiedError: when the host is gone (in a durable run: when it died
            under this call three times, or the group cannot be built again).
        :raises RunDivergedError: in a durable run, when an agent's call differs from its
            record.
        :raises Exception: what an agent raised (its own type when Ray carries it, with a
            note naming the agent); the group's other agents are cancelled.
        """
        wires = await self._reply(msg, ("reply", None), max_concurrency, kwargs)
        return [Msg.from_dict(wire) for wire in wires]

    async def fanout_metadata(
        self,
        msg: Msg | list[Msg] | None = None,
        key: str | None = None,
        *,
        max_concurrency: int | None = None,
        **kwargs: Any,
    ) -> list[Any]:
        """:meth:`fanout`, bringing back only each reply's ``metadata`` (or, with *key*,
        ``metadata[key]``; ``None`` where missing): what a moderator tallying structured
        answers needs, at a fraction of the replies' bytes.

        :raises: as :meth:`fanout`.
        """
        return await self._reply(msg, ("metadata", key), max_concurrency, kwargs)

    async def broadcast(self, msg: Msg | list[Msg], *, max_concurrency: int | None = None) -> None:
        """Every agent of the group observes *msg* (delivered by the host, as a hub
        delivers it); returns once all have.

        :raises TypeError: when *msg* is not a Msg or a list of Msg.
        :raises ValueError: when *max_concurrency* is not a positive int.
        :raises AgentHostDiedError: when the host is gone (in a durable run, as
            :meth:`fanout`).
        :raises Exception: what an agent's ``observe`` raised, with a note naming it.
        """
        if msg is None:
            raise TypeError("RemoteGroup.broadcast: msg must be a Msg or a list of Msg")
        payload = msg_to_wire(msg, "RemoteGroup.broadcast")
        limit = _limit(max_concurrency)
        await self._call(
            "broadcast",
            lambda actor, call_id, link: actor.group_observe.remote(
                self.id, call_id, payload, limit, link
            ),
            msg,
        )

    async def agents(self, start: int = 0, stop: int | None = None) -> list[RemoteAgent]:
        """Proxies of the agents ``start:stop`` of the group (for calls to a few of them;
        a proxy costs about 0.9 KB on this side), outside durable runs: in a run the
        group's agents are called through the group (their calls are numbered there).

        :raises AgentHostDiedError: when the host is gone.
        """
        from ._proxy import RemoteAgent

        actor = self.host.actor_for(self)
        stop = self.size if stop is None else stop
        members = await self.host.wait(actor.members.remote(self.id, start, stop), self)
        return [RemoteAgent(self.host, agent_id, name, group=self) for agent_id, name in members]

    async def _reply(
        self,
        msg: Msg | list[Msg] | None,
        keep: tuple[str, str | None],
        max_concurrency: int | None,
        kwargs: dict[str, Any],
    ) -> list[Any]:
        payload = msg_to_wire(msg, "RemoteGroup.fanout")
        limit = _limit(max_concurrency)
        out: list[Any] = await self._call(
            "fanout",
            lambda actor, call_id, link: actor.group_reply.remote(
                self.id, call_id, payload, kwargs, keep, limit, link
            ),
        )
        return out

    async def _call(self, what: str, send: _Send, msg: Msg | list[Msg] | None = None) -> Any:
        """What the group call ``send(actor, call_id, link)`` answers; in a durable run, one
        call of the run for each agent (*msg*: what a broadcast delivers), made again on a
        new host when the host dies."""
        run = current_run()
        if run is None:
            data, _ = await self._attempt(self.host.actor_for(self), send, None, None, self)
            return data
        state = self._state(run)
        place = _place(state, what, run, msg)
        link = {"run_id": run.run_id, "user_id": run.user_id, **place}

        async def attempt(actor: Any) -> tuple[Any, Relayed]:
            return await self._attempt(actor, send, run, link, self)

        data, relayed = await on_host(self.host, self, run, lambda: self._reach(run), attempt)
        untaken = set(data["untaken"])
        run.add_taken((k for k in relayed.handed if k not in untaken), replayed=data["replayed"])
        state.done.append(_GroupCall(what, send, place))
        return data["out"]

    async def _attempt(
        self,
        actor: Any,
        send: _Send,
        run: DurableRun | None,
        link: dict[str, Any] | None,
        who: RemoteGroup | None,
    ) -> tuple[Any, Relayed]:
        """What one group call on *actor* answers (and how its records were relayed); the
        call cancelled on the host (shielded, bounded) when this side is cancelled. *who*:
        ``None`` while the group is rebuilt on a new host (it is not there yet)."""
        call_id = new_id()
        try:
            ref = send(actor, call_id, link)
        except Exception as exc:  # cloudpickle's own errors vary by what failed
            raise TypeError(
                f"{self._who} on agent host {self.host.name!r}: the group call's arguments "
                f"cannot be sent to the host: {type(exc).__name__}: {exc}"
            ) from None
        relayed = Relayed(self.host, who, actor, call_id, run)
        try:
            return await relayed.result(ref), relayed
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_WAIT_S):
                actor.cancel.remote(call_id)
                # The host may be gone, or the call may fail as it stops: either way it ended
                # (its records relayed meanwhile: its steps wait for them).
                with contextlib.suppress(Exception):
                    await relayed.result(ref)
            raise

    def _state(self, run: DurableRun) -> _InRun:
        """What the group keeps of the run's current execution (fresh for a new one)."""
        if self._in_run is None or self._in_run.execution_id != run.execution_id:
            self._in_run = _InRun(run.execution_id)
        return self._in_run

    async def _reach(self, run: DurableRun) -> Any:
        """The actor holding the group; a host that died is replaced and the group rebuilt
        there first."""
        return await restored_on(self, run)

    async def _restore(self, run: DurableRun) -> None:
        """Build the group again on the host's new actor and replay there the run's calls
        of the group so far (from their records: no model call, no tool)."""
        if self._recipe is None:
            raise AgentHostDiedError(
                f"{self._who} died with agent host {self.host.name!r} and cannot be built "
                "again: it was not built by the host's create_group"
            )
        began = time.monotonic()
        build, kwargs = self._recipe
        actor = self.host.actor
        await self.host.wait(actor.create_group.remote(build, kwargs, self.id), None)
        done = self._state(run).done
        for call in done:
            link = {"run_id": run.run_id, "user_id": run.user_id, **call.place}
            await self._attempt(actor, call.send, run, link, None)
        self.generation = self.host.generation
        logger.info(
            "%s built again on the new agent host %r and its %d call(s) of the run replayed "
            "in %.2f s",
            self._who,
            self.host.name,
            len(done),
            time.monotonic() - began,
        )


def _place(
    state: _InRun, what: str, run: DurableRun, msg: Msg | list[Msg] | None
) -> dict[str, Any]:
    """Where a group call starting now takes its agents' steps in *run*: a fanout is each
    agent's next call (``{"call": number}``), a broadcast its next delivery under the call
    whose reply *msg* is, if any (``{"delivery": [where, number]}``), as in one process."""
    if what == "fanout":
        number = state.counts["fanout"] = state.counts.get("fanout", 0) + 1
        return {"call": number}
    where = run.speaker_of(msg)
    label = f"broadcast:{where}"
    number = state.counts[label] = state.counts.get(label, 0) + 1
    return {"delivery": [where, number]}


def _limit(max_concurrency: int | None) -> int:
    if max_concurrency is None:
        return GROUP_CONCURRENCY
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int):
        raise ValueError(f"max_concurrency must be a positive int or None, not {max_concurrency!r}")
    if max_concurrency < 1:
        raise ValueError(f"max_concurrency must be a positive int or None, not {max_concurrency!r}")
    return max_concurrency


@overload
async def fanout_groups(
    groups: Sequence[RemoteGroup],
    msg: Msg | list[Msg] | None = None,
    *,
    metadata: Literal[False] = False,
    max_concurrency: int | None = None,
    **kwargs: Any,
) -> list[Msg]: ...


@overload
async def fanout_groups(
    groups: Sequence[RemoteGroup],
    msg: Msg | list[Msg] | None = None,
    *,
    metadata: Literal[True] | str,
    max_concurrency: int | None = None,
    **kwargs: Any,
) -> list[Any]: ...


async def fanout_groups(
    groups: Sequence[RemoteGroup],
    msg: Msg | list[Msg] | None = None,
    *,
    metadata: bool | str = False,
    max_concurrency: int | None = None,
    **kwargs: Any,
) -> list[Any]:
    """``fanout_pipeline`` over the agents of *groups* (on one host or several): one Ray call
    per group, all at once; the replies of every agent, group after group, each group in
    its order, so agents spread over hosts in order answer in the order one process would.

    :param metadata: ``False``: the replies; ``True``: each reply's metadata; a key: that
        key of each reply's metadata (see :meth:`RemoteGroup.fanout_metadata`).
    :param max_concurrency: how many agents of a group reply at once on its host.
    :param kwargs: passed to every agent's call.
    :raises: as :meth:`RemoteGroup.fanout`; one group failing cancels the others (on their
        hosts too).
    """
    results: list[list[Any]] = [[] for _ in groups]

    def job(index: int, group: RemoteGroup) -> Callable[[], Coroutine[Any, Any, None]]:
        async def run() -> None:
            if metadata is False:
                results[index] = await group.fanout(msg, max_concurrency=max_concurrency, **kwargs)
            else:
                key = None if metadata is True else metadata
                results[index] = await group.fanout_metadata(
                    msg, key, max_concurrency=max_concurrency, **kwargs
                )

        return run

    await run_all(job(index, group) for index, group in enumerate(groups))
    return [item for part in results for item in part]


async def broadcast_groups(
    groups: Sequence[RemoteGroup], msg: Msg | list[Msg], *, max_concurrency: int | None = None
) -> None:
    """Every agent of *groups* observes *msg*, each host delivering to its own agents (one
    Ray call per group, all at once); returns once all have.

    :raises: as :meth:`RemoteGroup.broadcast`; one group failing cancels the others.
    """

    def job(group: RemoteGroup) -> Callable[[], Coroutine[Any, Any, None]]:
        return lambda: group.broadcast(msg, max_concurrency=max_concurrency)

    await run_all(job(group) for group in groups)
