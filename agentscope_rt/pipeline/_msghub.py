"""MsgHub: a group of agents that hear each other's replies.

(About 870 lines: publishing, helping and delivery share the hub's membership and inbox state
and the guarantees below; tickets and wait cycles live in `_tickets.py` and `_waits.py`.)

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

How it is built, and why. Each participant has an *inbox* (bounded: ``inbox_size``
messages) and, while its messages back up, a *delivery task* in the hub's task group that
calls its ``observe`` for one message at a time, in inbox order. Publishing puts the message
in every recipient's inbox — waiting for room only when an inbox is full, which is the
backpressure a slow observer applies to publishers — and then waits once for a per-message
*ticket* that counts the recipients still to observe it. A message put in an *empty* inbox
goes to the inbox's one-message slot (it is older than anything queued after it, so order is
kept): with fast observers an inbox rarely holds more than one message, and its queue is made
only when a second one arrives. A member costs a few hundred bytes and no task while the hub
is idle (a hub of a million members holds no million sleeping tasks): a delivery task is
started when needed (a relay, a slow observer, messages left after a cancelled helper, see
``MsgHub._wake``) and ends once idle; a slow observer's task stays until the hub exits.

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
delivery the helper also wakes (or starts) one delivery task as a *relay* (see
``MsgHub._unattended``): an observer that blocks the first time it is met then delays the
others by no more than a task switch. Helpers, relays and delivery tasks all observe through
one routine, ``MsgHub._drain``.

Exit closes every inbox once the publishers that had started are done enqueuing, lets the
delivery tasks drain them, and only then leaves the task group; a cancellation from outside
skips the draining and stops every task at once.

Re-entrancy. An observer may call another member (bob's ``observe`` awaits ``carol()`` while
alice speaks). Bob's inbox is then drained by a *frame* — alice's publisher, a relay or bob's
delivery task — that is suspended in bob's ``observe`` until carol's call returns, so carol's
reply could never reach bob through the inbox. The rule: a message published while frames run
observers further up the publishing task (``CHAIN``, a context variable set once per publish,
which tasks started inside an observer inherit) is delivered to the recipients those frames
drain re-entrantly, in the publishing task — everything queued for them, oldest first, then
the message (``_reenter``); into a full inbox of such a recipient likewise, instead of waiting
for room. Every guarantee above still holds (inbox order of observe starts, exactly once, never
to the sender, bounded inboxes, a call returns once its reply is observed); one agent's
``observe`` may just run inside itself.

Waits that can never end (an observer calling the agent whose reply it observes, or observers
in two tasks each calling an agent whose reply waits for the other) are refused with
:class:`MsgHubError` naming the agents on the cycle instead of hanging: see ``._waits``. The
frames, tickets and inboxes themselves are in ``._tickets``.
"""

from __future__ import annotations

import contextvars
import logging
import time
import uuid
from collections.abc import Callable, Coroutine, Iterable, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup

from ..agent import set_lock_wait_watcher
from ..exception import MsgHubError
from ..message import Msg
from ._tickets import (
    CHAIN,
    DeliveryFrame,
    Frame,
    Item,
    Subscriber,
    Ticket,
    active_chain,
    agent_name,
    in_chain,
)
from ._waits import ROOM, LockWatcher, Wait, wait_for_ticket

if TYPE_CHECKING:
    from ..agent import AgentBase

__all__ = [
    "DEFAULT_INBOX_SIZE",
    "SLOW_OBSERVE_SECONDS",
    "HubObserver",
    "MsgHub",
    "add_hub_observer",
    "remove_hub_observer",
]

logger = logging.getLogger(__name__)

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

set_lock_wait_watcher(LockWatcher())

HubObserver = Callable[["MsgHub", str], None]
"""``observer(hub, event)``, called after *hub*'s membership changed: *event* is ``"enter"``,
``"add"``, ``"delete"`` or ``"exit"``; ``hub.participants`` is the membership after it."""

# Observers of membership changes (a studio page); empty unless one is added, so a hub pays a
# tuple test per membership change and nothing per message.
_hub_observers: tuple[HubObserver, ...] = ()


def add_hub_observer(observer: HubObserver) -> None:
    """Call ``observer(hub, event)`` after every membership change of every hub: entering
    (``"enter"``), :meth:`MsgHub.add` (``"add"``), :meth:`MsgHub.delete` (``"delete"``) and
    exiting (``"exit"``, with no participants left). Adding an observer twice has no effect.

    The observer runs synchronously in the task that changed the membership; it must be quick
    and must not raise (an exception it raises is logged and ignored). Delivery of messages is
    not observed here (print hooks see what agents say).

    :raises TypeError: when *observer* is not callable.
    """
    global _hub_observers
    if not callable(observer):
        raise TypeError(f"a hub observer must be callable, not {type(observer).__name__}")
    if observer not in _hub_observers:
        _hub_observers = (*_hub_observers, observer)


def remove_hub_observer(observer: HubObserver) -> None:
    """Stop calling *observer* (a no-op when it was not added)."""
    global _hub_observers
    _hub_observers = tuple(o for o in _hub_observers if o is not observer)


def _notify(hub: MsgHub, event: str) -> None:
    for observer in _hub_observers:
        try:
            observer(hub, event)
        except Exception:
            logger.exception("MsgHub %r: a hub observer raised on %r", hub.name, event)


class _HubLink:
    """What the hub attaches to each participant (see ``agentscope_rt.agent.HubLink``)."""

    __slots__ = ("_hub",)

    def __init__(self, hub: MsgHub) -> None:
        self._hub = hub

    def recipients(self, sender: AgentBase) -> Sequence[AgentBase]:
        return [agent for agent in self._hub._members if agent is not sender]

    async def deliver(self, sender: AgentBase, msg: Msg, recipients: Sequence[AgentBase]) -> None:
        hub = self._hub
        await hub._deliver(sender, msg, hub._targets_among(sender, recipients))

    def publish(self, sender: AgentBase, msg: Msg) -> Coroutine[Any, Any, None]:
        # The hub's coroutine itself, not one wrapping it: one frame less per reply.
        hub = self._hub
        return hub._deliver(sender, msg, hub._targets_of(sender))


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
        self._subs: dict[int, Subscriber] = {}
        # The subscribers of the current members, in member order (publishing reads it).
        self._member_subs: list[Subscriber] = []
        # Per speaker (by id), the member subscribers other than it, for hubs of up to
        # _CACHED_TARGETS_MAX members; emptied whenever membership changes.
        self._targets_cache: dict[int, list[Subscriber]] = {}
        self._state = _NEW
        self._task_group: TaskGroup | None = None
        self._context = contextvars.Context()  # the context the hub was entered in
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
        if _hub_observers:
            _notify(self, "add")

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
                    agent_name(agent),
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
        if _hub_observers:
            _notify(self, "delete")

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
        await self._deliver(None, msg, self._targets_among(None, self._members))

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
        self._context = contextvars.copy_context()
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
        if _hub_observers:
            _notify(self, "enter")
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
        names = ", ".join(agent_name(agent) for agent in self._members)
        return f"MsgHub(name={self.name!r}, {state}, participants=[{names}])"

    # -- membership --------------------------------------------------------------------

    def _join(self, agent: AgentBase) -> None:
        sub = self._subs.get(id(agent))
        if sub is None:
            # A subscriber outlives delete(): re-adding an agent reuses its inbox and delivery
            # task, so what it was sent before still comes first.
            sub = Subscriber(agent, self.inbox_size, self)
            self._subs[id(agent)] = sub
        # Only agents not currently members are joined (add() skips members).
        self._member_subs.append(sub)
        self._targets_cache.clear()
        sub.member = True
        if self.enable_auto_broadcast:
            agent._attach_hub(self._key, self._link)

    # -- publishing --------------------------------------------------------------------

    def _targets_among(
        self, sender: AgentBase | None, recipients: Sequence[AgentBase]
    ) -> list[Subscriber]:
        """The subscribers of *recipients* that are members, other than *sender*."""
        get = self._subs.get
        targets: list[Subscriber] = []
        add = targets.append
        for agent in recipients:
            sub = get(id(agent))
            if sub is not None and sub.member and agent is not sender:
                add(sub)
        return targets

    def _targets_of(self, sender: AgentBase) -> list[Subscriber]:
        """The subscribers of every current member other than *sender* (a member: only members
        have the hub's link): from the member list, with no per-agent lookups."""
        # The speaker's id stays its own while the cached list, which membership changes
        # clear, is in use. Tickets only read it.
        targets = self._targets_cache.get(id(sender))
        if targets is None:
            targets = [sub for sub in self._member_subs if sub.agent is not sender]
            if len(self._member_subs) <= _CACHED_TARGETS_MAX:
                self._targets_cache[id(sender)] = targets
        return targets

    async def _deliver(
        self, sender: AgentBase | None, msg: Msg | list[Msg], targets: list[Subscriber]
    ) -> None:
        """Publish *msg* from *sender* to *targets*; return once each has observed it.

        :raises MsgHubError: when an observer raised (before or during this delivery).
        """
        if self._state != _OPEN:
            return  # the hub has exited: nothing is delivered to its former members
        if self._errors:
            await self._fail_publisher(sender)
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
            f"MsgHub {self.name!r}: the message from {agent_name(sender)} did not reach every "
            f"recipient: {reason}"
        )

    async def _publish(
        self, msg: Msg | list[Msg], targets: list[Subscriber], sender: AgentBase | None
    ) -> Ticket:
        chain = active_chain(CHAIN.get())
        ticket = Ticket(targets, sender, chain)
        item = (msg, ticket)
        # Observers run below here (inline) see this ticket as their frame. No reset after:
        # the ticket is marked done, and done frames are skipped (see CHAIN).
        CHAIN.set(ticket)
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
                await wait_for_ticket(ticket)
        finally:
            ticket.done = True
        return ticket

    async def _reenter(self, ticket: Ticket, chain: Frame) -> None:
        """Deliver to the recipients whose inbox is drained by a frame of *chain* (so it waits
        for this publisher): in this task, re-entrantly, everything queued for them in order —
        what was queued before this message, then this message."""
        for sub in ticket.targets:
            if not sub.queued:
                continue
            busy = sub.busy
            if busy:
                if in_chain(busy, chain):
                    await self._drain((sub,), ticket)
            elif sub.slow and in_chain(sub.frame, chain):
                # Left to its delivery task, which is this task, further up: not re-entrant.
                await self._drain((sub,), ticket)

    def _enqueue_now(self, item: Item, targets: list[Subscriber], start: int) -> int:
        """Put *item* in the inboxes of ``targets[start:]`` in order, up to the first one that
        is full; return that one's index (``len(targets)`` when none was full)."""
        ticket = item[1]
        for index in range(start, len(targets)):
            sub = targets[index]
            if sub.closed:
                ticket.settle(False)  # the hub closed while this message was being enqueued
                continue
            if not sub.put(item):
                return index
            if sub.slow:
                self._wake(sub)
        return len(targets)

    async def _enqueue(
        self, item: Item, targets: list[Subscriber], start: int, chain: Frame | None
    ) -> None:
        """Put *item* in the inboxes of ``targets[start:]`` in order, waiting for room in full
        ones (backpressure)."""
        while start < len(targets):
            sub = targets[start]
            if chain is not None and (
                in_chain(sub.busy, chain) or (not sub.busy and in_chain(sub.frame, chain))
            ):
                # Full, and drained by a frame up this task's stack: nobody else can make room.
                await self._drain((sub,), item[1])
                start = self._enqueue_now(item, targets, start)
                continue
            await self._enqueue_when_room(targets[start], item)
            start = self._enqueue_now(item, targets, start + 1)

    async def _enqueue_when_room(self, sub: Subscriber, item: Item) -> None:
        """Backpressure: wait until *sub*'s delivery has taken something from its full inbox.

        :raises MsgHubError: when *sub*'s observer waits for this publisher (a wait cycle).
        """
        ticket = item[1]
        while True:
            self._wake(sub)
            if sub.room is None:
                sub.room = anyio.Event()
            try:
                with Wait(ticket, ROOM, sub):
                    await sub.room.wait()
            except BaseException:
                ticket.settle(False)
                raise
            if sub.closed:
                ticket.settle(False)
                return
            if not sub.put(item):
                continue
            if sub.slow:
                self._wake(sub)
            return

    async def _help(self, ticket: Ticket, frame: Frame) -> None:
        """Drain the inboxes of *ticket*'s recipients that nobody is draining, in turn (see
        :meth:`_unattended`), as *frame*."""
        self._helping += 1
        try:
            await self._drain(self._unattended(ticket), frame)
        except BaseException:
            # A cancelled helper hands what it did not reach to the delivery tasks.
            for sub in ticket.targets[ticket.cursor :]:
                self._wake(sub)
            raise
        finally:
            self._helping -= 1
            if self._failure_pending and self._helping == 0:
                self._cancel_body()
                if self._quiet is not None:
                    self._quiet.set()

    def _unattended(self, ticket: Ticket) -> Iterator[Subscriber]:
        """The recipients of *ticket* with messages queued that neither a drainer nor their
        delivery task (slow observers) takes care of, one at a time, for a helper to drain.

        Before each one a delivery task is woken as a *relay*: if the observer blocks, the
        relay carries on with the next recipients (and wakes a relay of its own), so a
        blocking observer never holds up the others. If nothing blocks, the relay finds the
        work done: one wasted wake-up per message instead of one per recipient. After each
        one, a drain that took longer than :data:`SLOW_OBSERVE_SECONDS` counts a strike.
        """
        # A generator, not a coroutine per recipient: resuming it costs a fraction of a
        # coroutine call, and this runs once per delivery.
        targets = ticket.targets
        count = len(targets)
        clock = time.perf_counter
        # Whether this helper still has to wake a relay (other helpers of the ticket only ever
        # start after one was woken, so the ticket's flag need not be read again).
        relay_pending = not ticket.relay
        last = clock()
        while True:
            # The cursor lives on the ticket: a relay continues from where it stands.
            cursor = ticket.cursor
            if cursor >= count:
                return
            sub = targets[cursor]
            cursor += 1
            ticket.cursor = cursor
            if sub.busy or sub.slow or not sub.queued:
                continue  # its drainer or delivery task takes the message in order
            if relay_pending and cursor < count:
                relay = targets[cursor]
                if relay.help is None and (relay.wake is not None or not relay.running):
                    relay_pending = False
                    ticket.relay = True
                    relay.help = ticket
                    self._wake(relay)
            yield sub
            now = clock()
            if now - last > SLOW_OBSERVE_SECONDS:
                # Twice in a row: once may be the process being paused, not the observer.
                sub.strikes += 1
                sub.slow = sub.strikes >= SLOW_STRIKES
            elif sub.strikes:
                sub.strikes = 0
            last = now

    # -- delivering --------------------------------------------------------------------

    def _wake(self, sub: Subscriber) -> None:
        """Wake *sub*'s delivery task if it sleeps; start one if it has none and there is
        something for it to do (messages queued, a message to relay)."""
        wake = sub.wake
        if wake is not None:
            wake.set()
        elif (
            not sub.running
            and (sub.queued or sub.help is not None)
            and self._task_group is not None
        ):
            sub.running = True
            # In the context the hub was entered in, as if started there: not in the
            # context of whichever publisher or observer happens to need the task.
            self._context.run(self._start_delivery, sub)

    def _start_delivery(self, sub: Subscriber) -> None:
        assert self._task_group is not None
        self._task_group.start_soon(self._run_delivery, sub, name=f"{self._key} delivery")

    async def _drain(self, subs: Iterable[Subscriber], frame: Frame) -> None:
        """Observe everything in the inbox of each of *subs* in turn, in inbox order, as
        *frame*; the next one is taken from *subs* once the inbox before it is empty.

        For each, the caller checked that the inbox is not busy, or that it is drained by a
        frame up the caller's own stack (waiting for the caller): a re-entrant drain, which
        leaves the inbox to that frame again when done.
        """
        for sub in subs:
            outer = sub.busy
            if outer:
                if sub.nested is None:
                    sub.nested = []
                sub.nested.append((outer, sub.current))
            sub.busy = frame
            try:
                # Counting instead of draining to WouldBlock saves raising an exception per
                # drain.
                while sub.queued:
                    msg, ticket = sub.take()
                    sub.current = ticket
                    room = sub.room
                    if room is not None:
                        sub.room = None
                        room.set()
                    if sub.failed:
                        ticket.settle(False)
                        continue
                    try:
                        await sub.agent.observe(msg)
                    except Exception as exc:
                        ticket.settle(False)
                        self._observer_failed(sub, exc)
                        continue
                    except BaseException:
                        # Cancelled mid-observe: the message was not (fully) observed.
                        ticket.settle(False)
                        raise
                    ticket.settle(True)
            except BaseException:
                self._wake(sub)  # what is still queued goes to its delivery task
                raise
            finally:
                if outer:
                    # Back to the observe this drain was nested in.
                    assert sub.nested is not None
                    sub.busy, sub.current = sub.nested.pop()
                else:
                    sub.busy = False
                    if sub.closed:
                        self._wake(sub)  # a sleeping delivery task may now end

    async def _run_delivery(self, sub: Subscriber) -> None:
        """Drain *sub*'s inbox and relay what it is asked to; end when idle (the hub starts
        it again when needed, see :meth:`_wake`), except that a slow observer's task stays
        until the hub closes (publishers then leave its messages to it)."""
        frame = sub.frame
        if frame is None:
            frame = sub.frame = DeliveryFrame(sub)
        CHAIN.set(frame)  # this task's own context: observers run here are below its frame
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
                        await self._drain((sub,), frame)
                        if time.perf_counter() - started <= SLOW_OBSERVE_SECONDS:
                            sub.slow = False
                            sub.strikes = 0
                    else:
                        await self._drain((sub,), frame)
                if sub.help is not None:
                    continue
                if not sub.queued and (sub.closed or not sub.slow):
                    return
                sub.wake = anyio.Event()
                await sub.wake.wait()
                sub.wake = None
        finally:
            sub.wake = None
            sub.help = None
            sub.running = False

    def _observer_failed(self, sub: Subscriber, exc: Exception) -> None:
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
        chain = CHAIN.get()
        if chain is not None and chain.done:
            # The last message this task published is done: its ticket must not keep this
            # hub's inboxes alive in the task's context after the exit.
            CHAIN.set(active_chain(chain))
        self._state = _CLOSED
        for sub in self._subs.values():
            sub.agent._detach_hub(self._key)
            sub.member = False
        self._members.clear()
        self._member_subs.clear()
        self._targets_cache.clear()
        if _hub_observers:
            _notify(self, "exit")
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
            self._wake(sub)
            if sub.room is not None:
                sub.room.set()
        task_group = self._task_group
        assert task_group is not None
        try:
            # Delivery tasks may still be started while the group waits for the others (a
            # publisher outside the hub still helping): what it queued is then delivered too.
            if stopping:
                # Cancelled from outside (or KeyboardInterrupt): stop every delivery at once.
                suppressed = await task_group.__aexit__(exc_type, exc, tb)
            else:
                # Normal exit or a body error: deliver everything already published first.
                suppressed = await task_group.__aexit__(None, None, None)
        finally:
            self._task_group = None
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
            sub.settle_queued()
