"""MsgHub: a group of agents that hear each other's replies.

Guarantees (each pinned by a property test on asyncio and trio):

1. every participant except the sender observes every reply published while it is a member,
   exactly once;
2. the replies of one publisher reach every subscriber in the order they were published;
3. when ``await agent(...)`` (or :meth:`MsgHub.broadcast`) returns, every recipient has
   finished observing the message;
4. nothing queued is lost when the hub exits and nothing is delivered after it; an observer
   that raises makes the hub exit with that error, inside an :class:`ExceptionGroup`, after
   the other participants have finished observing what was already published;
5. an agent in several hubs (nested or overlapping) reaches every member of each once — an
   agent that is in two of them hears it once.

How it is built, and why. Each participant has an *inbox* (a bounded anyio memory object
stream) and a *delivery task* in the hub's task group that calls its ``observe`` for one
message at a time, in inbox order. Publishing puts the message in every recipient's inbox
with ``send_nowait`` — waiting for room only when an inbox is full, which is the
backpressure a slow observer applies to publishers — and then waits once for a per-message
*ticket* that counts the recipients still to observe it. A message put in an *empty* inbox
goes to the inbox's one-message slot instead of its stream (it is older than anything queued
after it, so order is kept): with fast observers an inbox rarely holds more than one
message, and the slot saves a stream send and receive per delivery.

Waking one delivery task per recipient per message costs a task switch per delivery, which
caps a hub at roughly 100k-150k deliveries per second whatever the observers do. So the
publisher, instead of going to sleep right after enqueuing, *helps*: for every recipient
whose inbox nobody is draining, it drains that inbox itself (in inbox order, marking the
inbox busy so that ``observe`` never runs twice at once for one agent). Fast observers —
the usual case, appending to memory — are thus served with no task switch at all. An
observer that takes longer than :data:`SLOW_OBSERVE_SECONDS` twice in a row is marked
slow: its messages are then left to its delivery task, woken as soon as they are enqueued,
so it observes concurrently with the others instead of holding up the publisher. The
delivery task clears the mark as soon as the observer is quick again. Before each inline
delivery the helper also wakes one delivery task as a *relay* (see ``MsgHub._help``): an
observer that blocks the first time it is met then delays the others by no more than a task
switch.

Exit closes every inbox once the publishers that had started are done enqueuing, lets the
delivery tasks drain them, and only then leaves the task group; a cancellation from outside
skips the draining and stops every task at once.

Re-entrancy. An observer may call another member (bob's ``observe`` awaits ``carol()`` while
alice speaks). Bob's inbox is then drained by a *frame* — alice's publisher, a relay or bob's
delivery task — that is suspended in bob's ``observe`` until carol's call returns, so carol's
reply could never reach bob through the inbox. The rule: a message published while frames run
observers further up the publishing task (``_CHAIN``, a context variable set once per publish,
which tasks started inside an observer inherit) is delivered to the recipients those frames
drain re-entrantly, in the publishing task — everything queued for them, oldest first, then
the message (``_reenter``); into a full inbox of such a recipient likewise, instead of waiting
for room. Every guarantee above still holds (inbox order of observe starts, exactly once, never
to the sender, bounded inboxes, a call returns once its reply is observed); one agent's
``observe`` may just run inside itself.

Waits that can never end. Calls on one agent run one at a time and hold the agent until their
reply is observed, so an observer that calls the agent whose reply it observes, or observers
in two tasks each calling an agent whose reply waits for the other, form a cycle of waits. The
slow paths register their waits (a call waiting for a busy agent, through
``agentscope_rt.agent._subscription.wait_for_lock``; a publisher waiting for its recipients;
a publisher waiting for room) and, before one begins, follow the waits it depends on: if they
lead back to the waiting task's own frames, the wait raises :class:`MsgHubError` naming the
agents on the cycle instead of hanging.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Coroutine, Iterator, Sequence
from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..agent._hooks import HOOK_COUNTS, direct_method, instance_hooks
from ..agent._subscription import set_lock_wait_watcher
from ..exception import MsgHubError
from ..message import Msg

if TYPE_CHECKING:
    from ..agent import AgentBase

__all__ = ["DEFAULT_INBOX_SIZE", "SLOW_OBSERVE_SECONDS", "MsgHub"]

logger = logging.getLogger("agentscope_rt.pipeline")

DEFAULT_INBOX_SIZE: Final = 64
"""Messages an inbox's stream holds before publishers to it wait (backpressure); the inbox
also has a one-message slot, filled only when it is empty."""

SLOW_OBSERVE_SECONDS: Final = 0.002
"""An inline delivery taking longer than this marks the observer slow. Appending to memory
takes microseconds; anything that waits on I/O takes milliseconds, and such observers are
better served concurrently by their own delivery tasks."""

SLOW_STRIKES: Final = 2
"""Consecutive slow inline deliveries after which an observer is marked slow."""

_NEW, _OPEN, _CLOSED = 0, 1, 2

# Recipient lists are cached per speaker up to this many members (N lists of N: small here,
# and in larger hubs building the list is a small part of delivering to everyone on it).
_CACHED_TARGETS_MAX: Final = 64

_Item = tuple["Msg | list[Msg]", "_Ticket"]


class _Frame:
    """A place where observers run: a publisher helping its message along (its ticket) or a
    delivery task. The frames of the current task, innermost first, are :data:`_CHAIN`."""

    __slots__ = ("done", "parent", "sender")

    def __init__(self, parent: _Frame | None, sender: AgentBase | None) -> None:
        self.parent = parent
        # The agent whose call runs this frame (a publisher's frame); its lock is held until
        # the frame is done.
        self.sender = sender
        self.done = False


_CHAIN: ContextVar[_Frame | None] = ContextVar("agentscope_rt_msghub_chain", default=None)
"""The innermost frame of the current task (its ``parent`` the next one out), or None. Set
once per publish, not per delivery, and not reset after it: a publish marks its frame done
instead (resetting would cost a second context change per message), and frames that are done
are skipped. Tasks started by an observer inherit it, so what they publish reaches that
observer re-entrantly too."""


def _active(chain: _Frame | None) -> _Frame | None:
    """*chain* without its innermost frames that are done."""
    while chain is not None and chain.done:
        chain = chain.parent
    return chain


def _in_chain(frame: object, chain: _Frame | None) -> bool:
    while chain is not None:
        if chain is frame:
            return True
        chain = chain.parent
    return False


class _DeliveryFrame(_Frame):
    """A delivery task's frame (the root of its task's chain)."""

    __slots__ = ("helping", "hub", "sub")

    def __init__(self, sub: _Subscriber, hub: MsgHub) -> None:
        super().__init__(None, None)
        self.sub = sub
        self.hub = hub
        self.helping: _Ticket | None = None  # the message it relays, while it does


class _Ticket(_Frame):
    """One published message: how many recipients have not finished observing it. Also the
    publisher's frame while it helps deliver the message."""

    __slots__ = ("cursor", "event", "failed", "plain", "relay", "remaining", "targets")

    def __init__(
        self,
        targets: list[_Subscriber],
        plain: bool,
        sender: AgentBase | None,
        parent: _Frame | None,
    ) -> None:
        self.parent = parent
        self.sender = sender
        self.done = False
        self.targets = targets
        # A Msg or a list of Msg: what observe's input check accepts, so a recipient without
        # hooks can be called without the hook wrapper (and its check).
        self.plain = plain
        self.remaining = len(targets)
        self.cursor = 0  # the next target a helper looks at
        self.relay = False  # a delivery task has been woken to help if a helper blocks
        self.failed = False
        self.event: anyio.Event | None = None

    def settle(self, delivered: bool) -> None:
        if not delivered:
            self.failed = True
        self.remaining -= 1
        if self.remaining == 0 and self.event is not None:
            self.event.set()

    async def wait(self) -> None:
        # The event is created only when the publisher actually has to wait: most messages
        # are fully delivered by the publisher's own help before it gets here.
        if self.remaining:
            self.event = anyio.Event()
            await self.event.wait()


class _Subscriber:
    """A participant's inbox and the state of its delivery."""

    __slots__ = (
        "agent",
        "busy",
        "closed",
        "current",
        "failed",
        "frame",
        "help",
        "instance_hooks",
        "member",
        "nested",
        "observe",
        "queued",
        "receive",
        "room",
        "send",
        "slot",
        "slow",
        "strikes",
        "wake",
    )

    def __init__(self, agent: AgentBase, inbox_size: int, hub: MsgHub) -> None:
        self.agent = agent
        # For the inline delivery (see direct_method): the undecorated observe, used while the
        # agent's live hook registry is empty (else the wrapper decides which hooks apply).
        self.instance_hooks = instance_hooks(agent)
        self.observe = direct_method(agent, "observe")
        send, receive = anyio.create_memory_object_stream[_Item](inbox_size)
        self.send: MemoryObjectSendStream[_Item] = send
        self.receive: MemoryObjectReceiveStream[_Item] = receive
        self.member = True  # False after delete(): its inbox is drained, nothing new is added
        # The frame draining the inbox (observe runs one message at a time), or False (not
        # None: False is the interpreter's fastest truth test, on the hot path); a frame in
        # the chain of a publisher means that this observer is up the publisher's stack.
        self.busy: _Frame | Literal[False] = False
        self.current: _Ticket | None = None  # the message being observed, while busy
        # While drained re-entrantly: the (frame, message) of each observe it is nested in.
        self.nested: list[tuple[_Frame, _Ticket | None]] = []
        self.frame = _DeliveryFrame(self, hub)
        self.slow = False  # left to the delivery task; publishers do not help
        self.strikes = 0  # consecutive slow inline deliveries
        self.failed = False  # its observe raised; later messages are settled undelivered
        self.closed = False  # the hub closed the inbox: no new messages
        self.queued = 0  # messages in the inbox (slot and stream) not yet taken
        # The first message put in an empty inbox: the common case (one message in flight)
        # skips the stream's send and receive. Always older than what the stream holds.
        self.slot: _Item | None = None
        self.wake: anyio.Event | None = None  # set while the delivery task sleeps
        self.room: anyio.Event | None = None  # set while publishers wait for a full inbox
        self.help: _Ticket | None = None  # a message whose delivery its task should help with


# -- waits and their cycles ------------------------------------------------------------
#
# A wait that can never end is a cycle of waits: an observer waits for an agent's call lock,
# the call holding it waits for its reply to be observed, and that needs the very observer.
# Every wait the hub knows of is registered while it lasts (these are all slow paths: a
# publisher whose recipients are not done, a publisher facing a full inbox, a call waiting
# for a busy agent); when one would begin, the waits it depends on are followed and, if they
# lead back to a frame of the waiting task, the wait is refused with MsgHubError instead.

_LOCK, _TICKET, _ROOM = 0, 1, 2


class _Wait:
    """A wait in progress: of the task whose innermost frame is *chain*, for an agent's call
    lock (``_LOCK``, target an agent), for a message's recipients (``_TICKET``, target the
    ticket) or for room in a full inbox (``_ROOM``, target the subscriber)."""

    __slots__ = ("chain", "kind", "target")

    def __init__(self, chain: _Frame, kind: int, target: Any) -> None:
        self.chain = chain
        self.kind = kind
        self.target = target

    def begin(self) -> None:
        """Register the wait.

        :raises MsgHubError: when the wait closes a cycle (it is then not registered).
        """
        cycle = _find_cycle(self)
        if cycle is not None:
            hub_name, names = cycle
            path = " -> ".join(names)
            raise MsgHubError(
                f"MsgHub {hub_name!r}: wait cycle {path}: each waits for the next (an "
                "observer for the agent it calls, a call for the observers of its reply), so "
                "none could finish. An observer may call other members, but not an agent "
                "whose reply is waiting for that observer (such as the speaker it observes): "
                "call that agent once the hub has delivered the reply"
            )
        _WAITS[self] = None

    def end(self) -> None:
        """Unregister the wait (it ended, or was cancelled)."""
        _WAITS.pop(self, None)


# Waits in progress, in every hub and every thread (frames of different event loops never
# meet, so their waits never form a cycle); a dict for its ordered, atomic snapshot.
_WAITS: dict[_Wait, None] = {}


def _queued_in(sub: _Subscriber, ticket: _Ticket) -> bool:
    slot = sub.slot
    if slot is not None and slot[1] is ticket:
        return True
    # The stream's buffer, read only here (slow path); if anyio hides it one day, a recipient
    # with anything queued counts as one the message still waits for.
    buffer = getattr(getattr(sub.receive, "_state", None), "buffer", None)
    if buffer is None:
        return sub.queued > 0
    return any(item[1] is ticket for item in buffer)


def _observer_of(frame: _Frame) -> _Subscriber | None:
    """The subscriber whose observe *frame* is running, if any."""
    if isinstance(frame, _Ticket):
        candidates: Sequence[_Subscriber] = frame.targets
    elif isinstance(frame, _DeliveryFrame):
        helping = frame.helping
        candidates = [frame.sub, *(helping.targets if helping is not None else ())]
    else:
        return None
    for sub in candidates:
        if sub.busy is frame:
            return sub
    return None


def _frames(chain: _Frame | None) -> Iterator[_Frame]:
    """The frames of *chain* that are not done, innermost first."""
    while chain is not None:
        if not chain.done:
            yield chain
        chain = chain.parent


def _needs(wait: _Wait) -> Iterator[tuple[Any, bool, str]]:
    """What *wait* waits for, as ``(x, by_sender, name)``: a frame that must finish (or, when
    *by_sender*, an agent whose call must finish) and the agent that stands for it."""
    target = wait.target
    if wait.kind == _LOCK:
        yield target, True, _agent_name(target)
        return
    if wait.kind == _ROOM:
        yield target.busy or target.frame, False, _agent_name(target.agent)
        return
    for sub in target.targets:
        name = _agent_name(sub.agent)
        if sub.busy and sub.current is target:
            yield sub.busy, False, name
        for frame, observed in sub.nested:
            if observed is target:
                # An observe of it that has been re-entered: it ends after the inner one.
                yield frame, False, name
        if _queued_in(sub, target):
            yield sub.busy or sub.frame, False, name


def _blocks(chain: _Frame, x: Any, by_sender: bool) -> _Frame | None:
    """The frame of *chain* that is (or runs the call of) *x*, if any."""
    for frame in _frames(chain):
        if (frame.sender is x) if by_sender else (frame is x):
            return frame
    return None


def _find_cycle(start: _Wait) -> tuple[str, list[str]] | None:
    """If *start* would close a cycle of waits: the hub to name and the agents on it."""
    waits = list(_WAITS)
    visited: set[int] = set()
    pending: list[tuple[_Wait, list[str]]] = [(start, [])]
    while pending:
        wait, path = pending.pop()
        for x, by_sender, name in _needs(wait):
            step = [*path, name]
            closing = _blocks(start.chain, x, by_sender)
            if closing is not None:
                return _describe(start, closing, step)
            for other in waits:
                if id(other) not in visited and _blocks(other.chain, x, by_sender) is not None:
                    visited.add(id(other))
                    pending.append((other, step))
    return None


def _describe(start: _Wait, closing: _Frame, step: list[str]) -> tuple[str, list[str]]:
    # The cycle starts (and ends) with the waiting task's innermost observer, or with the
    # agent whose message it publishes.
    first: str | None = None
    for frame in _frames(start.chain):
        sub = _observer_of(frame)
        if sub is not None:
            first = _agent_name(sub.agent)
            break
        if frame.sender is not None:
            first = _agent_name(frame.sender)
            break
    names = step if first is None else [first, *step]
    if names[-1] != names[0]:
        names.append(names[0])
    return _hub_of(closing).name, names


def _hub_of(frame: _Frame) -> MsgHub:
    if isinstance(frame, _DeliveryFrame):
        return frame.hub
    assert isinstance(frame, _Ticket) and frame.targets  # a frame drains its targets' inboxes
    return frame.targets[0].frame.hub


async def _wait_for_ticket(ticket: _Ticket) -> None:
    """Wait until every recipient has finished observing *ticket*'s message.

    :raises MsgHubError: when a recipient waits for this publisher (a wait cycle).
    """
    wait = _Wait(ticket, _TICKET, ticket)
    wait.begin()
    try:
        await ticket.wait()
    finally:
        wait.end()


class _LockWatcher:
    """Refuses a call's wait for a busy agent when it closes a cycle of waits."""

    def begin(self, agent: AgentBase) -> _Wait | None:
        chain = _active(_CHAIN.get())
        if chain is None:
            return None  # not under any observer: nothing of the hub waits for this task
        wait = _Wait(chain, _LOCK, agent)
        wait.begin()
        return wait

    def end(self, token: _Wait | None) -> None:
        if token is not None:
            token.end()


set_lock_wait_watcher(_LockWatcher())


class _HubLink:
    """What the hub attaches to each participant (see ``agentscope_rt.agent.HubLink``)."""

    __slots__ = ("_hub",)

    def __init__(self, hub: MsgHub) -> None:
        self._hub = hub

    def recipients(self, sender: AgentBase) -> Sequence[AgentBase]:
        return [agent for agent in self._hub._members if agent is not sender]

    async def deliver(self, sender: AgentBase, msg: Msg, recipients: Sequence[AgentBase]) -> None:
        await self._hub._deliver(sender, msg, recipients)

    def publish(self, sender: AgentBase, msg: Msg) -> Coroutine[Any, Any, None]:
        # The hub's coroutine itself, not one wrapping it: one frame less per reply.
        return self._hub._deliver_to_members(sender, msg)


def _as_agent_list(agents: Any, what: str) -> list[AgentBase]:
    from ..agent import AgentBase

    if isinstance(agents, AgentBase):
        return [agents]
    if isinstance(agents, str | bytes) or not isinstance(agents, Sequence):
        raise TypeError(
            f"{what} must be an agent or a sequence of agents, not {type(agents).__name__}"
        )
    result = list(agents)
    for index, agent in enumerate(result):
        if not isinstance(agent, AgentBase):
            raise TypeError(f"{what}[{index}] must be an AgentBase, not {type(agent).__name__}")
    return result


def _check_message(msg: Any, what: str) -> None:
    if isinstance(msg, Msg):
        return
    if isinstance(msg, list) and all(isinstance(m, Msg) for m in msg):
        return
    raise TypeError(f"{what} must be a Msg or a list of Msg, not {type(msg).__name__}")


def _agent_name(agent: AgentBase | None) -> str:
    if agent is None:
        return "the hub"
    return repr(getattr(agent, "name", type(agent).__name__))


class MsgHub:
    """A group of agents that hear each other's replies.

    Inside ``async with MsgHub(participants) as hub:``, every reply of a participant
    (``await agent(...)``) is observed by every other participant before the call returns.
    The hub owns a task group: one delivery task per participant, fed by a bounded inbox.

    :param participants: the agents of the hub (each at most once; order is kept).
    :param announcement: message(s) every participant observes on entering, before the body.
    :param enable_auto_broadcast: broadcast participants' replies automatically; when false
        only :meth:`broadcast` (and the announcement) reach the participants.
    :param name: the hub's name (a random one when omitted).
    :param inbox_size: how many messages an inbox holds before publishers to it wait.
    :raises TypeError: when a participant is not an agent or the announcement not a Msg.
    :raises ValueError: when *inbox_size* is not a positive integer.

    On exit every link is removed (no agent broadcasts to the former members afterwards) and
    every message already published has been observed. If an observer raised, the body is
    cancelled, the other participants still observe what was published, and the hub exits
    with ``ExceptionGroup`` holding the observer errors (use ``except*``); a body that raised
    itself adds its exception to the group. A body error without observer errors propagates
    unchanged. A cancellation from outside stops every delivery task at once.

    An observer may call another member: that reply reaches the observer re-entrantly, inside
    its ``observe`` (at any depth). A call that could never return — an observer calling the
    agent whose reply it observes, or observers in two tasks each waiting for the other's
    call — raises :class:`MsgHubError` naming the agents on the cycle instead of waiting.
    """

    def __init__(
        self,
        participants: Sequence[AgentBase],
        announcement: list[Msg] | Msg | None = None,
        enable_auto_broadcast: bool = True,
        name: str | None = None,
        *,
        inbox_size: int = DEFAULT_INBOX_SIZE,
    ) -> None:
        if announcement is not None:
            _check_message(announcement, "MsgHub announcement")
        if isinstance(inbox_size, bool) or not isinstance(inbox_size, int) or inbox_size < 1:
            raise ValueError(f"MsgHub inbox_size must be a positive int, not {inbox_size!r}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"MsgHub name must be a str or None, not {type(name).__name__}")
        self.name = name if name is not None else uuid.uuid4().hex[:22]
        self.announcement = announcement
        self.enable_auto_broadcast = bool(enable_auto_broadcast)
        self.inbox_size = inbox_size
        self._members: list[AgentBase] = []
        seen: set[int] = set()
        for agent in _as_agent_list(participants, "MsgHub participants"):
            if id(agent) not in seen:
                seen.add(id(agent))
                self._members.append(agent)
        # Unique per hub even when two hubs share a name, so they never replace each other's
        # link on an agent that is in both.
        self._key = f"msghub:{self.name}:{uuid.uuid4().hex[:8]}"
        self._link = _HubLink(self)
        self._subs: dict[int, _Subscriber] = {}
        # The subscribers of the current members, in member order (publishing reads it).
        self._member_subs: list[_Subscriber] = []
        # Per speaker (by id), the member subscribers other than it, for hubs of up to
        # _CACHED_TARGETS_MAX members; emptied whenever membership changes.
        self._targets_cache: dict[int, list[_Subscriber]] = {}
        self._state = _NEW
        self._task_group: TaskGroup | None = None
        self._body_scope: anyio.CancelScope | None = None
        self._errors: list[Exception] = []
        self._helping = 0  # tasks currently draining other inboxes (publishers, relays)
        self._failure_pending = False
        self._enqueuing = 0  # publishers still putting a message into inboxes
        self._enqueued: anyio.Event | None = None  # set when they are done, at exit
        self._quiet: anyio.Event | None = None  # set when no task helps after a failure

    # -- public API --------------------------------------------------------------------

    @property
    def participants(self) -> list[AgentBase]:
        """The current participants, in order (a new list)."""
        return list(self._members)

    def add(self, new_participant: Sequence[AgentBase] | AgentBase) -> None:
        """Add agent(s) to the hub; they hear every message published from now on.

        Agents already in the hub are ignored.

        :raises TypeError: when an item is not an agent.
        :raises MsgHubError: when the hub has exited.
        """
        agents = _as_agent_list(new_participant, "MsgHub.add participants")
        if self._state == _CLOSED:
            raise MsgHubError(f"MsgHub {self.name!r} has exited; agents cannot be added")
        for agent in agents:
            if any(agent is member for member in self._members):
                continue
            self._members.append(agent)
            if self._state == _OPEN:
                self._join(agent)

    def delete(self, participant: Sequence[AgentBase] | AgentBase) -> None:
        """Remove agent(s) from the hub.

        A removed agent neither hears nor sends hub traffic afterwards (its link is removed,
        so its replies no longer reach the others); messages published to it before it was
        removed are still delivered. Agents not in the hub are skipped with a warning.

        :raises TypeError: when an item is not an agent.
        """
        for agent in _as_agent_list(participant, "MsgHub.delete participants"):
            for index, member in enumerate(self._members):
                if member is agent:
                    del self._members[index]
                    break
            else:
                logger.warning(
                    "MsgHub %r: %s is not a participant; skipping its deletion",
                    self.name,
                    _agent_name(agent),
                )
                continue
            agent._detach_hub(self._key)
            sub = self._subs.get(id(agent))
            if sub is not None:
                sub.member = False
                self._targets_cache.clear()
                for index, member_sub in enumerate(self._member_subs):
                    if member_sub is sub:
                        del self._member_subs[index]
                        break

    async def broadcast(self, msg: list[Msg] | Msg) -> None:
        """Deliver *msg* to every participant (a list is observed as one item, as in
        AgentScope); return once every participant has observed it.

        :raises TypeError: when *msg* is not a Msg or a list of Msg.
        :raises MsgHubError: when the hub is not open (enter it with ``async with``), or when
            a participant's observer raised (the hub then exits with that error).
        """
        _check_message(msg, "MsgHub.broadcast msg")
        if self._state != _OPEN:
            state = "has exited" if self._state == _CLOSED else "has not been entered"
            raise MsgHubError(
                f"MsgHub {self.name!r} {state}; broadcast inside 'async with MsgHub(...) as hub:'"
            )
        await self._deliver(None, msg, self._members)

    def set_auto_broadcast(self, enable: bool) -> None:
        """Turn automatic broadcasting of the participants' replies on or off.

        When off, replies reach nobody through this hub; :meth:`broadcast` still works.
        """
        self.enable_auto_broadcast = bool(enable)
        if self._state != _OPEN:
            return
        for agent in self._members:
            if self.enable_auto_broadcast:
                agent._attach_hub(self._key, self._link)
            else:
                agent._detach_hub(self._key)

    async def __aenter__(self) -> MsgHub:
        if self._state != _NEW:
            raise MsgHubError(f"MsgHub {self.name!r} can be entered only once")
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        self._state = _OPEN
        try:
            for agent in self._members:
                self._join(agent)
            if self.announcement is not None:
                await self._publish(self.announcement, list(self._subs.values()), None)
        except BaseException as exc:
            await self._shutdown(type(exc), exc, exc.__traceback__)
            raise
        if self._errors:
            await self._shutdown(None, None, None)
        # Entered last so that it is the innermost scope: an observer error cancels it.
        self._body_scope = anyio.CancelScope()
        self._body_scope.__enter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        body_scope, self._body_scope = self._body_scope, None
        if body_scope is not None and body_scope.__exit__(exc_type, exc, tb):
            # The hub cancelled its own body because an observer raised.
            exc_type, exc, tb = None, None, None
        return await self._shutdown(exc_type, exc, tb)

    def __repr__(self) -> str:
        state = ("new", "open", "closed")[self._state]
        names = ", ".join(_agent_name(agent) for agent in self._members)
        return f"MsgHub(name={self.name!r}, {state}, participants=[{names}])"

    # -- membership --------------------------------------------------------------------

    def _join(self, agent: AgentBase) -> None:
        sub = self._subs.get(id(agent))
        if sub is None:
            # A subscriber outlives delete(): re-adding an agent reuses its inbox and delivery
            # task, so what it was sent before still comes first.
            sub = _Subscriber(agent, self.inbox_size, self)
            self._subs[id(agent)] = sub
            assert self._task_group is not None
            self._task_group.start_soon(self._run_delivery, sub, name=f"{self._key} delivery")
        # Only agents not currently members are joined (add() skips members).
        self._member_subs.append(sub)
        self._targets_cache.clear()
        sub.member = True
        if self.enable_auto_broadcast:
            agent._attach_hub(self._key, self._link)

    # -- publishing --------------------------------------------------------------------

    async def _deliver(
        self, sender: AgentBase | None, msg: Msg | list[Msg], recipients: Sequence[AgentBase]
    ) -> None:
        if self._state != _OPEN:
            return  # the hub has exited: nothing is delivered to its former members
        if self._errors:
            await self._fail_publisher(sender)
        get = self._subs.get
        targets: list[_Subscriber] = []
        add = targets.append
        for agent in recipients:
            sub = get(id(agent))
            if sub is not None and sub.member and agent is not sender:
                add(sub)
        if not targets:
            return
        ticket = await self._publish(msg, targets, sender)
        if ticket.failed:
            await self._fail_publisher(sender)

    async def _deliver_to_members(self, sender: AgentBase, msg: Msg | list[Msg]) -> None:
        # _deliver to every current member: the member list needs no per-agent lookups.
        if self._state != _OPEN:
            return
        if self._errors:
            await self._fail_publisher(sender)
        # A member speaks (only members have the hub's link), so its id stays its own while
        # the cached list, which membership changes clear, is in use. Tickets only read it.
        targets = self._targets_cache.get(id(sender))
        if targets is None:
            targets = [sub for sub in self._member_subs if sub.agent is not sender]
            if len(self._member_subs) <= _CACHED_TARGETS_MAX:
                self._targets_cache[id(sender)] = targets
        if not targets:
            return
        ticket = await self._publish(msg, targets, sender)
        if ticket.failed:
            await self._fail_publisher(sender)

    async def _fail_publisher(self, sender: AgentBase | None) -> None:
        # After an observer error the hub cancels its body once no task is delivering
        # inline; a publisher inside the body waits for that and is cancelled, so that the
        # hub exits with the observer's error alone.
        if self._errors and self._helping:
            if self._quiet is None:
                self._quiet = anyio.Event()
            await self._quiet.wait()
        await anyio.lowlevel.checkpoint_if_cancelled()
        if self._errors:
            reason = f"an observer raised {self._errors[0]!r}"
        else:
            reason = "the hub was closed or cancelled while delivering"
        raise MsgHubError(
            f"MsgHub {self.name!r}: the message from {_agent_name(sender)} did not reach every "
            f"recipient: {reason}"
        )

    async def _publish(
        self, msg: Msg | list[Msg], targets: list[_Subscriber], sender: AgentBase | None
    ) -> _Ticket:
        plain = isinstance(msg, Msg) or (
            isinstance(msg, list) and all(isinstance(m, Msg) for m in msg)
        )
        chain = _CHAIN.get()
        while chain is not None and chain.done:
            chain = chain.parent
        ticket = _Ticket(targets, plain, sender, chain)
        item = (msg, ticket)
        # Observers run below here (inline) see this ticket as their frame. No reset after:
        # the ticket is marked done, and done frames are skipped (see _CHAIN).
        _CHAIN.set(ticket)
        try:
            # With room in every inbox (the usual case) enqueuing does not await.
            stopped = self._enqueue_now(item, targets, 0)
            if stopped < len(targets):
                self._enqueuing += 1
                try:
                    await self._enqueue(item, targets, stopped, chain)
                finally:
                    self._enqueuing -= 1
                    if self._enqueuing == 0 and self._enqueued is not None:
                        self._enqueued.set()
            await self._help(ticket, ticket)
            if chain is not None:
                # Published from inside an observer: recipients up this task's stack cannot
                # drain their inboxes until this returns, so they observe it here.
                await self._reenter(ticket, chain)
            if ticket.remaining:
                await _wait_for_ticket(ticket)
        finally:
            ticket.done = True
        return ticket

    async def _reenter(self, ticket: _Ticket, chain: _Frame) -> None:
        """Deliver to the recipients whose inbox is drained by a frame of *chain* (so it waits
        for this publisher): in this task, re-entrantly, everything queued for them in order —
        what was queued before this message, then this message."""
        for sub in ticket.targets:
            if not sub.queued:
                continue
            busy = sub.busy
            if busy:
                if _in_chain(busy, chain):
                    await self._drain(sub, ticket)
            elif sub.slow and _in_chain(sub.frame, chain):
                # Left to its delivery task, which is this task, further up: not re-entrant.
                await self._drain(sub, ticket)

    def _enqueue_now(self, item: _Item, targets: list[_Subscriber], start: int) -> int:
        """Put *item* in the inboxes of ``targets[start:]`` in order, up to the first one that
        is full; return that one's index (``len(targets)`` when none was full)."""
        ticket = item[1]
        for index in range(start, len(targets)):
            sub = targets[index]
            if sub.closed:
                ticket.settle(False)  # the hub closed while this message was being enqueued
                continue
            if not sub.queued:
                sub.slot = item
            else:
                try:
                    sub.send.send_nowait(item)
                except anyio.WouldBlock:
                    return index
            sub.queued += 1
            if sub.slow:
                self._wake(sub)
        return len(targets)

    async def _enqueue(
        self, item: _Item, targets: list[_Subscriber], start: int, chain: _Frame | None
    ) -> None:
        """Put *item* in the inboxes of ``targets[start:]`` in order, waiting for room in full
        ones (backpressure)."""
        while start < len(targets):
            sub = targets[start]
            if chain is not None and (
                _in_chain(sub.busy, chain) or (not sub.busy and _in_chain(sub.frame, chain))
            ):
                # Full, and drained by a frame up this task's stack: nobody else can make room.
                await self._drain(sub, item[1])
                start = self._enqueue_now(item, targets, start)
                continue
            await self._enqueue_when_room(targets[start], item)
            start = self._enqueue_now(item, targets, start + 1)

    async def _enqueue_when_room(self, sub: _Subscriber, item: _Item) -> None:
        """Backpressure: wait until *sub*'s delivery has taken something from its full inbox.

        :raises MsgHubError: when *sub*'s observer waits for this publisher (a wait cycle).
        """
        ticket = item[1]
        while True:
            self._wake(sub)
            if sub.room is None:
                sub.room = anyio.Event()
            wait = _Wait(ticket, _ROOM, sub)
            try:
                wait.begin()
                try:
                    await sub.room.wait()
                finally:
                    wait.end()
            except BaseException:
                ticket.settle(False)
                raise
            if sub.closed:
                ticket.settle(False)
                return
            try:
                sub.send.send_nowait(item)
            except anyio.WouldBlock:
                continue
            sub.queued += 1
            if sub.slow:
                self._wake(sub)
            return

    async def _help(self, ticket: _Ticket, frame: _Frame) -> None:
        """Drain the inboxes of *ticket*'s recipients that nobody is draining, in turn.

        Before each inline delivery one delivery task is woken as a *relay*: if the observer
        blocks, the relay carries on with the next recipients (and wakes a relay of its own),
        so a blocking observer never holds up the others. If nothing blocks, the relay finds
        the work done: one wasted wake-up per message instead of one per recipient.
        """
        targets = ticket.targets
        count = len(targets)
        self._helping += 1
        clock = time.perf_counter
        hook_counts = HOOK_COUNTS
        # Whether this helper still has to wake a relay (other helpers of the ticket only ever
        # start after one was woken, so the ticket's flag need not be read again).
        relay_pending = not ticket.relay
        last = clock()
        try:
            while True:
                # The cursor lives on the ticket: a relay continues from where it stands.
                cursor = ticket.cursor
                if cursor >= count:
                    break
                sub = targets[cursor]
                cursor += 1
                ticket.cursor = cursor
                if sub.busy or sub.slow or not sub.queued:
                    continue  # its drainer or delivery task takes the message in order
                if relay_pending and cursor < count:
                    relay = targets[cursor]
                    if relay.wake is not None and relay.help is None:
                        relay_pending = False
                        ticket.relay = True
                        relay.help = ticket
                        relay.wake.set()
                if sub.queued == 1 and not sub.failed:
                    # The usual case, one message, delivered without the _drain frame: same
                    # steps as _drain, kept in step with it.
                    sub.busy = frame
                    slot = sub.slot
                    if slot is not None:
                        sub.slot = None
                        msg, taken = slot
                    else:
                        msg, taken = sub.receive.receive_nowait()
                    sub.current = taken
                    sub.queued = 0
                    if sub.room is not None:
                        sub.room.set()
                        sub.room = None
                    try:
                        observe = sub.observe
                        if (
                            observe is not None
                            and taken.plain
                            and not hook_counts[1]
                            and not sub.instance_hooks
                        ):
                            await observe(sub.agent, msg)
                        else:
                            await sub.agent.observe(msg)
                    except Exception as exc:
                        taken.settle(False)
                        self._observer_failed(sub, exc)
                    except BaseException:
                        taken.settle(False)
                        self._wake(sub)  # messages queued meanwhile go to its delivery task
                        raise
                    else:
                        remaining = taken.remaining - 1
                        taken.remaining = remaining
                        if not remaining and taken.event is not None:
                            taken.event.set()
                    finally:
                        sub.busy = False
                        if sub.closed:
                            self._wake(sub)
                    if sub.queued:
                        # Queued by other publishers while this observe ran: they skipped
                        # the busy inbox and count on this drainer.
                        await self._drain(sub, frame)
                else:
                    await self._drain(sub, frame)
                now = clock()
                if now - last > SLOW_OBSERVE_SECONDS:
                    # Twice in a row: once may be the process being paused, not the observer.
                    sub.strikes += 1
                    sub.slow = sub.strikes >= SLOW_STRIKES
                elif sub.strikes:
                    sub.strikes = 0
                last = now
        except BaseException:
            # A cancelled helper hands what it did not reach to the delivery tasks.
            for sub in targets[ticket.cursor :]:
                self._wake(sub)
            raise
        finally:
            self._helping -= 1
            if self._failure_pending and self._helping == 0:
                self._cancel_body()
                if self._quiet is not None:
                    self._quiet.set()

    # -- delivering --------------------------------------------------------------------

    @staticmethod
    def _wake(sub: _Subscriber) -> None:
        wake = sub.wake
        if wake is not None:
            wake.set()

    async def _drain(self, sub: _Subscriber, frame: _Frame) -> None:
        """Observe everything in *sub*'s inbox, in order, as *frame*.

        The caller checked that the inbox is not busy, or that it is drained by a frame up
        the caller's own stack (waiting for the caller): a re-entrant drain, which leaves the
        inbox to that frame again when done.
        """
        outer, outer_current = sub.busy, sub.current
        if outer:
            sub.nested.append((outer, outer_current))
        sub.busy = frame
        receive = sub.receive
        ticket: _Ticket | None = None
        try:
            # Counting instead of draining to WouldBlock saves raising an exception per drain.
            while sub.queued:
                slot = sub.slot
                if slot is not None:
                    sub.slot = None
                    msg, ticket = slot
                else:
                    msg, ticket = receive.receive_nowait()
                sub.queued -= 1
                sub.current = ticket
                room = sub.room
                if room is not None:
                    sub.room = None
                    room.set()
                if sub.failed:
                    ticket.settle(False)
                    ticket = None
                    continue
                try:
                    observe = sub.observe
                    if (
                        observe is not None
                        and ticket.plain
                        and not HOOK_COUNTS[1]
                        and not sub.instance_hooks
                    ):
                        # No hook can apply: what the hook wrapper would call, directly.
                        await observe(sub.agent, msg)
                    else:
                        await sub.agent.observe(msg)
                except Exception as exc:
                    ticket.settle(False)
                    ticket = None
                    self._observer_failed(sub, exc)
                    continue
                # ticket.settle(True), inlined: this is the hot path.
                ticket.remaining -= 1
                if not ticket.remaining and ticket.event is not None:
                    ticket.event.set()
                ticket = None
        except BaseException:
            # Cancelled mid-observe: the message in hand was not (fully) observed.
            if ticket is not None:
                ticket.settle(False)
            self._wake(sub)
            raise
        finally:
            sub.busy, sub.current = outer, outer_current
            if outer:
                sub.nested.pop()
            elif sub.closed:
                self._wake(sub)  # a sleeping delivery task may now end

    async def _run_delivery(self, sub: _Subscriber) -> None:
        frame = sub.frame
        _CHAIN.set(frame)  # this task's own context: observers run here are below its frame
        try:
            while True:
                ticket, sub.help = sub.help, None
                if ticket is not None:
                    # Woken as a relay: help first (this inbox is next in line anyway) so
                    # that the relay chain goes on even if this observer blocks too.
                    ticket.relay = False
                    frame.helping = ticket
                    try:
                        await self._help(ticket, frame)
                    finally:
                        frame.helping = None
                if sub.queued and not sub.busy:
                    if sub.slow:
                        # A pause of the whole process (GC, the OS scheduler) can make a fast
                        # observer look slow; a quick drain here makes it fast again.
                        started = time.perf_counter()
                        await self._drain(sub, frame)
                        if time.perf_counter() - started <= SLOW_OBSERVE_SECONDS:
                            sub.slow = False
                            sub.strikes = 0
                    else:
                        await self._drain(sub, frame)
                if sub.help is not None:
                    continue
                if sub.closed and not sub.queued:
                    return
                sub.wake = anyio.Event()
                await sub.wake.wait()
                sub.wake = None
        finally:
            sub.wake = None
            sub.help = None

    def _observer_failed(self, sub: _Subscriber, exc: Exception) -> None:
        self._errors.append(exc)
        sub.failed = True
        if sub.member:
            self.delete(sub.agent)
        self._failure_pending = True
        if self._helping == 0:
            self._cancel_body()

    def _cancel_body(self) -> None:
        if self._body_scope is not None:
            self._body_scope.cancel()

    # -- closing -----------------------------------------------------------------------

    async def _shutdown(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        stopping = exc is not None and not isinstance(exc, Exception)
        chain = _CHAIN.get()
        if chain is not None and chain.done:
            # The last message this task published is done: its ticket must not keep this
            # hub's inboxes alive in the task's context after the exit.
            _CHAIN.set(_active(chain))
        self._state = _CLOSED
        for sub in self._subs.values():
            sub.agent._detach_hub(self._key)
            sub.member = False
        self._members.clear()
        self._member_subs.clear()
        self._targets_cache.clear()
        interrupted: BaseException | None = None
        if self._enqueuing and not stopping:
            # Publishers that started before the exit finish putting their message in the
            # inboxes (waiting for room if need be): it is then delivered like the rest.
            self._enqueued = anyio.Event()
            try:
                await self._enqueued.wait()
            except BaseException as cancelled:
                # Cancelled meanwhile: the task group must still be exited, at once.
                interrupted = cancelled
                exc_type, exc, tb = type(cancelled), cancelled, cancelled.__traceback__
                stopping = True
        for sub in self._subs.values():
            sub.closed = True
            sub.send.close()
            self._wake(sub)
            if sub.room is not None:
                sub.room.set()
        task_group, self._task_group = self._task_group, None
        assert task_group is not None
        try:
            if stopping:
                # Cancelled from outside (or KeyboardInterrupt): stop every delivery at once.
                suppressed = await task_group.__aexit__(exc_type, exc, tb)
            else:
                # Normal exit or a body error: deliver everything already published first.
                suppressed = await task_group.__aexit__(None, None, None)
        finally:
            self._settle_leftovers()
        if interrupted is not None and not suppressed:
            raise interrupted
        if self._errors:
            errors: list[Exception] = list(self._errors)
            if isinstance(exc, Exception):
                errors.append(exc)
            count = len(self._errors)
            raise ExceptionGroup(
                f"MsgHub {self.name!r}: {count} observer{'s' if count > 1 else ''} raised", errors
            )
        return bool(suppressed) if stopping else False

    def _settle_leftovers(self) -> None:
        # After a cancellation some inboxes may still hold messages: release their publishers
        # (they raise MsgHubError instead of waiting forever) and close the streams.
        for sub in self._subs.values():
            if sub.slot is not None:
                sub.slot[1].settle(False)
                sub.slot = None
                sub.queued -= 1
            while True:
                try:
                    _, ticket = sub.receive.receive_nowait()
                except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                    break
                sub.queued -= 1
                ticket.settle(False)
            sub.receive.close()
