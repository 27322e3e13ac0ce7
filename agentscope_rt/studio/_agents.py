"""The agents a studio knows, at any scale: one small weak reference each, counts by state.

A studio may watch a million agents, so it keeps per agent only a weak reference carrying the
agent's state (about a hundred bytes with its dict entry; measured in ``docs/studio.md``) and
updates the per-state counts as states move, in O(1). An agent that is garbage-collected leaves
the registry and its count by itself. Everything else the page shows of an agent (name, class,
reply id) is read from the agent when a page asks for it, a page of agents at a time.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

import anyio.lowlevel

if TYPE_CHECKING:
    from ..agent import AgentBase

__all__ = ["MAX_AGENTS_PAGE", "STATES", "AgentRegistry"]

STATES: Final = ("idle", "replying", "interrupted", "waiting")
"""An agent's states on the page; an agent's state is stored as its index here."""

IDLE, REPLYING, INTERRUPTED, WAITING = range(len(STATES))

MAX_AGENTS_PAGE: Final = 500
"""The most agents one ``GET /api/agents`` answer holds."""

_SCAN_CHUNK: Final = 4096
"""Agents looked at between two checkpoints while a filtered page is searched for (a million
agents are searched without holding the event loop for more than a few milliseconds)."""


def agent_name(agent: Any) -> str:
    """*agent*'s name (its class name when it has none)."""
    return str(getattr(agent, "name", type(agent).__name__))


class _Known(weakref.ref["AgentBase"]):
    """A weak reference to a known agent, with the agent's id and state (an index of
    :data:`STATES`): the whole of the studio's per-agent record."""

    __slots__ = ("key", "state")

    key: str
    state: int


class AgentRegistry:
    """The known agents in the order they were first seen, and how many are in each state."""

    def __init__(self) -> None:
        self._known: dict[str, _Known] = {}
        self.counts = [0] * len(STATES)
        """How many known agents are in each state (indexed as :data:`STATES`)."""
        self.version = 0
        """Incremented at every change of an agent's state or of the set of agents."""

        def gone(ref: _Known, registry: weakref.ref[AgentRegistry] = weakref.ref(self)) -> None:
            # Runs when a known agent is garbage-collected (any thread, any moment): O(1).
            this = registry()
            if this is not None and this._known.get(ref.key) is ref:
                del this._known[ref.key]
                this.counts[ref.state] -= 1
                this.version += 1

        self._gone = gone

    def __len__(self) -> int:
        return len(self._known)

    def get(self, agent_id: str) -> AgentBase | None:
        """The known agent *agent_id*, or ``None`` (never seen, or gone)."""
        ref = self._known.get(agent_id)
        return None if ref is None else ref()

    def state(self, agent_id: str) -> int | None:
        """The state (an index of :data:`STATES`) of the known agent *agent_id*, or ``None``."""
        ref = self._known.get(agent_id)
        return None if ref is None else ref.state

    def know(self, agent: AgentBase, state: int) -> _Known:
        """Know *agent* (first seen in *state*); an agent already known keeps its state."""
        ref = self._known.get(agent.id)
        if ref is None or ref() is not agent:
            if ref is not None:  # an id reused by a new agent: the old one is forgotten
                self.counts[ref.state] -= 1
            ref = _Known(agent, self._gone)
            ref.key = agent.id
            ref.state = state
            self._known[agent.id] = ref
            self.counts[state] += 1
            self.version += 1
        return ref

    def know_all(self, agents: Iterable[AgentBase]) -> None:
        """Know each of *agents* not known yet (in its current state: replying or idle); a
        known one costs a dict lookup."""
        known = self._known
        for agent in agents:
            # By id only: touching each agent's record as well costs a cache miss per agent
            # (a third of the time over a million); an id taken over by a new agent is caught
            # by the next move of that agent.
            if agent.id not in known:
                self.know(agent, REPLYING if agent.is_replying else IDLE)

    def move(self, agent: AgentBase, state: int) -> None:
        """Put *agent* (known from now on) in *state*."""
        ref = self._known.get(agent.id)
        if ref is None or ref() is not agent:
            self.know(agent, state)
            return
        if ref.state != state:
            self.counts[ref.state] -= 1
            self.counts[state] += 1
            ref.state = state
            self.version += 1

    async def page(
        self, offset: int, limit: int, query: str = "", state: int | None = None
    ) -> tuple[list[tuple[AgentBase, int]], int]:
        """Known agents from *offset* (at most *limit*) whose name contains *query* (ignoring
        case) and which are in *state* (any when ``None``), in the order first seen, with
        their states; and how many match in all. Filtering looks at every known agent, with
        a checkpoint every few thousand."""
        # A copy: agents may come and go (a garbage-collected one) while this waits.
        refs = list(self._known.values())
        if not query and state is None:
            window = itertools.islice(refs, offset, offset + limit)
            return _alive(window), len(refs)
        needle = query.casefold()
        found: list[_Known] = []
        total = 0
        for start in range(0, len(refs), _SCAN_CHUNK):
            for ref in refs[start : start + _SCAN_CHUNK]:
                if state is not None and ref.state != state:
                    continue
                agent = ref()
                if agent is None or needle not in agent_name(agent).casefold():
                    continue
                if offset <= total < offset + limit:
                    found.append(ref)
                total += 1
            await anyio.lowlevel.checkpoint()
        return _alive(found), total


def _alive(refs: Any) -> list[tuple[AgentBase, int]]:
    shown = []
    for ref in refs:
        agent = ref()
        if agent is not None:
            shown.append((agent, ref.state))
    return shown
