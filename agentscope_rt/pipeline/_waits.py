"""Waits that can never end, refused: a message hub's wait-cycle checks.

Calls on one agent run one at a time and hold the agent until their reply is observed, so an
observer that calls the agent whose reply it observes, or observers in two tasks each calling
an agent whose reply waits for the other, form a cycle of waits: an observer waits for an
agent's call lock, the call holding it waits for its reply to be observed, and that needs the
very observer. Every wait the hub knows of is registered while it lasts (these are all slow
paths: a publisher whose recipients are not done, a publisher facing a full inbox, a call
waiting for a busy agent, the last through :class:`LockWatcher`); when one would begin, the
waits it depends on are followed and, if they lead back to a frame of the waiting task, the
wait is refused with :class:`MsgHubError` naming the agents on the cycle instead of hanging.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..exception import MsgHubError
from ._tickets import CHAIN, DeliveryFrame, Frame, Subscriber, Ticket, active_chain, agent_name

if TYPE_CHECKING:
    from ..agent import AgentBase
    from ._msghub import MsgHub

__all__ = ["LOCK", "ROOM", "TICKET", "LockWatcher", "Wait", "wait_for_ticket"]

LOCK, TICKET, ROOM = 0, 1, 2


class Wait:
    """A wait in progress: of the task whose innermost frame is *chain*, for an agent's call
    lock (``LOCK``, target an agent), for a message's recipients (``TICKET``, target the
    ticket) or for room in a full inbox (``ROOM``, target the subscriber)."""

    __slots__ = ("chain", "kind", "target")

    def __init__(self, chain: Frame, kind: int, target: Any) -> None:
        self.chain = chain
        self.kind = kind
        self.target = target

    def begin(self) -> None:
        """Register the wait (``with wait:`` registers it for the block's duration).

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

    def __enter__(self) -> None:
        self.begin()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.end()


# Waits in progress, in every hub and every thread (frames of different event loops never
# meet, so their waits never form a cycle); a dict for its ordered, atomic snapshot.
_WAITS: dict[Wait, None] = {}


def _observer_of(frame: Frame) -> Subscriber | None:
    """The subscriber whose observe *frame* is running, if any."""
    if isinstance(frame, Ticket):
        candidates: Sequence[Subscriber] = frame.targets
    elif isinstance(frame, DeliveryFrame):
        helping = frame.helping
        candidates = [frame.sub, *(helping.targets if helping is not None else ())]
    else:
        return None
    for sub in candidates:
        if sub.busy is frame:
            return sub
    return None


def _frames(chain: Frame | None) -> Iterator[Frame]:
    """The frames of *chain* that are not done, innermost first."""
    while chain is not None:
        if not chain.done:
            yield chain
        chain = chain.parent


def _needs(wait: Wait) -> Iterator[tuple[Any, bool, str]]:
    """What *wait* waits for, as ``(x, by_sender, name)``: a frame that must finish (or, when
    *by_sender*, an agent whose call must finish) and the agent that stands for it."""
    target = wait.target
    if wait.kind == LOCK:
        yield target, True, agent_name(target)
        return
    if wait.kind == ROOM:
        yield target.busy or target.frame, False, agent_name(target.agent)
        return
    for sub in target.targets:
        name = agent_name(sub.agent)
        if sub.busy and sub.current is target:
            yield sub.busy, False, name
        for frame, observed in sub.nested or ():
            if observed is target:
                # An observe of it that has been re-entered: it ends after the inner one.
                yield frame, False, name
        if sub.holds(target):
            yield sub.busy or sub.frame, False, name


def _blocks(chain: Frame, x: Any, by_sender: bool) -> Frame | None:
    """The frame of *chain* that is (or runs the call of) *x*, if any."""
    for frame in _frames(chain):
        if (frame.sender is x) if by_sender else (frame is x):
            return frame
    return None


def _find_cycle(start: Wait) -> tuple[str, list[str]] | None:
    """If *start* would close a cycle of waits: the hub to name and the agents on it."""
    waits = list(_WAITS)
    visited: set[int] = set()
    pending: list[tuple[Wait, list[str]]] = [(start, [])]
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


def _describe(start: Wait, closing: Frame, step: list[str]) -> tuple[str, list[str]]:
    # The cycle starts (and ends) with the waiting task's innermost observer, or with the
    # agent whose message it publishes.
    first: str | None = None
    for frame in _frames(start.chain):
        sub = _observer_of(frame)
        if sub is not None:
            first = agent_name(sub.agent)
            break
        if frame.sender is not None:
            first = agent_name(frame.sender)
            break
    names = step if first is None else [first, *step]
    if names[-1] != names[0]:
        names.append(names[0])
    return _hub_of(closing).name, names


def _hub_of(frame: Frame) -> MsgHub:
    if isinstance(frame, DeliveryFrame):
        return frame.hub
    assert isinstance(frame, Ticket) and frame.targets  # a frame drains its targets' inboxes
    return frame.targets[0].hub


async def wait_for_ticket(ticket: Ticket) -> None:
    """Wait until every recipient has finished observing *ticket*'s message.

    :raises MsgHubError: when a recipient waits for this publisher (a wait cycle).
    """
    with Wait(ticket, TICKET, ticket):
        await ticket.wait()


class LockWatcher:
    """Refuses a call's wait for a busy agent when it closes a cycle of waits."""

    def begin(self, agent: AgentBase) -> Wait | None:
        chain = active_chain(CHAIN.get())
        if chain is None:
            return None  # not under any observer: nothing of the hub waits for this task
        wait = Wait(chain, LOCK, agent)
        wait.begin()
        return wait

    def end(self, token: Wait | None) -> None:
        if token is not None:
            token.end()
