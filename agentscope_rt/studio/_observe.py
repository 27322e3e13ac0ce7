"""How the studio learns what agents do: interceptors of the agent routes and the hub
observer, nothing else.

While at least one studio is open, an interceptor is registered with
:mod:`agentscope_rt._intercept` on the ``reply``, ``print``, ``reasoning`` and ``acting``
routes, and a membership observer on every :class:`MsgHub`. What an interceptor sees (a reply
starting and ending, a message printed, a model call done, a tool call starting and ending)
becomes a small dict published with ``send_nowait``: an agent never waits for the studio, and
the studio only reads the call's arguments. It is not an agent hook, so an application
clearing its class hooks does not blind the studio. When the last studio closes, the
interceptors and the observer are removed, so agents are back on their interceptor-free path.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import _intercept
from ..agent import AgentBase, UserAgent
from ..message import Msg
from ..pipeline import MsgHub, add_hub_observer, remove_hub_observer
from ._state import HISTORY_LIMITS

if TYPE_CHECKING:
    from ._state import EventBus

__all__ = ["AgentObserver"]

logger = logging.getLogger("agentscope_rt.studio")

_active: list[AgentObserver] = []


def _agent_name(agent: Any) -> str:
    return str(getattr(agent, "name", type(agent).__name__))


class AgentObserver:
    """Turns hook calls into studio entities for one studio (see the module docstring)."""

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus
        self.agents: weakref.WeakValueDictionary[str, AgentBase] = weakref.WeakValueDictionary()
        # What this observer published last, per entity: the bus applies upserts later, in
        # its fan-out task, so its state may lag behind the hooks.
        self._states: dict[str, str] = {}
        self._tools: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._tool_started: dict[str, float] = {}
        self._usage_totals: dict[str, dict[str, Any]] = {}
        self._usage_seen: dict[str, tuple[str | None, int, int]] = {}
        self._pending_input: dict[str, dict[str, Any]] = {}

    # -- lifetime ---------------------------------------------------------------------

    def start(self) -> None:
        """Start observing (the hooks are registered when the first studio starts)."""
        if not _active:
            _install()
        _active.append(self)

    def stop(self) -> None:
        """Stop observing (the hooks go when the last studio stops)."""
        if self not in _active:
            return
        _active.remove(self)
        if not _active:
            _uninstall()

    # -- entities ---------------------------------------------------------------------

    def agent_entity(self, agent: AgentBase, state: str | None = None) -> dict[str, Any]:
        """Publish *agent* (with *state*, or its last known state) and return its data."""
        if agent.id not in self.agents:
            self.agents[agent.id] = agent
            self._forget_gone_agents()
        if state is None:
            state = self._states.get(agent.id) or ("replying" if agent.is_replying else "idle")
        self._states[agent.id] = state
        data = {
            "key": agent.id,
            "id": agent.id,
            "name": _agent_name(agent),
            "cls": type(agent).__name__,
            "state": state,
            "is_user": isinstance(agent, UserAgent),
            "reply_id": agent.reply_id,
            "input": self._pending_input.get(agent.id),
        }
        self.bus.publish("agent", agent.id, data)
        return data

    def _forget_gone_agents(self) -> None:
        # Per-agent bookkeeping is keyed by id: drop what belongs to agents that no longer
        # exist, once it outgrows the page's own agent history (amortised over new agents).
        if len(self._states) <= 2 * HISTORY_LIMITS["agent"]:
            return
        alive = set(self.agents.keys())
        for table in (self._states, self._usage_seen, self._pending_input):
            for agent_id in [k for k in table if k not in alive]:
                del table[agent_id]
        for key in [k for k in self._usage_totals if k.partition(":")[0] not in alive]:
            del self._usage_totals[key]

    def set_input(self, agent: AgentBase, request: dict[str, Any] | None) -> None:
        """Show (or, with ``None``, clear) a pending request for *agent*'s user input."""
        if request is None:
            self._pending_input.pop(agent.id, None)
        else:
            self._pending_input[agent.id] = request
        self.agent_entity(agent)

    # -- hooks --------------------------------------------------------------------------

    def pre_reply(self, agent: AgentBase) -> None:
        self.agent_entity(agent, "replying")

    def post_reply(self, agent: AgentBase) -> None:
        self._usage(agent, model_call=False)
        self._end_tools(agent, "done")
        self.agent_entity(agent, "idle")

    def pre_print(self, agent: AgentBase, msg: Msg, last: bool) -> None:
        data = msg.to_dict()
        data["key"] = msg.id
        data["agent_id"] = agent.id
        data["agent_name"] = _agent_name(agent)
        data["reply_id"] = agent.reply_id
        data["last"] = bool(last)
        self.bus.publish("msg", msg.id, data)
        if isinstance(msg.content, list):
            for block in data["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    self._tool_result(agent, block, last)
        if msg.metadata and msg.metadata.get("_is_interrupted"):
            self._end_tools(agent, "interrupted")
            self.agent_entity(agent, "interrupted")

    def post_reasoning(self, agent: AgentBase) -> None:
        self._usage(agent, model_call=True)

    def pre_acting(self, agent: AgentBase, tool_call: Any) -> None:
        call_id = str(getattr(tool_call, "id", ""))
        key = _tool_key(agent, call_id)
        self._tool_started[key] = time.perf_counter()
        self._publish_tool(
            {
                "key": key,
                "id": call_id,
                "name": getattr(tool_call, "name", ""),
                "input": getattr(tool_call, "input", {}),
                "output": None,
                "agent_id": agent.id,
                "agent_name": _agent_name(agent),
                "reply_id": agent.reply_id,
                "status": "running",
                "started": time.time(),
                "duration_ms": None,
            }
        )

    def post_acting(self, agent: AgentBase, tool_call: Any) -> None:
        self._finish_tool(_tool_key(agent, str(getattr(tool_call, "id", ""))), "done")

    def reconcile(self) -> None:
        """Show as ended the replies that ended without a hook seeing it (``post_reply`` does
        not run when a reply raises or is interrupted)."""
        for agent_id, state in list(self._states.items()):
            if state != "replying":
                continue
            agent = self.agents.get(agent_id)
            if agent is None or agent.is_replying:
                continue
            self._end_tools(agent, "interrupted")
            ended = "interrupted" if agent.generate_reason == "interrupted" else "idle"
            self.agent_entity(agent, ended)

    def interrupted(self, agent: AgentBase) -> None:
        """The page interrupted *agent*: it is shown as interrupted at once."""
        self._end_tools(agent, "interrupted")
        self.agent_entity(agent, "interrupted")

    # -- helpers ------------------------------------------------------------------------

    def _tool_result(self, agent: AgentBase, block: dict[str, Any], last: bool) -> None:
        call_id = str(block.get("id", ""))
        key = _tool_key(agent, call_id)
        current = self._tools.get(key)
        data: dict[str, Any] = (
            dict(current) if current else {"key": key, "id": call_id, "input": {}}
        )
        data["name"] = block.get("name", data.get("name", ""))
        data["output"] = block.get("output")
        data["agent_id"] = agent.id
        data["agent_name"] = _agent_name(agent)
        # A result with no call seen before (printed outside an acting step) is complete.
        data.setdefault("status", "done")
        self._publish_tool(data)

    def _finish_tool(self, key: str, status: str) -> None:
        started = self._tool_started.pop(key, None)
        current = self._tools.get(key)
        if current is None or current["status"] != "running":
            return
        data = dict(current)
        data["status"] = status
        if started is not None:
            data["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        self._publish_tool(data)

    def _publish_tool(self, data: dict[str, Any]) -> None:
        self._tools[data["key"]] = data
        while len(self._tools) > HISTORY_LIMITS["tool"]:
            self._tools.popitem(last=False)
        self.bus.publish("tool", data["key"], data)

    def _end_tools(self, agent: AgentBase, status: str) -> None:
        # Tool calls of this agent still running when its reply ended never reached
        # post_acting (an interrupt cancelled them).
        prefix = agent.id + ":"
        for key in [key for key in self._tool_started if key.startswith(prefix)]:
            self._finish_tool(key, status)

    def _usage(self, agent: AgentBase, model_call: bool) -> None:
        # ReActAgent.usage sums the model calls of the current reply: publish what was
        # added since the last look.
        usage = getattr(agent, "usage", None)
        if usage is None and not model_call:
            return
        reply_id = agent.reply_id
        seen_reply, seen_in, seen_out = self._usage_seen.get(agent.id, (None, 0, 0))
        if seen_reply != reply_id:
            seen_in = seen_out = 0
        added_in = int(getattr(usage, "input_tokens", 0)) - seen_in
        added_out = int(getattr(usage, "output_tokens", 0)) - seen_out
        self._usage_seen[agent.id] = (reply_id, seen_in + added_in, seen_out + added_out)
        if added_in <= 0 and added_out <= 0 and not model_call:
            return
        model = str(getattr(getattr(agent, "model", None), "model_name", "unknown"))
        key = f"{agent.id}:{model}"
        current = self._usage_totals.get(key) or {
            "key": key,
            "agent_id": agent.id,
            "agent_name": _agent_name(agent),
            "model": model,
            "input_tokens": 0,
            "output_tokens": 0,
            "calls": 0,
        }
        data = dict(current)
        data["input_tokens"] += added_in
        data["output_tokens"] += added_out
        data["calls"] += int(model_call)
        self._usage_totals[key] = data
        self.bus.publish("usage", key, data)

    def hub_changed(self, hub: MsgHub, event: str) -> None:
        members = hub.participants
        for agent in members:
            if agent.id not in self.agents:
                self.agent_entity(agent)
        self.bus.publish(
            "hub",
            hub.name,
            {
                "key": hub.name,
                "name": hub.name,
                "members": [{"id": a.id, "name": _agent_name(a)} for a in members],
                "open": event != "exit",
                "event": event,
            },
        )


def _tool_key(agent: AgentBase, call_id: str) -> str:
    # Call ids are unique per model response, not across agents.
    return f"{agent.id}:{call_id}"


# -- the hooks, shared by every open studio ---------------------------------------------


def _dispatch(method: str, *args: Any) -> None:
    # Watching must never break what is watched: an observer's failure is logged, the agent
    # carries on.
    for observer in _active:
        try:
            getattr(observer, method)(*args)
        except Exception:
            logger.exception("the studio failed to show %s; the agent carries on", method)


class _Watch:
    """The studio's interceptor of one route kind: what it reports before and after a call
    (a call that raises reports nothing after it, as a post hook would not)."""

    __slots__ = ("after", "before", "kind")

    def __init__(
        self,
        kind: str,
        before: Callable[[AgentBase, _intercept.Call], None] | None = None,
        after: Callable[[AgentBase, _intercept.Call], None] | None = None,
    ) -> None:
        self.kind = kind
        self.before = before
        self.after = after

    def __repr__(self) -> str:
        return f"<studio watching {self.kind!r} routes>"

    async def intercept(
        self, call: _intercept.Call, proceed: Callable[[tuple[Any, ...], dict[str, Any]], Any]
    ) -> Any:
        if self.before is not None:
            self.before(call.obj, call)
        result = await proceed(call.args, call.kwargs)
        if self.after is not None:
            self.after(call.obj, call)
        return result


def _argument(call: _intercept.Call, name: str, position: int, default: Any = None) -> Any:
    if name in call.kwargs:
        return call.kwargs[name]
    if len(call.args) > position:
        return call.args[position]
    return call.arguments().get(name, default)


def _pre_print(agent: AgentBase, call: _intercept.Call) -> None:
    msg = _argument(call, "msg", 0)
    if isinstance(msg, Msg):
        _dispatch("pre_print", agent, msg, bool(_argument(call, "last", 1, True)))


def _tool_call(call: _intercept.Call) -> Any:
    return _argument(call, "tool_call", 0)


_WATCHES = (
    _Watch(
        "reply",
        before=lambda agent, call: _dispatch("pre_reply", agent),
        after=lambda agent, call: _dispatch("post_reply", agent),
    ),
    _Watch("print", before=_pre_print),
    _Watch("reasoning", after=lambda agent, call: _dispatch("post_reasoning", agent)),
    _Watch(
        "acting",
        before=lambda agent, call: _dispatch("pre_acting", agent, _tool_call(call)),
        after=lambda agent, call: _dispatch("post_acting", agent, _tool_call(call)),
    ),
)


def _hub_changed(hub: MsgHub, event: str) -> None:
    _dispatch("hub_changed", hub, event)


def _install() -> None:
    for watch in _WATCHES:
        _intercept.register(watch.kind, watch)
    add_hub_observer(_hub_changed)


def _uninstall() -> None:
    for watch in _WATCHES:
        _intercept.unregister(watch.kind, watch)
    remove_hub_observer(_hub_changed)
