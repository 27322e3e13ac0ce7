"""How the studio learns what agents do: observers of the agent routes and the hub
observer, nothing else.

Each open studio registers its own observer (:class:`agentscope_rt._intercept.Observer`:
told of each call before and after it, taking no part in it) on the ``reply`` route, and,
while at least one is open, a membership observer watches every :class:`MsgHub`. It is not
an agent hook, so an application clearing its class hooks does not blind the studio. What it
sees of a reply costs two calls, O(1) and a few integer updates: the replies in flight in
the :class:`~._agents.AgentRegistry` (which reads nothing of the agent's during its reply:
see there why), the replies, and at the reply's end its tokens per model
(``ReActAgent.usage``, read while the reply's own data is still in the caches). Those reach
the page as one aggregate event per tick (see ``_server``).

*Details* (a printed chunk, a model call, a tool call) are seen by observers on the
``print``, ``reasoning`` and ``acting`` routes, registered only while the tick's budget lasts
(:data:`DETAIL_PER_TICK`): once it is spent they are unregistered until the next tick, so a
million replies cost the agents one observed call each (two method calls of the route's
wrapper, no interception) and the page a hundred detail events a second. An agent never
waits for the studio. When the last studio closes, everything is unregistered, so agents are
back on their observer-free path.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final

from .. import _intercept
from ..agent import AgentBase, UserAgent
from ..message import Msg
from ..pipeline import MsgHub, add_hub_observer, remove_hub_observer
from ._agents import INTERRUPTED, STATES, WAITING, AgentRegistry, agent_name
from ._state import HISTORY_LIMITS

if TYPE_CHECKING:
    from ._state import EventBus

__all__ = ["DETAIL_PER_TICK", "HUB_NAMES_SHOWN", "AgentObserver"]

logger = logging.getLogger("agentscope_rt.studio")

DETAIL_PER_TICK: Final = 25
"""Detail events (a printed chunk, a tool call starting, a span starting) published per tick
of the studio's clock (every 0.25 s: 100 a second, more than a person reads); the rest are
counted, not built. The last chunk of a message whose earlier chunk was shown is always
shown (chunks are cumulative: it completes the message), as is the end of a shown tool call
or span. Measured: each detail a page receives costs the process tens of microseconds (the
HTTP stack's share is most of it), so 100 a second stay within a percent or two."""

SHOWN_STREAMS: Final = 1_000
"""Streamed messages remembered as shown (so that their last chunk is shown too)."""

MAX_RECHECKED: Final = 10_000
"""Cancelled replies looked at again per tick (a cancelled fan-out of a million agents
is shown as idle beyond this, not as interrupted)."""

HUB_NAMES_SHOWN: Final = 20
"""Members named in a hub's entity; the page pages through the rest on demand."""

_active: list[AgentObserver] = []


class AgentObserver:
    """Turns what the observers see into states, totals and detail entities for one
    studio (see the module docstring)."""

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus
        self.agents = AgentRegistry()
        self.replies = 0
        self.messages = 0
        self.tool_calls = 0
        self.model_calls = 0
        self.tokens: dict[str, list[int]] = {}
        """Per model name: input tokens, output tokens, replies (summed at each reply's end
        from ``ReActAgent.usage``)."""
        self.budget = DETAIL_PER_TICK
        """Detail events still allowed in this tick (the studio's clock refills it)."""
        self.sampled = 0
        """Detail events refused because the tick's budget was spent (the details that follow
        in that tick are not even watched: a lower bound of those left out)."""
        self.ticks = 0
        """Ticks of the studio's clock so far (each refilled the budget)."""
        self.hubs: OrderedDict[str, weakref.ref[MsgHub]] = OrderedDict()
        self._tools: OrderedDict[str, dict[str, Any]] = OrderedDict()
        # Tool calls shown as running, per agent: ended with the agent's reply at the latest.
        self._running_tools: dict[str, dict[str, float]] = {}
        self._pending_input: dict[str, dict[str, Any]] = {}
        self._hub_sizes: dict[str, int] = {}
        self._cancelled: set[str] = set()
        self._streams: OrderedDict[str, bool] = OrderedDict()

    # -- lifetime ---------------------------------------------------------------------

    def start(self) -> None:
        """Start observing (the shared observers are registered when the first studio
        starts)."""
        if not _active:
            _install()
        _active.append(self)
        _intercept.register_observer("reply", self)
        _watch_details()

    def stop(self) -> None:
        """Stop observing (the shared observers go when the last studio stops)."""
        if self not in _active:
            return
        _active.remove(self)
        _intercept.unregister_observer("reply", self)
        if not _active:
            _uninstall()
        else:
            _watch_details()

    def __repr__(self) -> str:
        return "<the studio's observer of replies>"

    # -- what the page reads ----------------------------------------------------------

    def agent_view(self, agent: AgentBase, state: int) -> dict[str, Any]:
        """What the page shows of *agent* in *state* (an index of :data:`STATES`)."""
        return {
            "key": agent.id,
            "id": agent.id,
            "name": agent_name(agent),
            "cls": type(agent).__name__,
            "state": STATES[state],
            "is_user": isinstance(agent, UserAgent),
            "reply_id": agent.reply_id,
            "input": self._pending_input.get(agent.id),
        }

    def totals(self) -> dict[str, Any]:
        """The aggregates the page shows at any scale: agents known and per state, replies
        ended and tokens per model (always exact); messages printed, model and tool calls (seen
        while details are watched: exact as long as ``exact``, no detail having been sampled
        out); details sampled out."""
        return {
            "key": "totals",
            "agents": len(self.agents),
            "states": dict(zip(STATES, self.agents.counts, strict=True)),
            "agents_version": self.agents.version,
            "replies": self.replies,
            "messages": self.messages,
            "tool_calls": self.tool_calls,
            "model_calls": self.model_calls,
            "tokens": {
                model: {"input_tokens": used[0], "output_tokens": used[1], "replies": used[2]}
                for model, used in self.tokens.items()
            },
            "sampled": self.sampled,
            "exact": self.sampled == 0,
        }

    @property
    def version(self) -> tuple[int, ...]:
        """Changes whenever :meth:`totals` would."""
        return (
            self.agents.version,
            self.replies,
            self.messages,
            self.tool_calls,
            self.model_calls,
            self.sampled,
        )

    # -- states -----------------------------------------------------------------------

    def watch(self, agent: AgentBase) -> None:
        """Know *agent* before it does anything."""
        self.agents.know(agent)

    def set_input(self, agent: AgentBase, request: dict[str, Any] | None) -> None:
        """Show (or, with ``None``, clear) a pending request for *agent*'s user input."""
        if request is None:
            self._pending_input.pop(agent.id, None)
            if self.agents.marked(agent.id) == WAITING:  # an interrupt shows as such
                self.agents.unmark(agent.id)
        else:
            self._pending_input[agent.id] = request
            self.agents.know(agent)
            self.agents.mark(agent.id, WAITING)

    def interrupted(self, agent: AgentBase) -> None:
        """*agent* was interrupted (from the page): it is shown as such at once."""
        self._end_tools(agent, "interrupted")
        self.agents.know(agent)
        self.agents.mark(agent.id, INTERRUPTED)

    # -- the reply route's observer: what every reply costs ------------------------------
    # Each open studio's observer is registered on the ``reply`` route itself, so that the
    # route's wrapper calls these two methods directly: a reply costs the studio two calls.
    # A failure here is logged by the wrapper; the reply carries on.

    def before(self, agent: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """A reply of *agent* starts."""
        self.agents.started(agent)

    def after(self, agent: Any, state: Any, result: Any, error: BaseException | None) -> None:
        """A reply of *agent* returned, or raised *error* (one that raised or was cancelled
        is never left showing as replying)."""
        self.replies += 1
        usage = getattr(agent, "usage", None)
        if usage is not None:
            # ReActAgent.usage sums the model calls of the reply: added once, at its end.
            model = str(getattr(getattr(agent, "model", None), "model_name", "unknown"))
            used = self.tokens.get(model)
            if used is None:
                used = self.tokens[model] = [0, 0, 0]
            used[0] += usage.input_tokens
            used[1] += usage.output_tokens
            used[2] += 1
        if self._running_tools:
            self._end_tools(agent, "interrupted")
        if self._pending_input and agent.id in self._pending_input:
            self.agents.ended(agent, WAITING)
        elif error is None or isinstance(error, Exception):
            interrupted = agent.generate_reason == "interrupted"
            self.agents.ended(agent, INTERRUPTED if interrupted else None)
        elif self.agents.marked(agent.id) == INTERRUPTED:
            self.agents.ended(agent, INTERRUPTED)
        else:
            # Cancelled: by an interrupt, the agent says so only once its call has handled
            # it, after this; the next tick looks again.
            self.agents.ended(agent)
            if len(self._cancelled) < MAX_RECHECKED:
                self._cancelled.add(agent.id)

    def tick(self) -> None:
        """A tick of the studio's clock: refill the budget of detail events (watching details
        again), and show as interrupted the agents whose cancelled reply turned out to be
        interrupted."""
        self.ticks += 1
        self.budget = DETAIL_PER_TICK
        _watch_details()
        self._recheck()

    def _recheck(self) -> None:
        cancelled, self._cancelled = self._cancelled, set()
        for agent_id in cancelled:
            agent = self.agents.get(agent_id)
            if agent is None or agent.is_replying:
                continue
            if agent.generate_reason == "interrupted":
                self.agents.mark(agent_id, INTERRUPTED)

    # -- what the route observers report ----------------------------------------------

    def printed(self, agent: AgentBase, msg: Msg, last: bool) -> None:
        self.messages += last
        if msg.metadata and msg.metadata.get("_is_interrupted"):
            self.interrupted(agent)
        if not self._admit_chunk(msg.id, last):
            return
        data = msg.to_dict()
        data["key"] = msg.id
        data["agent_id"] = agent.id
        data["agent_name"] = agent_name(agent)
        data["reply_id"] = agent.reply_id
        data["last"] = bool(last)
        self.bus.publish("msg", msg.id, data)
        if isinstance(msg.content, list):
            for block in data["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    self._tool_result(agent, block)

    def reasoned(self, agent: AgentBase) -> None:
        self.model_calls += 1

    def acting(self, agent: AgentBase, tool_call: Any) -> None:
        self.tool_calls += 1
        if not self.admit():
            return
        call_id = str(getattr(tool_call, "id", ""))
        key = _tool_key(agent, call_id)
        self._running_tools.setdefault(agent.id, {})[key] = time.perf_counter()
        self._publish_tool(
            {
                "key": key,
                "id": call_id,
                "name": getattr(tool_call, "name", ""),
                "input": getattr(tool_call, "input", {}),
                "output": None,
                "agent_id": agent.id,
                "agent_name": agent_name(agent),
                "reply_id": agent.reply_id,
                "status": "running",
                "started": time.time(),
                "duration_ms": None,
            }
        )

    def acted(self, agent: AgentBase, tool_call: Any) -> None:
        running = self._running_tools.get(agent.id)
        if running is None:  # not shown (sampled out), or ended already
            return
        key = _tool_key(agent, str(getattr(tool_call, "id", "")))
        started = running.pop(key, None)
        if not running:
            del self._running_tools[agent.id]
        if started is not None:
            self._finish_tool(key, "done", started)

    def hub_changed(self, hub: MsgHub, event: str) -> None:
        """*hub*'s membership changed: its members are known agents (those that entered
        with this change are looked at once each), and its entity shows how many there are
        and the first :data:`HUB_NAMES_SHOWN` of them."""
        members = hub.participants
        name = hub.name
        seen = self._hub_sizes.get(name, 0) if event == "add" else 0
        # Members added to a hub are appended to it: an "add" of one agent to a hub of a
        # million looks at that one agent.
        self.agents.know_all(members[seen:] if seen else members)
        self._hub_sizes[name] = len(members)
        self.hubs[name] = weakref.ref(hub)
        self.hubs.move_to_end(name)
        while len(self.hubs) > HISTORY_LIMITS["hub"]:
            gone, _ = self.hubs.popitem(last=False)
            self._hub_sizes.pop(gone, None)
        self.bus.publish(
            "hub",
            name,
            {
                "key": name,
                "name": name,
                "count": len(members),
                "members": [{"id": a.id, "name": agent_name(a)} for a in members[:HUB_NAMES_SHOWN]],
                "open": event != "exit",
                "event": event,
            },
        )

    # -- helpers ------------------------------------------------------------------------

    def _admit_chunk(self, msg_id: str, last: bool) -> bool:
        if last:
            # The last chunk of a message shown before completes it, whatever the budget.
            return self._streams.pop(msg_id, False) or self.admit()
        if msg_id in self._streams:
            return self.admit()
        if not self.admit():
            return False
        self._streams[msg_id] = True
        while len(self._streams) > SHOWN_STREAMS:
            self._streams.popitem(last=False)
        return True

    def admit(self) -> bool:
        """Whether one more detail event fits in this tick's budget (spending it); when not,
        it is counted as sampled out, and details are no longer watched until the next tick."""
        if self.budget > 0:
            self.budget -= 1
            return True
        self.sampled += 1
        if self.bus.on_loop_thread():  # a span ended in a worker thread leaves it to the loop
            _watch_details()
        return False

    def _tool_result(self, agent: AgentBase, block: dict[str, Any]) -> None:
        call_id = str(block.get("id", ""))
        key = _tool_key(agent, call_id)
        current = self._tools.get(key)
        data: dict[str, Any] = (
            dict(current) if current else {"key": key, "id": call_id, "input": {}}
        )
        data["name"] = block.get("name", data.get("name", ""))
        data["output"] = block.get("output")
        data["agent_id"] = agent.id
        data["agent_name"] = agent_name(agent)
        # A result with no call seen before (printed outside an acting step) is complete.
        data.setdefault("status", "done")
        self._publish_tool(data)

    def _finish_tool(self, key: str, status: str, started: float) -> None:
        current = self._tools.get(key)
        if current is None or current["status"] != "running":
            return
        data = dict(current)
        data["status"] = status
        data["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        self._publish_tool(data)

    def _publish_tool(self, data: dict[str, Any]) -> None:
        self._tools[data["key"]] = data
        while len(self._tools) > HISTORY_LIMITS["tool"]:
            self._tools.popitem(last=False)
        self.bus.publish("tool", data["key"], data)

    def _end_tools(self, agent: AgentBase, status: str) -> None:
        # Tool calls of this agent still running when its reply ended never reached the
        # end of their acting step (an interrupt cancelled them).
        running = self._running_tools.pop(agent.id, None)
        if running:
            for key, started in running.items():
                self._finish_tool(key, status, started)


def _tool_key(agent: AgentBase, call_id: str) -> str:
    # Call ids are unique per model response, not across agents.
    return f"{agent.id}:{call_id}"


# -- the route observers, shared by every open studio -------------------------------------


def _each(method: str, *args: Any) -> None:
    # Watching must never break what is watched: an observer's failure is logged, the agent
    # carries on.
    for observer in _active:
        try:
            getattr(observer, method)(*args)
        except Exception:
            _failed(method)


def _failed(what: str) -> None:
    logger.exception("the studio failed to show %s; the agent carries on", what)


class _Watch:
    """The studio's observer of one route kind (an :class:`agentscope_rt._intercept.Observer`:
    told of each call without taking part in it)."""

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"<studio watching {self.kind!r} routes>"

    def before(self, agent: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return None

    def after(self, agent: Any, state: Any, result: Any, error: BaseException | None) -> None:
        return None


class _PrintWatch(_Watch):
    def before(self, agent: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        msg = _argument(args, kwargs, "msg", 0)
        if isinstance(msg, Msg):
            _each("printed", agent, msg, bool(_argument(args, kwargs, "last", 1, True)))


class _ReasoningWatch(_Watch):
    def after(self, agent: Any, state: Any, result: Any, error: BaseException | None) -> None:
        if error is None:
            _each("reasoned", agent)


class _ActingWatch(_Watch):
    def before(self, agent: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        tool_call = _argument(args, kwargs, "tool_call", 0)
        _each("acting", agent, tool_call)
        return tool_call

    def after(self, agent: Any, state: Any, result: Any, error: BaseException | None) -> None:
        if error is None:
            _each("acted", agent, state)


def _argument(
    args: tuple[Any, ...], kwargs: dict[str, Any], name: str, position: int, default: Any = None
) -> Any:
    """The argument *name* (else the one at *position*) of a call as it was made; *default*
    when the caller left it out."""
    if name in kwargs:
        return kwargs[name]
    if len(args) > position:
        return args[position]
    return default


_DETAILS = (_PrintWatch("print"), _ReasoningWatch("reasoning"), _ActingWatch("acting"))
_watching_details = False


def _hub_changed(hub: MsgHub, event: str) -> None:
    _each("hub_changed", hub, event)


def _watch_details() -> None:
    """Register the detail observers while some open studio has budget left for details,
    unregister them otherwise."""
    global _watching_details
    wanted = any(observer.budget > 0 for observer in _active)
    if wanted == _watching_details:
        return
    _watching_details = wanted
    for watch in _DETAILS:
        if wanted:
            _intercept.register_observer(watch.kind, watch)
        else:
            _intercept.unregister_observer(watch.kind, watch)


def _install() -> None:
    add_hub_observer(_hub_changed)


def _uninstall() -> None:
    _watch_details()  # nobody is left: the detail observers go
    remove_hub_observer(_hub_changed)
