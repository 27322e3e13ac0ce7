"""RemoteGroup: many agents of one agent host addressed together, one Ray call reaching them
all; and the fanout and broadcast over groups on several hosts."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, overload

import anyio

from .._ids import new_id
from ..durable import current_run
from ..exception import DurableRunError
from ..message import Msg
from ._tasks import run_all
from ._wire import msg_to_wire

if TYPE_CHECKING:
    from ._host import AgentHost
    from ._proxy import RemoteAgent

__all__ = ["GROUP_CONCURRENCY", "RemoteGroup", "broadcast_groups", "fanout_groups"]

GROUP_CONCURRENCY: Final = 1_000
"""How many agents of a group reply (or observe) at once on their host by default: a host
holds hundreds of thousands, and runs a group call in this many tasks, not one per agent."""

# How long a cancelled group call waits (shielded) for its host to stop the agents.
_CANCEL_WAIT_S = 30.0


class RemoteGroup:
    """Agents built together on one :class:`~agentscope_rt.distributed.AgentHost` (by
    :meth:`AgentHost.create_group`), addressed as one: :meth:`fanout` and :meth:`broadcast`
    are one Ray call each, whatever the group's size, and run on the host with its agents
    side by side (at most *max_concurrency* at once). The driver holds this handle only (a
    few hundred bytes), not a proxy per agent (:class:`RemoteAgent` costs about 0.9 KB).

    Replies come back in the group's order; a group call cancelled on this side cancels its
    agents' work on the host before the cancellation propagates.

    Not inside a durable run yet: its calls raise :class:`DurableRunError` there (their
    agents' steps would not be recorded); use the agents' proxies (:meth:`agents`) in a run.

    :ivar host: the agent host.
    :ivar id: the group's id on the host.
    :ivar generation: which of the host's actors holds the group.
    """

    __slots__ = ("generation", "host", "id", "size")

    def __init__(self, host: AgentHost, group_id: str, size: int) -> None:
        self.host = host
        self.id = group_id
        self.size = size
        self.generation = host.generation

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
        :raises DurableRunError: inside a durable run.
        :raises AgentHostDiedError: when the host is gone.
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
        :raises DurableRunError: inside a durable run.
        :raises AgentHostDiedError: when the host is gone.
        :raises Exception: what an agent's ``observe`` raised, with a note naming it.
        """
        if msg is None:
            raise TypeError("RemoteGroup.broadcast: msg must be a Msg or a list of Msg")
        payload = msg_to_wire(msg, "RemoteGroup.broadcast")
        limit = _limit(max_concurrency)
        await self._call(
            "broadcast",
            lambda actor, call_id: actor.group_observe.remote(self.id, call_id, payload, limit),
        )

    async def agents(self, start: int = 0, stop: int | None = None) -> list[RemoteAgent]:
        """Proxies of the agents ``start:stop`` of the group (for calls to a few of them;
        a proxy costs about 0.9 KB on this side). They cannot be restored in a durable run
        after the host dies (they were not built by ``create_agents``).

        :raises AgentHostDiedError: when the host is gone.
        """
        from ._proxy import RemoteAgent

        actor = self.host.actor_for(self)
        stop = self.size if stop is None else stop
        members = await self.host.wait(actor.members.remote(self.id, start, stop), self)
        return [RemoteAgent(self.host, agent_id, name) for agent_id, name in members]

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
            lambda actor, call_id: actor.group_reply.remote(
                self.id, call_id, payload, kwargs, keep, limit
            ),
        )
        return out

    async def _call(self, what: str, send: Callable[[Any, str], Any]) -> Any:
        """What the group call ``send(actor, call_id)`` answers; cancelled on the host
        (shielded, bounded) when this side is cancelled."""
        if current_run() is not None:
            raise DurableRunError(
                f"a group's {what} inside a durable run is not supported yet (its agents' "
                "steps would not be recorded): call the agents through their proxies "
                "(await group.agents()) inside the run, or run the group outside it"
            )
        actor = self.host.actor_for(self)
        call_id = new_id()
        try:
            ref = send(actor, call_id)
        except Exception as exc:  # cloudpickle's own errors vary by what failed
            raise TypeError(
                f"{self._who} on agent host {self.host.name!r}: the {what}'s arguments cannot "
                f"be sent to the host: {type(exc).__name__}: {exc}"
            ) from None
        try:
            return await self.host.wait(ref, self)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_WAIT_S):
                actor.cancel.remote(call_id)
                # The host may be gone, or the call may fail as it stops: either way it ended.
                with contextlib.suppress(Exception):
                    await self.host.wait(ref, self)
            raise


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
