"""AgentBase: a stateful agent whose every reply runs in a cancel scope it owns.

Concurrency promises (each pinned by a test on asyncio and trio):

* ``await agent(...)`` runs ``reply()`` inside a fresh :class:`anyio.CancelScope` owned by
  that call. :meth:`AgentBase.interrupt` cancels exactly that scope — from another task, a
  hook, a tool or another thread — and the call answers with :meth:`~AgentBase.handle_interrupt`
  (:attr:`AgentBase.generate_reason` is then ``"interrupted"``), also when the interrupt comes
  after the reply's last checkpoint (a ``post_reply`` hook, a hook of the final print).
* A cancellation from outside (an enclosing ``fail_after``, a cancelled task group, Ctrl+C) is
  not an interrupt: it propagates and ``handle_interrupt`` is not called, even when it lands
  together with an interrupt.
* Calls on one agent are serialised in arrival order (a fair lock); ``observe`` is not, so an
  agent can hear messages while it replies.
* When ``await agent(...)`` returns, the reply (or the interrupt reply) has been observed by
  every subscriber (see :mod:`._subscription`).
"""

from __future__ import annotations

import abc
import logging
import threading
import weakref
from collections.abc import Callable, Generator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectSendStream

from .. import _intercept
from .._backend import ReplyScope, reply_scope
from .._ids import new_id
from .._locks import FairLock
from ..message import AudioBlock, Msg
from ..message.serde import structure_block
from ..module import StateModule
from ._checks import OBSERVE_INPUT, PRINT_INPUT, check_msg_input
from ._console import ConsolePrinter, console_disabled_globally
from ._generate_reason import GenerateReason
from ._hooks import (
    HookEntry,
    InstanceHooks,
    add_class_hook,
    check_hook,
    check_hook_type,
    copy_hook_value,
    instance_hooks,
    missing_init,
    own_class_hooks,
    remove_class_hooks,
)
from ._subscription import HubLink, broadcast, wait_for_lock

__all__ = ["AgentBase", "PrintedChunk", "Speech", "check_msg_input"]

logger = logging.getLogger("agentscope_rt.agent")

_INTERRUPTED = GenerateReason.INTERRUPTED
_NOTHING: Mapping[str, Any] = MappingProxyType({})

Speech = AudioBlock | list[AudioBlock]
"""What ``print(msg, last, speech=...)`` accepts besides ``None``: audio played or forwarded
with the message, as in AgentScope (dict blocks such as ``{"type": "audio", "source": ...}``
are accepted too and turned into :class:`AudioBlock`)."""

PrintedChunk = tuple[Msg, bool, Speech | None]
"""What :meth:`AgentBase.print` sends to the message queue: ``(msg_copy, last, speech)``, as
AgentScope puts on its queue."""


def _speech_copy(speech: Any) -> Speech:
    """A copy of checked *speech* for the message queue: blocks copied, dicts turned into
    :class:`AudioBlock`, a single block kept single and a sequence made a list."""
    if isinstance(speech, list | tuple):
        return [_audio_copy(block) for block in speech]
    return _audio_copy(speech)


def _audio_copy(block: Any) -> AudioBlock:
    if isinstance(block, dict):
        converted = structure_block(block, path="speech")
        assert isinstance(converted, AudioBlock)
        return converted
    copied: AudioBlock = copy_hook_value(block)
    return copied


class _InterruptRequested:
    """What :meth:`AgentBase.interrupt` returns: awaiting it is optional and immediate
    (AgentScope's ``interrupt`` is a coroutine, so ``await agent.interrupt()`` keeps working)."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        yield from ()


_INTERRUPT_REQUESTED = _InterruptRequested()

# (loop, its anyio token, its thread) of the last loop an agent call saw first: every agent
# on that loop shares the token and the thread id instead of holding its own (a million
# agents held a million of each). The loop is held weakly: it may have ended.
_last_loop: tuple[weakref.ref[object], Any, int] | None = None


def _token_and_thread(loop: object | None, thread: int) -> tuple[Any, int]:
    """The anyio token of the running loop (identified by *loop*, see
    :func:`~agentscope_rt._backend.reply_scope`) and *thread*, the id of the thread it runs
    in (the one held with the token, when it is the same)."""
    global _last_loop
    last = _last_loop
    if loop is not None and last is not None and last[0]() is loop and last[2] == thread:
        return last[1], last[2]
    token = anyio.lowlevel.current_token()
    if loop is not None:
        _last_loop = (weakref.ref(loop), token, thread)
    return token, thread


class _ReplyCall:
    """The state of the call in progress: its id, its cancel scope, and where it runs.

    ``loop``, ``loop_token`` and ``thread_id`` remember the last event loop a call ran on,
    its anyio token and its thread, so that a call on the same loop does not fetch them
    again. ``reason`` is why
    the call ended (reset when a call starts); ``interrupt`` is ``(reply_id, msg)`` from the
    last :meth:`AgentBase.interrupt` that reached a call — keyed by the call's id rather than
    reset per call, so that calls that are never interrupted pay nothing for it.
    """

    __slots__ = (
        "interrupt",
        "loop",
        "loop_token",
        "reason",
        "reply_id",
        "scope",
        "thread_id",
        "token",
    )

    def __init__(self) -> None:
        self.reply_id: str | None = None
        self.scope: ReplyScope | None = None
        self.thread_id: int | None = None
        self.token: Any = None
        self.loop: object | None = None
        self.loop_token: Any = None
        self.reason: GenerateReason | None = None
        self.interrupt: tuple[str | None, Msg | list[Msg] | None] | None = None


class AgentBase(StateModule, _intercept.Routed, abc.ABC):
    """Base class of agents.

    Subclasses implement ``async reply(...) -> Msg`` and ``async observe(msg) -> None``, and
    may override ``async handle_interrupt(...) -> Msg``; they call ``super().__init__()``
    first. Callers use ``await agent(...)``, which adds hooks, interruption, serialisation of
    concurrent calls and broadcasting to subscribers around ``reply``.

    Hook types: ``pre_reply``, ``post_reply``, ``pre_print``, ``post_print``,
    ``pre_observe``, ``post_observe``. A pre hook is ``hook(self, kwargs) -> dict | None`` (a
    returned dict replaces the arguments); a post hook is ``hook(self, kwargs, output) ->
    output | None`` (a returned value replaces the output). Hooks may be coroutine functions.
    They receive copies of the arguments and output. Instance hooks run first, in
    registration order, then class hooks, in registration order.

    :raises TypeError: at class creation, if a hooked method (``reply``, ``observe``,
        ``print``) is not a coroutine function.
    """

    supported_hook_types: ClassVar[tuple[str, ...]] = (
        "pre_reply",
        "post_reply",
        "pre_print",
        "post_print",
        "pre_observe",
        "post_observe",
    )
    """The hook types agents of this class accept."""

    replay_from_record: ClassVar[bool] = False
    """Whether a resumed durable run (:mod:`agentscope_rt.durable`) returns this agent's
    recorded reply instead of running ``reply()`` again. False: the reply runs again, its
    model and tool calls answered from the run's records, which rebuilds the agent's state.
    True for agents whose reply reads the outside world directly (a user, a remote agent):
    asking again would not give the recorded answer."""

    id: str
    """A unique id of the agent (32 random hex digits, like a uuid4 hex string)."""

    msg_queue: MemoryObjectSendStream[PrintedChunk] | None
    """Where printed messages are sent, as ``(msg_copy, last, speech)``, when the message queue
    is enabled."""

    def __init__(self) -> None:
        super().__init__()
        self.id = new_id()
        # Per hook type, created on first registration: most agents never get one. Until then
        # the shared empty mapping (an empty dict per agent adds up over many agents).
        self._instance_hooks: Mapping[str, dict[str, HookEntry]] = _NOTHING
        self._reply_lock = FairLock()
        self._call = _ReplyCall()
        self._console = ConsolePrinter()
        self.msg_queue = None
        # Shared empty mappings until a hub attaches: most agents of a large simulation are
        # in one hub at most, and two empty dicts per agent add up.
        self._hub_links: Mapping[str, HubLink] = _NOTHING
        self._subscribers: Mapping[str, list[AgentBase]] = _NOTHING

    # -- the methods subclasses write ---------------------------------------------------

    @abc.abstractmethod
    async def reply(self, *args: Any, **kwargs: Any) -> Msg:
        """Produce the agent's answer to a call. Called by ``await agent(...)``."""

    @abc.abstractmethod
    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        """Receive message(s) without replying (e.g. what other agents say in a hub).

        :raises TypeError: when *msg* is not a Msg, a list of Msg or None (checked before
            the method runs).
        """

    async def handle_interrupt(self, *args: Any, **kwargs: Any) -> Msg:
        """The answer when a reply is interrupted; receives the interrupted call's own
        arguments, as in AgentScope (the message given to :meth:`interrupt`, if any, is
        :attr:`interrupt_msg`).

        The default says that the reply was interrupted, with ``metadata`` ``{"_is_interrupted":
        True}``, as AgentScope's agents do.
        """
        return Msg(
            getattr(self, "name", type(self).__name__),
            "I noticed that you have interrupted me. What can I do for you?",
            "assistant",
            metadata={"_is_interrupted": True},
        )

    # -- calling ---------------------------------------------------------------------

    @property
    def reply_id(self) -> str | None:
        """The id of the current (or last) call; the reply's ``invocation_id``."""
        return self._call.reply_id

    @property
    def _reply_id(self) -> str | None:
        """AgentScope's name for :attr:`reply_id`."""
        return self._call.reply_id

    async def __call__(self, *args: Any, **kwargs: Any) -> Msg:
        """Reply to a call: pre_reply hooks, ``reply()``, post_reply hooks, broadcast.

        The reply runs in a cancel scope owned by this call; :meth:`interrupt` cancels it and
        the answer is then :meth:`handle_interrupt`'s Msg (post_reply hooks do not run on it).
        That holds for any interrupt requested before the reply returns, also one from a
        ``post_reply`` hook or a hook of the final print, after which nothing is left to
        cancel: the reply ``reply()`` made is then dropped.
        Concurrent calls on one agent run one at a time, in arrival order. The returned Msg's
        ``invocation_id`` is this call's reply id. When this returns, every subscriber has
        observed the reply (thinking blocks stripped).

        :raises Exception: whatever ``reply`` or a hook raises (the reply is then not
            broadcast); a cancellation from outside the call propagates unchanged.
        """
        try:
            lock = self._reply_lock
        except AttributeError:
            raise missing_init(self) from None
        if not lock.try_acquire():
            # Wait in line (a checkpoint, cancellable); a free lock is taken with no await. A
            # hub refuses the wait when it could never end (an observer calling the speaker).
            await wait_for_lock(self, lock)
        try:
            call = self._call
            reply_id = new_id()
            scope, loop = reply_scope()
            thread = threading.get_ident()
            if loop is None or loop is not call.loop or thread != call.thread_id:
                call.loop_token, call.thread_id = _token_and_thread(loop, thread)
                call.loop = loop
            call.reply_id = reply_id
            call.reason = None
            call.token = call.loop_token
            call.scope = scope
            reply_msg: Any = None
            try:
                with scope:
                    reply_msg = await self.reply(*args, **kwargs)
            finally:
                call.scope = None
                call.token = None
                if self._console.open_messages:
                    self._console.close_all(
                        self._console.enabled and not console_disabled_globally()
                    )
            # cancel_called, not cancelled_caught: an interrupt requested after the reply's
            # last checkpoint (by a post_reply hook, a hook of the final print or step, the
            # reply itself just before returning) is never raised inside the scope, and it
            # must end the call all the same. interrupt() records itself before cancelling,
            # so an agent never interrupted skips the property (a Python call on trio).
            if call.interrupt is not None and scope.cancel_called:
                # An outer cancellation that landed together with the interrupt wins.
                await anyio.lowlevel.checkpoint_if_cancelled()
                reply_msg = await self.handle_interrupt(*args, **kwargs)
                if reply_msg.__class__ is not Msg and not isinstance(reply_msg, Msg):
                    raise TypeError(
                        f"{type(self).__name__}.handle_interrupt must return a Msg, "
                        f"not {type(reply_msg).__name__}"
                    )
                call.reason = _INTERRUPTED
            if reply_msg.__class__ is Msg or isinstance(reply_msg, Msg):
                reply_msg.invocation_id = reply_id
            if (self._hub_links or self._subscribers) and isinstance(reply_msg, (Msg, list)):
                await broadcast(self, reply_msg, self._hub_links.values(), self._subscribers)
            return reply_msg
        finally:
            lock.release()

    def interrupt(self, msg: Msg | list[Msg] | None = None) -> _InterruptRequested:
        """Interrupt the reply in progress (a no-op when the agent is idle).

        Takes effect at once and may be called from any task (including a hook or a tool of
        this very reply) or from another thread. The interrupted ``await agent(...)`` returns
        :meth:`handle_interrupt`'s Msg. Returns an object that may be awaited, so AgentScope's
        ``await agent.interrupt()`` works too.

        :param msg: a message saying why, as AgentScope accepts. As there (where it only
            becomes the message of the reply task's ``CancelledError``), it is not passed to
            :meth:`handle_interrupt`, which receives the interrupted call's own arguments; it
            is kept as :attr:`interrupt_msg` for ``handle_interrupt`` or the caller to read.
        :raises TypeError: when *msg* is not a Msg, a list of Msg or None (nothing is
            interrupted then).
        """
        if msg is not None and msg.__class__ is not Msg:
            check_msg_input(msg, f"{type(self).__name__}.interrupt")
        call = self._call
        # The token is read before the scope (the call sets them in the opposite order and
        # clears them in this one), so another thread never pairs a live scope with no token.
        token = call.token
        scope = call.scope
        if scope is not None and token is not None:
            call.interrupt = (call.reply_id, msg)
            if threading.get_ident() == call.thread_id:
                scope.cancel()
            else:
                anyio.from_thread.run_sync(scope.cancel, token=token)
        return _INTERRUPT_REQUESTED

    @property
    def is_replying(self) -> bool:
        """Whether a reply is in progress."""
        return self._call.scope is not None

    @property
    def generate_reason(self) -> GenerateReason | None:
        """Why the agent's current or latest call ended: ``"interrupted"`` when it was
        interrupted; otherwise what the agent recorded (a :class:`ReActAgent` records
        ``"model_stop"``, ``"max_iterations"`` and the stop reasons), or ``None``.

        Reset when a call starts, so read it after ``await agent(...)`` returns (or in a
        ``post_reply`` hook), before calling the agent again. It is kept on the agent, not in
        the reply's ``metadata``, so replies carry exactly the metadata AgentScope's do.
        """
        return self._call.reason

    @property
    def interrupt_msg(self) -> Msg | list[Msg] | None:
        """The message given to :meth:`interrupt` during the current or latest call (the
        last one, if several), or ``None``; readable in :meth:`handle_interrupt`."""
        call = self._call
        pending = call.interrupt
        if pending is None or pending[0] != call.reply_id:
            return None
        return pending[1]

    # -- printing --------------------------------------------------------------------

    async def print(self, msg: Msg, last: bool = True, speech: Speech | None = None) -> None:
        """Show *msg*: send ``(msg_copy, last, speech)`` to the message queue (when enabled)
        and print *msg* to the console (unless disabled for this agent or globally).

        Chunks of one streamed message share ``msg.id`` and are cumulative; the console shows
        only what is new in each chunk, and the chunk with ``last=True`` ends the message.

        :param last: whether this is the final chunk (always true for a whole message).
        :param speech: audio to go with the message (an :class:`AudioBlock` or a list of
            them, e.g. what a speech model made of the text), forwarded on the message queue
            (a copy) and seen by print hooks, as in AgentScope. The console does not play it.
        :raises TypeError: when *msg* is not a Msg, or *speech* not audio blocks or None.
        """
        queue = self.msg_queue
        if queue is not None:
            try:
                await queue.send(
                    (msg.copy(), last, None if speech is None else _speech_copy(speech))
                )
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                # The reader is gone; printing must not break the reply.
                self.msg_queue = None
                logger.warning(
                    "%s: the message queue was closed; printed messages are no longer sent to it",
                    getattr(self, "name", type(self).__name__),
                )
        console = self._console
        if console.enabled and not console_disabled_globally():
            console.write(msg, last)

    def set_console_output_enabled(self, enabled: bool) -> None:
        """Enable or disable this agent's console output.

        The environment variable ``AGENTSCOPE_RT_DISABLE_CONSOLE_OUTPUT=true`` — or, when that
        one is unset, AgentScope's ``AGENTSCOPE_DISABLE_CONSOLE_OUTPUT=true`` — disables it for
        every agent regardless (see :func:`console_disabled_globally`).
        """
        self._console.enabled = bool(enabled)

    def disable_console_output(self) -> None:
        """Disable console output (AgentScope's older spelling of
        ``set_console_output_enabled(False)``)."""
        self._console.enabled = False

    def set_msg_queue_enabled(
        self,
        enabled: bool,
        queue: MemoryObjectSendStream[PrintedChunk] | None = None,
    ) -> None:
        """Send every printed chunk, as ``(msg_copy, last, speech)``, to *queue*; or stop doing
        so.

        A bounded stream applies backpressure: ``print`` waits for room. When the receiving
        end is closed, sending stops (with a warning) and the agent carries on.

        :param queue: the send end of an anyio memory object stream; required when enabling
            unless one is already set.
        :raises ValueError: when enabling without a stream.
        :raises TypeError: when *queue* is not a memory object send stream.
        """
        if not enabled:
            self.msg_queue = None
            return
        if queue is None:
            if self.msg_queue is None:
                raise ValueError(
                    "set_msg_queue_enabled(True, queue) needs the send end of an anyio memory "
                    "object stream, e.g. anyio.create_memory_object_stream(100)[0]"
                )
            return
        if not isinstance(queue, MemoryObjectSendStream):
            raise TypeError(
                f"queue must be an anyio MemoryObjectSendStream, not {type(queue).__name__}; "
                "an asyncio.Queue cannot be used (it does not work under trio): pass the send "
                "end of anyio.create_memory_object_stream(100)"
            )
        self.msg_queue = queue

    # -- subscribers -----------------------------------------------------------------

    def _attach_hub(self, key: str, link: HubLink) -> None:
        """Broadcast this agent's replies through *link* until :meth:`_detach_hub` (called by
        message hubs). Re-attaching a key replaces its link in place."""
        links = self._hub_links
        if not isinstance(links, dict):
            links = self._hub_links = {}
        links[key] = link

    def _detach_hub(self, key: str) -> None:
        """Stop broadcasting through the link attached as *key* (no-op when absent)."""
        links = self._hub_links
        if isinstance(links, dict):
            links.pop(key, None)

    def reset_subscribers(self, msghub_name: str, subscribers: Sequence[AgentBase]) -> None:
        """Set the agents that observe this agent's replies for hub *msghub_name* (this agent
        itself is left out).

        :raises TypeError: when an item is not an agent.
        """
        for index, agent in enumerate(subscribers):
            if not isinstance(agent, AgentBase):
                raise TypeError(
                    f"subscribers[{index}] must be an AgentBase, not {type(agent).__name__}"
                )
        table = self._subscribers
        if not isinstance(table, dict):
            table = self._subscribers = {}
        table[msghub_name] = [agent for agent in subscribers if agent is not self]

    def remove_subscribers(self, msghub_name: str) -> None:
        """Forget the subscribers set for hub *msghub_name* (a warning when there are none)."""
        table = self._subscribers
        if not isinstance(table, dict) or table.pop(msghub_name, None) is None:
            logger.warning("MsgHub named %r not found among the subscribers", msghub_name)

    async def _broadcast_to_subscribers(self, msg: Msg | list[Msg] | None) -> None:
        """Deliver *msg* to every hub link and subscriber once (thinking stripped)."""
        await broadcast(self, msg, self._hub_links.values(), self._subscribers)

    # -- hooks -------------------------------------------------------------------------

    def register_instance_hook(
        self, hook_type: str, hook_name: str, hook: Callable[..., Any]
    ) -> None:
        """Register *hook* on this agent only; a hook of the same type and name is replaced
        (keeping its place in the order).

        :raises ValueError: for an unknown hook type.
        :raises TypeError: for a non-callable hook or a non-str name.
        :raises AgentError: when the agent's ``__init__`` did not call ``super().__init__()``.
        """
        is_async = check_hook(
            type(self).__name__, type(self).supported_hook_types, hook_type, hook_name, hook
        )
        registry = instance_hooks(self)
        if not isinstance(registry, InstanceHooks):
            registry = self._instance_hooks = InstanceHooks()
        registry.add(hook_type, hook_name, (hook_name, hook, is_async))

    def remove_instance_hook(self, hook_type: str, hook_name: str) -> None:
        """Remove this agent's hook *hook_name* of *hook_type*.

        :raises ValueError: for an unknown hook type or when no such hook is registered.
        """
        check_hook_type(type(self).__name__, type(self).supported_hook_types, hook_type)
        registry = instance_hooks(self)
        hooks = registry.get(hook_type, {})
        if hook_name not in hooks:
            raise ValueError(
                f"no {hook_type!r} instance hook named {hook_name!r} on this "
                f"{type(self).__name__}; registered: {sorted(hooks) or 'none'}"
            )
        assert isinstance(registry, InstanceHooks)  # it holds a hook, so it was made
        registry.remove(hook_type, hook_name)

    def clear_instance_hooks(self, hook_type: str | None = None) -> None:
        """Remove this agent's hooks of *hook_type*, or all of them.

        :raises ValueError: for an unknown hook type.
        """
        if hook_type is not None:
            check_hook_type(type(self).__name__, type(self).supported_hook_types, hook_type)
        registry = instance_hooks(self)
        if isinstance(registry, InstanceHooks):
            registry.drop(hook_type)

    @classmethod
    def register_class_hook(cls, hook_type: str, hook_name: str, hook: Callable[..., Any]) -> None:
        """Register *hook* for every instance of this class and its subclasses (never for
        base or sibling classes). A hook of the same type and name on this class is replaced
        (keeping its place in the order).

        :raises ValueError: for an unknown hook type.
        :raises TypeError: for a non-callable hook or a non-str name.
        """
        is_async = check_hook(cls.__name__, cls.supported_hook_types, hook_type, hook_name, hook)
        add_class_hook(cls, hook_type, hook_name, hook, is_async)

    @classmethod
    def remove_class_hook(cls, hook_type: str, hook_name: str) -> None:
        """Remove the hook *hook_name* of *hook_type* registered on this very class.

        :raises ValueError: for an unknown hook type or when this class has no such hook
            (the message names the class that has it, if a base class does).
        """
        check_hook_type(cls.__name__, cls.supported_hook_types, hook_type)
        if hook_name not in own_class_hooks(cls, hook_type):
            owners = [
                klass.__name__
                for klass in cls.__mro__[1:]
                if hook_name in own_class_hooks(klass, hook_type)
            ]
            hint = f"; it is registered on {owners[0]}" if owners else ""
            raise ValueError(
                f"no {hook_type!r} class hook named {hook_name!r} registered on "
                f"{cls.__name__}{hint}"
            )
        remove_class_hooks(cls, hook_type, (hook_name,))

    @classmethod
    def clear_class_hooks(cls, hook_type: str | None = None) -> None:
        """Remove the class hooks of *hook_type* (or all) registered on this very class;
        hooks registered on base classes or subclasses stay.

        :raises ValueError: for an unknown hook type.
        """
        if hook_type is not None:
            check_hook_type(cls.__name__, cls.supported_hook_types, hook_type)
        remove_class_hooks(cls, hook_type, None)


# Every call of these goes through its route (see agentscope_rt._intercept): hooks of their
# kind and tracing's agent spans run around them while registered.
_intercept.declare(AgentBase, "__call__", "call")
_intercept.declare(AgentBase, "reply", "reply")
_intercept.declare(AgentBase, "observe", "observe", precondition=OBSERVE_INPUT)
_intercept.declare(AgentBase, "print", "print", precondition=PRINT_INPUT)
