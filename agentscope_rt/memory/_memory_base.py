"""The short-term memory interface: :class:`MemoryBase` and the built-in :class:`MemoryMark`s."""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from .._json import MAX_TOOL_INPUT_DEPTH, flat_json_object, json_problem, tool_input_problem
from ..exception import MessageFormatError
from ..message import Msg, ToolUseBlock
from ..module import StateModule

__all__ = ["MemoryBase", "MemoryMark"]


class MemoryMark(enum.StrEnum):
    """The marks the agents of this package put on messages in memory.

    Marks are plain strings; these members compare and hash equal to their values, so
    ``MemoryMark.HINT == "hint"`` and either form may be passed wherever a mark is expected.
    """

    HINT = "hint"
    """A hint message for the next reasoning step, deleted once it has been formatted."""

    COMPRESSED = "compressed"
    """A message already folded into the compressed summary; kept, but no longer sent."""


class MemoryBase(StateModule, ABC):
    """Base class of short-term memories: an ordered store of messages, each with marks.

    Marks are strings (see :class:`MemoryMark`) used to select or drop groups of messages,
    e.g. hints that live for one reasoning step or messages folded into the compressed summary.
    The compressed summary (``_compressed_summary``) is part of the state; when set,
    :meth:`get_memory` returns it first as a user message.

    Subclasses implement :meth:`add`, :meth:`delete`, :meth:`get_memory`, :meth:`size` and
    :meth:`clear`; :meth:`update_messages_mark` too for memory compression (as in AgentScope,
    where it is optional).
    """

    _compressed_summary: str

    add_may_wait: ClassVar[bool] = True
    """Whether :meth:`add` may suspend (wait on I/O, a lock, a thread). Agents record the
    messages of a reasoning or acting step in a shielded cancel scope when it may, so that an
    interrupt cannot cut a step's record short; a memory whose ``add`` never awaits anything
    (:class:`InMemoryMemory`) says ``False`` and saves that scope on every record. A subclass
    of such a memory that overrides ``add`` is set back to ``True`` automatically unless it
    declares ``add_may_wait`` itself."""

    synchronous: ClassVar[bool] = False
    """Whether this memory also offers its ``add``, ``get_memory`` and ``delete_by_mark`` as
    plain functions, ``add_sync(memories, marks=None, allow_duplicates=False, *, copy=True,
    check=True)``,
    ``get_memory_sync(mark=None, exclude_mark=None, prepend_summary=True, *,
    read_only=False)`` and ``delete_by_mark_sync(mark)``, which do exactly what the coroutines
    do (the coroutines call them). Agents call those on their hot path, saving a coroutine per
    call, and hand over the messages they build with ``copy=False`` (the memory may keep the
    objects themselves: the agent never changes a message after recording it) and
    ``check=False`` (the agent built them to :func:`check_storable`'s rule), and read what they
    only format into a prompt with ``read_only=True`` (shared snapshots are not copied for
    them, see :mod:`agentscope_rt.message`'s ``share``). :class:`InMemoryMemory` offers them. A
    subclass that overrides ``add``, ``get_memory`` or ``delete_by_mark`` is set back to
    ``False`` automatically unless it declares ``synchronous`` itself, so agents always see an
    override."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "add" in cls.__dict__ and "add_may_wait" not in cls.__dict__:
            cls.add_may_wait = True
        if "synchronous" not in cls.__dict__ and any(
            name in cls.__dict__ for name in ("add", "get_memory", "delete_by_mark")
        ):
            cls.synchronous = False

    def add_sync(
        self,
        memories: Msg | list[Msg] | None,
        marks: str | list[str] | None = None,
        allow_duplicates: bool = False,
        *,
        copy: bool = True,
        check: bool = True,
    ) -> None:
        """:meth:`add` as a plain function, on a :attr:`synchronous` memory.

        :raises NotImplementedError: on a memory that is not synchronous.
        """
        raise NotImplementedError(f"{type(self).__name__} is not a synchronous memory")

    def get_memory_sync(
        self,
        mark: str | None = None,
        exclude_mark: str | None = None,
        prepend_summary: bool = True,
        *,
        read_only: bool = False,
    ) -> list[Msg]:
        """:meth:`get_memory` as a plain function, on a :attr:`synchronous` memory.

        :raises NotImplementedError: on a memory that is not synchronous.
        """
        raise NotImplementedError(f"{type(self).__name__} is not a synchronous memory")

    def delete_by_mark_sync(self, mark: str | list[str]) -> int:
        """:meth:`delete_by_mark` as a plain function, on a :attr:`synchronous` memory.

        :raises NotImplementedError: on a memory that is not synchronous.
        """
        raise NotImplementedError(f"{type(self).__name__} is not a synchronous memory")

    def __init__(self) -> None:
        super().__init__()
        self._compressed_summary = ""
        self.register_state("_compressed_summary", state_type=str)

    async def update_compressed_summary(self, summary: str) -> None:
        """Replace the compressed summary (``""`` removes it).

        :raises TypeError: if *summary* is not a string.
        """
        if not isinstance(summary, str):
            raise TypeError(f"the compressed summary must be a str, not {type(summary).__name__}")
        self._compressed_summary = summary

    @abstractmethod
    async def add(
        self,
        memories: Msg | list[Msg] | None,
        marks: str | list[str] | None = None,
        allow_duplicates: bool = False,
        **kwargs: Any,
    ) -> None:
        """Store copies of *memories* (``None`` is ignored), each with *marks*.

        Every message is checked with :func:`check_storable` before any is stored, so that
        what a memory holds can always be saved; a subclass does the same.

        :param allow_duplicates: when false, a message whose id is already stored is skipped.
        :raises TypeError: for something that is not a Msg, or marks that are not strings.
        :raises MessageFormatError: for a message nesting JSON data deeper than a saved
            memory could hold (see :func:`check_storable`).
        """

    @abstractmethod
    async def delete(self, msg_ids: list[str], **kwargs: Any) -> int:
        """Remove the messages with these ids; return how many were removed."""

    async def delete_by_mark(self, mark: str | list[str], **kwargs: Any) -> int:
        """Remove every message carrying *mark* (or any of the marks); return how many.

        This default selects the messages with :meth:`get_memory` and removes them with
        :meth:`delete`; storages with an index on marks override it.

        :raises TypeError: if *mark* is not a string or a list of strings.
        """
        marks = _check_marks(mark, "mark")
        ids: list[str] = []
        for one in marks:
            ids.extend(m.id for m in await self.get_memory(mark=one, prepend_summary=False))
        return await self.delete(ids) if ids else 0

    @abstractmethod
    async def get_memory(
        self,
        mark: str | None = None,
        exclude_mark: str | None = None,
        prepend_summary: bool = True,
        **kwargs: Any,
    ) -> list[Msg]:
        """The stored messages in order: those carrying *mark* (all when ``None``), minus
        those carrying *exclude_mark*. With *prepend_summary* and a compressed summary set,
        the summary comes first as a user message.

        :raises TypeError: if *mark* or *exclude_mark* is neither a string nor ``None``.
        """

    def _summary_first(self, msgs: list[Msg], prepend_summary: bool) -> list[Msg]:
        """*msgs* as :meth:`get_memory` returns them: with *prepend_summary* and a compressed
        summary set, a user message holding the summary is inserted first (in place)."""
        if prepend_summary and self._compressed_summary:
            msgs.insert(0, Msg("user", self._compressed_summary, "user"))
        return msgs

    async def update_messages_mark(
        self,
        new_mark: str | None,
        old_mark: str | None = None,
        msg_ids: list[str] | None = None,
    ) -> int:
        """Add, replace or remove a mark on messages; return how many messages changed.

        The messages considered are those with ids in *msg_ids* (all when ``None``) that carry
        *old_mark* (any when ``None``). With *new_mark* ``None``, *old_mark* is removed from
        them; otherwise *old_mark* (if given) is replaced by *new_mark*, or *new_mark* added.

        Optional, as in AgentScope (a memory written for it need not have it): only memory
        compression calls it, and a :class:`~agentscope_rt.agent.ReActAgent` with compression
        refuses a memory without it when built.

        :raises NotImplementedError: naming the class, unless a subclass implements it.
        """
        raise NotImplementedError(
            f"The update_messages_mark method is not implemented in {type(self).__name__} class."
        )

    @abstractmethod
    async def size(self) -> int:
        """The number of stored messages."""

    @abstractmethod
    async def clear(self) -> None:
        """Remove every message (the compressed summary stays; set it to ``""`` to drop it)."""


def _check_marks(marks: Any, what: str) -> list[str]:
    """Normalise a mark or list of marks to a fresh list of plain strings."""
    if marks is None:
        return []
    if isinstance(marks, str):
        return [str(marks)] if marks.__class__ is not str else [marks]
    if isinstance(marks, list | tuple):
        out: list[str] = []
        for m in marks:
            if not isinstance(m, str):
                raise TypeError(
                    f"{what} must be a string or a list of strings; got an item of type "
                    f"{type(m).__name__}"
                )
            out.append(m if m.__class__ is str else str(m))
        return out
    raise TypeError(
        f"{what} must be a string, a list of strings or None, not {type(marks).__name__}"
    )


def _check_mark_arg(value: Any, what: str) -> None:
    """Refuse a ``mark`` / ``exclude_mark`` argument that is neither a string nor None."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{what} must be a string or None, not {type(value).__name__}")


def _check_mark_args(**marks: Any) -> None:
    """Refuse the first of these mark arguments (name: value) that is neither a string nor
    None, naming it."""
    for what, value in marks.items():
        _check_mark_arg(value, what)


def check_storable(msg: Msg) -> None:
    """Refuse *msg* if a saved state could not hold it: every memory's ``add`` calls this for
    each message before storing any, so that whatever a memory holds can be saved.

    A tool call's arguments and the metadata may nest at most
    :data:`~agentscope_rt._json.MAX_TOOL_INPUT_DEPTH` levels (the half of the save's
    :data:`~agentscope_rt._json.MAX_JSON_DEPTH` a message may use; the states around it use
    the rest).

    :raises MessageFormatError: naming the message, the part and the limit.
    """
    content = msg.content
    if content.__class__ is not str:
        for block in content:
            if isinstance(block, ToolUseBlock):
                problem = tool_input_problem(block.input)
                if problem is not None:
                    raise _not_storable(msg, f"the arguments of tool call {block.name!r}", problem)
    metadata = msg.metadata
    if metadata and not (metadata.__class__ is dict and flat_json_object(metadata)):
        found = json_problem(metadata, "metadata", max_depth=MAX_TOOL_INPUT_DEPTH)
        if found is not None:
            raise _not_storable(msg, "its metadata", f"{found[1]} (at {found[0][:60]})")


def _not_storable(msg: Msg, part: str, problem: str) -> MessageFormatError:
    return MessageFormatError(
        f"message {msg.id!r} from {msg.name!r} cannot be added to memory: {part}: {problem}. "
        f"A message's JSON data may nest at most {MAX_TOOL_INPUT_DEPTH} levels so that the "
        "memory can still be saved; flatten it (or pass it as a JSON string)"
    )


def _batch(memories: Msg | list[Msg] | None) -> list[Msg]:
    """The messages of an ``add`` call, checked as :class:`InMemoryMemory` checks them
    (types first, then :func:`check_storable`: nothing is stored unless all pass)."""
    if memories is None:
        return []
    if isinstance(memories, Msg):
        check_storable(memories)
        return [memories]
    if isinstance(memories, list | tuple):
        for index, msg in enumerate(memories):
            if msg is not None and not isinstance(msg, Msg):
                raise TypeError(f"memories[{index}] must be a Msg, not {type(msg).__name__}")
        batch = [m for m in memories if m is not None]
        for msg in batch:
            check_storable(msg)
        return batch
    raise TypeError(f"memories must be a Msg, a list of Msg or None, not {type(memories).__name__}")


def _allow_duplicates(allow_duplicates: bool, kwargs: dict[str, Any]) -> bool:
    """``allow_duplicates`` (this package, InMemoryMemory) or AgentScope's ``skip_duplicated``."""
    if "skip_duplicated" in kwargs:
        return not kwargs.pop("skip_duplicated")
    return allow_duplicates
