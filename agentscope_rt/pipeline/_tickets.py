"""A message hub's delivery bookkeeping: frames, tickets and inboxes.

A *ticket* is one published message: it counts the recipients that have not finished observing
it, and wakes its publisher when none is left. A *subscriber* is one participant's inbox (a
one-message slot, then a bounded anyio memory object stream) and the state of its delivery. A
*frame* is a place where observers run — a publisher helping its own message along (its
ticket) or a participant's delivery task — and the frames of the current task, innermost
first, are :data:`CHAIN`. ``agentscope_rt.pipeline._msghub`` drives all of this; the wait
cycle checks of ``._waits`` read it.
"""

from __future__ import annotations

from collections import deque
from contextvars import ContextVar
from typing import TYPE_CHECKING, Literal

import anyio

from ..message import Msg

if TYPE_CHECKING:
    from ..agent import AgentBase
    from ._msghub import MsgHub

__all__ = [
    "CHAIN",
    "DeliveryFrame",
    "Frame",
    "Item",
    "Subscriber",
    "Ticket",
    "active_chain",
    "agent_name",
    "in_chain",
]

Item = tuple["Msg | list[Msg]", "Ticket"]


class Frame:
    """A place where observers run: a publisher helping its message along (its ticket) or a
    delivery task. The frames of the current task, innermost first, are :data:`CHAIN`."""

    __slots__ = ("done", "parent", "sender")

    def __init__(self, parent: Frame | None, sender: AgentBase | None) -> None:
        self.parent = parent
        # The agent whose call runs this frame (a publisher's frame); its lock is held until
        # the frame is done.
        self.sender = sender
        self.done = False


CHAIN: ContextVar[Frame | None] = ContextVar("agentscope_rt_msghub_chain", default=None)
"""The innermost frame of the current task (its ``parent`` the next one out), or None. Set
once per publish, not per delivery, and not reset after it: a publish marks its frame done
instead (resetting would cost a second context change per message), and frames that are done
are skipped. Tasks started by an observer inherit it, so what they publish reaches that
observer re-entrantly too."""


def active_chain(chain: Frame | None) -> Frame | None:
    """*chain* without its innermost frames that are done."""
    while chain is not None and chain.done:
        chain = chain.parent
    return chain


def in_chain(frame: object, chain: Frame | None) -> bool:
    """Whether *frame* is one of *chain*'s frames (done or not)."""
    while chain is not None:
        if chain is frame:
            return True
        chain = chain.parent
    return False


class DeliveryFrame(Frame):
    """A delivery task's frame (the root of its task's chain)."""

    __slots__ = ("helping", "hub", "sub")

    def __init__(self, sub: Subscriber) -> None:
        super().__init__(None, None)
        self.sub = sub
        self.hub = sub.hub
        self.helping: Ticket | None = None  # the message it relays, while it does


class Ticket(Frame):
    """One published message: how many recipients have not finished observing it. Also the
    publisher's frame while it helps deliver the message."""

    __slots__ = ("cursor", "event", "failed", "relay", "remaining", "targets")

    def __init__(
        self,
        targets: list[Subscriber],
        sender: AgentBase | None,
        parent: Frame | None,
    ) -> None:
        super().__init__(parent, sender)
        self.targets = targets
        self.remaining = len(targets)
        self.cursor = 0  # the next target a helper looks at
        self.relay = False  # a delivery task has been woken to help if a helper blocks
        self.failed = False
        self.event: anyio.Event | None = None

    def settle(self, delivered: bool) -> None:
        """Count one recipient as done (*delivered*: it observed the message; else it failed
        or was cancelled, and the publisher is told so through :attr:`failed`); wake the
        publisher when it was the last one."""
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


class Subscriber:
    """A participant's inbox and the state of its delivery.

    Everything a participant needs only when messages back up (its queue beyond the first
    message, its delivery task and that task's frame, the stack of re-entered observes) is
    made when first needed, so that a member of a hub of a million costs a few hundred bytes
    and no task while the hub is idle.
    """

    __slots__ = (
        "agent",
        "busy",
        "capacity",
        "closed",
        "current",
        "failed",
        "frame",
        "help",
        "hub",
        "inbox",
        "member",
        "nested",
        "queued",
        "room",
        "running",
        "slot",
        "slow",
        "strikes",
        "wake",
    )

    def __init__(self, agent: AgentBase, inbox_size: int, hub: MsgHub) -> None:
        self.agent = agent
        self.hub = hub
        self.capacity = inbox_size  # messages the queue holds beyond the slot
        self.member = True  # False after delete(): its inbox is drained, nothing new is added
        # The frame draining the inbox (observe runs one message at a time), or False (not
        # None: False is the interpreter's fastest truth test, on the hot path); a frame in
        # the chain of a publisher means that this observer is up the publisher's stack.
        self.busy: Frame | Literal[False] = False
        self.current: Ticket | None = None  # the message being observed, while busy
        # While drained re-entrantly: the (frame, message) of each observe it is nested in.
        self.nested: list[tuple[Frame, Ticket | None]] | None = None
        self.frame: DeliveryFrame | None = None  # its delivery task's, once it ran
        self.running = False  # its delivery task is running (or about to)
        self.slow = False  # left to the delivery task; publishers do not help
        self.strikes = 0  # consecutive slow inline deliveries
        self.failed = False  # its observe raised; later messages are settled undelivered
        self.closed = False  # the hub closed the inbox: no new messages
        self.queued = 0  # messages in the inbox (slot and queue) not yet taken
        # The first message put in an empty inbox: the common case (one message in flight)
        # needs no queue. Always older than what the queue holds.
        self.slot: Item | None = None
        self.inbox: deque[Item] | None = None  # the rest, in order (made when first needed)
        self.wake: anyio.Event | None = None  # set while the delivery task sleeps
        self.room: anyio.Event | None = None  # set while publishers wait for a full inbox
        self.help: Ticket | None = None  # a message whose delivery its task should help with

    def put(self, item: Item) -> bool:
        """Queue *item*; ``False`` (nothing queued) when the inbox is full."""
        if self.queued:
            inbox = self.inbox
            if inbox is None:
                inbox = self.inbox = deque()
            elif len(inbox) >= self.capacity:
                return False
            inbox.append(item)
        else:
            self.slot = item
        self.queued += 1
        return True

    def take(self) -> Item:
        """The oldest queued item (the caller checked that one is queued)."""
        slot = self.slot
        if slot is not None:
            self.slot = None
        else:
            assert self.inbox is not None
            slot = self.inbox.popleft()
        self.queued -= 1
        return slot

    def holds(self, ticket: Ticket) -> bool:
        """Whether *ticket*'s message is still queued here."""
        slot = self.slot
        if slot is not None and slot[1] is ticket:
            return True
        return self.inbox is not None and any(item[1] is ticket for item in self.inbox)

    def settle_queued(self) -> None:
        """Settle as undelivered everything still in the inbox and close it: after a
        cancellation its publishers then raise instead of waiting forever."""
        self.closed = True
        while self.queued:
            self.take()[1].settle(False)
        self.inbox = None


def agent_name(agent: AgentBase | None) -> str:
    """How errors and reprs name *agent* (``None``: the hub itself, publishing)."""
    if agent is None:
        return "the hub"
    return repr(getattr(agent, "name", type(agent).__name__))
