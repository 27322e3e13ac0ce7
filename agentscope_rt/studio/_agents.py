"""The agents a studio knows, at any scale: one small weak reference each, counts by state.

A studio may watch a million agents replying in turn, so what a reply pays must not read or
write anything of its agent's that the processor's caches no longer hold: with a hundred
thousand agents replying in turn, each such read is a cache miss, and the misses cost the
game more than the rest of the studio did (``docs/studio.md``, "Overhead"). So:

* the registry keeps per agent only a weak reference carrying the agent's id (about 125
  bytes with its dict entry), made when the agent is first seen and never written again;
* the replies in flight are counted by the agent's identity (``id(agent)``, which reads
  nothing), in a dict as small as the number of replies running at once;
* whether a replying agent is known yet is checked in batches, not during its reply: a reply
  starting puts its agent on a short list (a strong reference, for at most
  :data:`RECENT_MAX` replies or until the registry is next read: the studio reads it every
  tick), and every read of the registry first learns the agents of that list;
* the *marks* (interrupted, or waiting for an answer from the page) are kept by agent id,
  set and cleared by rare transitions (a page's interrupt, an interrupted reply, a question);
* how many agents are marked, and how many of those are replying, are kept as counts: the
  replying are the replies in flight less the marked ones, the idle the rest.

An agent's state is its mark if it has one, else *replying* while a reply of it is in flight,
else *idle*. An agent that is garbage-collected leaves the registry and its count by itself.
Everything else the page shows of an agent (name, class, reply id) is read from the agent
when a page asks for it, a page of agents at a time.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

import anyio.lowlevel

if TYPE_CHECKING:
    from ..agent import AgentBase

__all__ = ["MAX_AGENTS_PAGE", "RECENT_MAX", "STATES", "AgentRegistry"]

STATES: Final = ("idle", "replying", "interrupted", "waiting")
"""An agent's states on the page; an agent's state is given as its index here."""

IDLE, REPLYING, INTERRUPTED, WAITING = range(len(STATES))

MAX_AGENTS_PAGE: Final = 500
"""The most agents one ``GET /api/agents`` answer holds."""

RECENT_MAX: Final = 4096
"""Replies started since the registry was last read after which their agents are learned
at once: the list of agents to learn stays short even when nothing reads the registry."""

_SCAN_CHUNK: Final = 4096
"""Agents looked at between two checkpoints while a filtered page is searched for (a million
agents are searched without holding the event loop for more than a few milliseconds)."""


def agent_name(agent: Any) -> str:
    """*agent*'s name (its class name when it has none)."""
    return str(getattr(agent, "name", type(agent).__name__))


class _Known(weakref.ref["AgentBase"]):
    """A weak reference to a known agent, with the agent's id (its key in the registry): the
    whole of the studio's per-agent record."""

    __slots__ = ("key",)

    key: str


class AgentRegistry:
    """The known agents in the order they were first seen, their replies in flight and
    marks, and how many are in each state.

    Every method is O(1) (amortized, for :meth:`started`) but :meth:`know_all` (O(agents
    given)) and :meth:`page`.
    """

    def __init__(self) -> None:
        self._known: dict[str, _Known] = {}
        self._recent: list[AgentBase] = []  # agents whose reply started since the last read
        self._replying: dict[int, int] = {}  # id(agent): its replies in flight
        self._marks: dict[str, int] = {}  # agent id: INTERRUPTED or WAITING
        self._marked = [0] * len(STATES)  # agents per mark
        self._marked_replying = 0  # marked agents with a reply in flight (shown as marked)
        self._version = 0

        def gone(ref: _Known, registry: weakref.ref[AgentRegistry] = weakref.ref(self)) -> None:
            # Runs when a known agent is garbage-collected (any thread, any moment): O(1). An
            # agent with a reply in flight is alive, so only a mark can be left to drop.
            this = registry()
            if this is not None and this._known.get(ref.key) is ref:
                del this._known[ref.key]
                mark = this._marks.pop(ref.key, None)
                if mark is not None:
                    this._marked[mark] -= 1
                this._version += 1

        self._gone = gone

    @property
    def version(self) -> int:
        """Changes at every change of an agent's state or of the set of agents."""
        self._learn_recent()
        return self._version

    def __len__(self) -> int:
        self._learn_recent()
        return len(self._known)

    @property
    def counts(self) -> list[int]:
        """How many known agents are in each state (indexed as :data:`STATES`)."""
        self._learn_recent()
        counts = self._marked.copy()
        counts[REPLYING] = len(self._replying) - self._marked_replying
        counts[IDLE] = len(self._known) - sum(counts)
        return counts

    def get(self, agent_id: str) -> AgentBase | None:
        """The known agent *agent_id*, or ``None`` (never seen, or gone)."""
        self._learn_recent()
        ref = self._known.get(agent_id)
        return None if ref is None else ref()

    def state(self, agent_id: str) -> int | None:
        """The state (an index of :data:`STATES`) of the known agent *agent_id*, or ``None``."""
        self._learn_recent()
        ref = self._known.get(agent_id)
        agent = None if ref is None else ref()
        return None if agent is None else self._state(agent)

    def _state(self, agent: AgentBase) -> int:
        if self._marks:
            mark = self._marks.get(agent.id)
            if mark is not None:
                return mark
        return REPLYING if id(agent) in self._replying else IDLE

    def _replying_now(self, agent_id: str) -> bool:
        ref = self._known.get(agent_id)
        agent = None if ref is None else ref()
        return agent is not None and id(agent) in self._replying

    def know(self, agent: AgentBase) -> None:
        """Know *agent* from now on; an agent already known is left as it is. An agent
        holding the id of another known agent replaces it (the other is forgotten)."""
        key = agent.id
        ref = self._known.get(key)
        if ref is not None:
            other = ref()
            if other is agent:
                return
            self.unmark(key)  # the other agent's mark, and its reply in flight
            if other is not None:
                self._replying.pop(id(other), None)
            del self._known[key]
        ref = _Known(agent, self._gone)
        ref.key = key
        self._known[key] = ref
        self._version += 1

    def know_all(self, agents: Iterable[AgentBase]) -> None:
        """Know each of *agents* not known yet; a known one costs a dict lookup."""
        known = self._known
        for agent in agents:
            # By id only: touching each agent's record as well costs a cache miss per agent
            # (a third of the time over a million).
            if agent.id not in known:
                self.know(agent)

    def _learn_recent(self) -> None:
        if self._recent:
            recent, self._recent = self._recent, []
            self.know_all(recent)

    # -- what a reply changes: nothing of its agent's --------------------------------------

    def started(self, agent: AgentBase) -> None:
        """A reply of *agent* (known from now on) started: it is *replying* (its mark, if
        any, is cleared)."""
        recent = self._recent
        recent.append(agent)
        if len(recent) >= RECENT_MAX:
            self._learn_recent()
        if self._marks:
            self.unmark(agent.id)
        replying = self._replying
        key = id(agent)
        replying[key] = replying.get(key, 0) + 1
        self._version += 1

    def ended(self, agent: AgentBase, mark: int | None = None) -> None:
        """A reply of *agent* ended; *mark* (``INTERRUPTED`` or ``WAITING``) is how it is
        shown from now on, else it is *idle* once none of its replies is in flight (its
        mark, if any, is cleared)."""
        replying = self._replying
        key = id(agent)
        left = replying.pop(key, 0) - 1
        if left > 0:  # replies of one agent at once: only by calling reply() directly
            replying[key] = left
        if mark is not None or self._marks:
            if left == 0 and agent.id in self._marks:
                self._marked_replying -= 1
            if mark is None:
                self.unmark(agent.id)
            else:
                self.mark(agent.id, mark)
        self._version += 1

    # -- marks: rare transitions ----------------------------------------------------------

    def mark(self, agent_id: str, mark: int) -> None:
        """Show the known agent *agent_id* as *mark* (``INTERRUPTED`` or ``WAITING``) until
        the mark is cleared (:meth:`unmark`, or a reply starting)."""
        if mark not in (INTERRUPTED, WAITING):
            raise ValueError(f"an agent is marked interrupted or waiting, not {STATES[mark]}")
        self._learn_recent()
        if agent_id not in self._known:
            return
        before = self._marks.get(agent_id)
        if before == mark:
            return
        if before is not None:
            self._marked[before] -= 1
        elif self._replying_now(agent_id):
            self._marked_replying += 1
        self._marks[agent_id] = mark
        self._marked[mark] += 1
        self._version += 1

    def marked(self, agent_id: str) -> int | None:
        """The mark of *agent_id* (``INTERRUPTED`` or ``WAITING``), or ``None``."""
        return self._marks.get(agent_id)

    def unmark(self, agent_id: str) -> None:
        """Clear the mark of *agent_id*, if it has one: it is *replying* again when a reply
        of it is in flight, else *idle*."""
        before = self._marks.pop(agent_id, None)
        if before is None:
            return
        self._marked[before] -= 1
        if self._replying_now(agent_id):
            self._marked_replying -= 1
        self._version += 1

    # -- the page ---------------------------------------------------------------------

    async def page(
        self, offset: int, limit: int, query: str = "", state: int | None = None
    ) -> tuple[list[tuple[AgentBase, int]], int]:
        """Known agents from *offset* (at most *limit*) whose name contains *query* (ignoring
        case) and which are in *state* (any when ``None``), in the order first seen, with
        their states; and how many match in all. Filtering looks at every known agent, with
        a checkpoint every few thousand."""
        self._learn_recent()
        # A copy: agents may come and go (a garbage-collected one) while this waits.
        refs = list(self._known.values())
        if not query and state is None:
            window = itertools.islice(refs, offset, offset + limit)
            return self._alive(window), len(refs)
        needle = query.casefold()
        found: list[AgentBase] = []
        total = 0
        for start in range(0, len(refs), _SCAN_CHUNK):
            for ref in refs[start : start + _SCAN_CHUNK]:
                agent = ref()
                if agent is None or (state is not None and self._state(agent) != state):
                    continue
                if needle not in agent_name(agent).casefold():
                    continue
                if offset <= total < offset + limit:
                    found.append(agent)
                total += 1
            await anyio.lowlevel.checkpoint()
        return [(agent, self._state(agent)) for agent in found], total

    def _alive(self, refs: Iterable[_Known]) -> list[tuple[AgentBase, int]]:
        shown = []
        for ref in refs:
            agent = ref()
            if agent is not None:
                shown.append((agent, self._state(agent)))
        return shown
