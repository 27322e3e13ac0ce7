"""Broadcasting an agent's replies to the agents that listen to it.

An agent answers a call (``await agent(...)``) and then broadcasts the reply. Two kinds of
listeners receive it:

* **hub links** — a message hub (``agentscope_rt.pipeline.MsgHub``) attaches a
  :class:`HubLink` to every participant with ``agent._attach_hub(key, link)`` and removes it
  with ``agent._detach_hub(key)``. On broadcast the agent asks the link for the current
  recipients and hands the message to :meth:`HubLink.deliver`, which must return only once
  every recipient has finished observing it (the hub may deliver in parallel, through
  inboxes, with backpressure — that is the hub's business). When a link is an agent's only
  listener, broadcasting awaits :meth:`HubLink.publish` instead, which delivers to every
  current member except the sender with the same guarantee, without building and filtering
  a recipient list (the hub already knows its members);
* **plain subscribers** — AgentScope's interface, ``reset_subscribers(hub_name, agents)`` /
  ``remove_subscribers(hub_name)``; each subscriber's ``observe`` is awaited in turn.

Guarantees of :func:`broadcast` (and so of ``AgentBase.__call__``):

* when it returns, every listener has finished observing the message;
* the sender never observes its own message, and an agent reachable through several links or
  subscriber lists observes it exactly once (the first link, in attachment order, that lists
  it delivers it; then plain subscribers);
* thinking blocks are private reasoning and are never broadcast: listeners receive a copy
  without them (built only when there are thinking blocks to strip);
* nothing happens for ``None``.

An exception raised by a link or an observer propagates out of the broadcast (and so out of
``await agent(...)``); listeners later in the order are then not reached.

Waiting for a busy agent. ``await agent(...)`` on an agent that is already replying waits in
line for its call lock through :func:`wait_for_lock`. A message hub watches these waits (see
:func:`set_lock_wait_watcher`): an observer that calls the agent whose reply it is observing
would otherwise wait forever, since that reply's call holds the lock until every observer has
finished. The agent layer knows nothing of hubs; the watcher decides, and raises instead of
letting such a wait begin.
"""

from __future__ import annotations

from collections.abc import Awaitable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..message import ContentBlock, Msg, ThinkingBlock

if TYPE_CHECKING:
    from ._agent_base import AgentBase

__all__ = [
    "HubLink",
    "LockWaitWatcher",
    "broadcast",
    "set_lock_wait_watcher",
    "strip_thinking_blocks",
    "wait_for_lock",
]


@runtime_checkable
class HubLink(Protocol):
    """What a message hub gives each participant so that its replies reach the others."""

    def recipients(self, sender: AgentBase) -> Sequence[AgentBase]:
        """The hub's current members except *sender*, in the hub's order."""
        ...

    async def deliver(self, sender: AgentBase, msg: Msg, recipients: Sequence[AgentBase]) -> None:
        """Deliver *msg* from *sender* to *recipients*; return once every one of them has
        finished observing it."""
        ...

    def publish(self, sender: AgentBase, msg: Msg) -> Awaitable[None]:
        """An awaitable delivering *msg* from *sender* to every current member except
        *sender*, done once every one of them has finished observing it (what
        ``deliver(sender, msg, recipients(sender))`` does; a hub may hand back its own
        coroutine, one frame less per reply)."""
        ...


def _strip_one(msg: Msg) -> Msg:
    content = msg.content
    if isinstance(content, str) or not any(block.__class__ is ThinkingBlock for block in content):
        return msg
    stripped = msg.copy()
    copied: list[ContentBlock] = stripped.content  # type: ignore[assignment]
    stripped.content = [block for block in copied if block.__class__ is not ThinkingBlock]
    return stripped


def strip_thinking_blocks(msg: Msg | list[Msg]) -> Msg | list[Msg]:
    """*msg* without thinking blocks: the same object when it has none, else a copy (same id)
    without them. For a list, each message is treated so."""
    if isinstance(msg, list):
        return [_strip_one(m) for m in msg]
    return _strip_one(msg)


def broadcast(
    sender: AgentBase,
    msg: Msg | list[Msg] | None,
    hub_links: Collection[HubLink],
    subscribers: Mapping[str, Sequence[AgentBase]],
) -> Awaitable[None]:
    """Deliver *msg* from *sender* to every listener exactly once (see the module docstring);
    await the result.

    A list of messages is delivered as one item through plain subscribers (as AgentScope
    does) and message by message through hub links.
    """
    if msg.__class__ is Msg and len(hub_links) == 1 and not subscribers:
        # The usual case inside one hub: nobody to deduplicate against, and the hub's own
        # publishing awaitable is handed back as it is.
        return next(iter(hub_links)).publish(sender, _strip_one(msg))
    return _broadcast(sender, msg, tuple(hub_links), subscribers)


async def _broadcast(
    sender: AgentBase,
    msg: Msg | list[Msg] | None,
    links: tuple[HubLink, ...],
    subscribers: Mapping[str, Sequence[AgentBase]],
) -> None:
    if msg is None:
        return
    shared = strip_thinking_blocks(msg)
    seen = {id(sender)}
    for link in links:
        recipients = [agent for agent in link.recipients(sender) if id(agent) not in seen]
        if not recipients:
            continue
        seen.update(id(agent) for agent in recipients)
        if isinstance(shared, list):
            for item in shared:
                await link.deliver(sender, item, recipients)
        else:
            await link.deliver(sender, shared, recipients)
    for agents in tuple(subscribers.values()):
        for agent in tuple(agents):
            if id(agent) in seen:
                continue
            seen.add(id(agent))
            await agent.observe(shared)


class _Lock(Protocol):
    """An agent's call lock, as :func:`wait_for_lock` uses it."""

    async def acquire(self) -> None: ...


class LockWaitWatcher(Protocol):
    """Told about every wait for a busy agent's call lock (a message hub installs one)."""

    def begin(self, agent: AgentBase) -> Any:
        """The current task is about to wait for *agent*'s call lock; return a token for
        :meth:`end`.

        :raises Exception: when the wait could never end (it is then not begun).
        """
        ...

    def end(self, token: Any) -> None:
        """The wait *token* stands for has ended (lock taken, or the waiter cancelled)."""
        ...


_watcher: LockWaitWatcher | None = None


def set_lock_wait_watcher(watcher: LockWaitWatcher | None) -> None:
    """Install *watcher* (one per process; ``None`` removes it) for :func:`wait_for_lock`."""
    global _watcher
    _watcher = watcher


async def wait_for_lock(agent: AgentBase, lock: _Lock) -> None:
    """Wait in line for *agent*'s busy call lock, telling the installed watcher first.

    :raises Exception: whatever the watcher raises when the wait could never end (the lock is
        then not waited for).
    """
    watcher = _watcher
    if watcher is None:
        await lock.acquire()
        return
    token = watcher.begin(agent)
    try:
        await lock.acquire()
    finally:
        watcher.end(token)
