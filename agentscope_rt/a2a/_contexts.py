"""The agents an A2A server keeps per conversation (context id), and when it lets them go.

With an agent factory, each context a client names gets its own agent. A context nobody has
used for ``idle_s``, or the least recently used one beyond ``max_contexts``, is evicted: its
agent, lock and hook go. With a session, the evicted agent's state is saved under the context
id first and loaded again when the context returns, so the conversation carries on with its
memory. A context with a task running (or waiting for its agent) is never evicted.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from ..agent import AgentBase
from ._jsonrpc import shorten

if TYPE_CHECKING:
    from ..session import SessionBase

__all__ = ["Context", "ContextPool"]

logger = logging.getLogger("agentscope_rt.a2a")

# How long saving or loading one context's agent may take before it is given up.
_SESSION_TIMEOUT_S = 30.0


@dataclass(eq=False)
class Context:
    """One conversation's agent, the lock its replies take, and who is using it."""

    agent: AgentBase
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    last_used: float = 0.0
    users: int = 0


class ContextPool:
    """The contexts' agents, made by *factory* and evicted as the module says.

    :param on_made: called with every agent made (the server hooks it).
    :param on_evicted: called with every agent evicted.
    """

    def __init__(
        self,
        factory: Callable[[str], AgentBase],
        *,
        max_contexts: int,
        idle_s: float,
        session: SessionBase | None,
        on_made: Callable[[AgentBase], None],
        on_evicted: Callable[[AgentBase], None],
    ) -> None:
        self._factory = factory
        self._max = max_contexts
        self._idle_s = idle_s
        self._session = session
        self._on_made = on_made
        self._on_evicted = on_evicted
        self._contexts: OrderedDict[str, Context] = OrderedDict()
        # Contexts whose evicted agent is being saved: a return waits for the save.
        self._saving: dict[str, anyio.Event] = {}

    def __len__(self) -> int:
        return len(self._contexts)

    @property
    def sweep_interval(self) -> float:
        """How often :meth:`evict` should run for idle contexts to go on time."""
        return max(0.01, min(60.0, self._idle_s / 2))

    async def enter(self, context_id: str) -> Context:
        """The context's agent, made (and loaded from the session) on first use; the caller
        uses it until :meth:`leave`.

        :raises TypeError: when the factory returns something else than an agent.
        """
        found = self._contexts.get(context_id)
        if found is None:
            saving = self._saving.get(context_id)
            if saving is not None:
                await saving.wait()
            found = self._contexts.get(context_id) or await self._make(context_id)
        found.users += 1
        found.last_used = anyio.current_time()
        self._contexts.move_to_end(context_id)
        return found

    def leave(self, context_id: str, context: Context) -> None:
        context.users -= 1
        context.last_used = anyio.current_time()
        if self._contexts.get(context_id) is context:
            self._contexts.move_to_end(context_id)

    async def _make(self, context_id: str) -> Context:
        agent = self._factory(context_id)
        if not isinstance(agent, AgentBase):
            raise TypeError(f"the agent factory returned {type(agent).__name__}, not an AgentBase")
        if self._session is not None:
            await self._load(context_id, agent)
        # Another task may have made it while this one loaded.
        existing = self._contexts.get(context_id)
        if existing is not None:
            return existing
        context = self._contexts[context_id] = Context(agent)
        self._on_made(agent)
        return context

    def evict(self, task_group: anyio.abc.TaskGroup | None) -> int:
        """Evict the idle contexts and those beyond the count limit (least recently used
        first); their states are saved in *task_group*. The number evicted."""
        now = anyio.current_time()
        evicted = 0
        for context_id, context in list(self._contexts.items()):
            if context.users:
                continue
            over = len(self._contexts) > self._max
            if not over and now - context.last_used < self._idle_s:
                break  # the rest were used more recently
            del self._contexts[context_id]
            self._on_evicted(context.agent)
            evicted += 1
            if self._session is not None and task_group is not None:
                self._saving[context_id] = anyio.Event()
                task_group.start_soon(self._save, context_id, context.agent)
        return evicted

    async def save_all(self) -> None:
        """Save every context's agent (the server stops), shielded, each bounded in time."""
        if self._session is None:
            return
        with anyio.CancelScope(shield=True):
            for context_id, context in list(self._contexts.items()):
                await self._save(context_id, context.agent)

    async def _save(self, context_id: str, agent: AgentBase) -> None:
        assert self._session is not None
        try:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_SESSION_TIMEOUT_S) as scope:
                await self._session.save_session_state(context_id, agent=agent)
            if scope.cancelled_caught:
                logger.warning(
                    "A2A context %s: saving its agent took too long", shorten(context_id)
                )
        except Exception as exc:
            _warn_failed(context_id, "its agent could not be saved", exc)
        finally:
            done = self._saving.pop(context_id, None)
            if done is not None:
                done.set()

    async def _load(self, context_id: str, agent: AgentBase) -> None:
        assert self._session is not None
        try:
            with anyio.fail_after(_SESSION_TIMEOUT_S):
                await self._session.load_session_state(context_id, agent=agent)
        except Exception as exc:
            # The conversation starts afresh rather than failing the client's request.
            _warn_failed(context_id, "its saved agent could not be loaded", exc)


def _warn_failed(context_id: str, what: str, exc: Exception) -> None:
    """Log that saving or loading a context's agent failed (ids and texts cut short)."""
    logger.warning(
        "A2A context %s: %s (%s: %s)",
        shorten(context_id),
        what,
        type(exc).__name__,
        shorten(str(exc), 300),
    )
