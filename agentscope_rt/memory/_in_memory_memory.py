"""The default short-term memory: messages and their marks in a Python list.

Memory sits on the agent's hot path (four additions and a couple of reads per tool-using
reply), so it keeps an index of stored ids for de-duplication instead of scanning, copies
messages with :meth:`Msg.copy` (not ``deepcopy``), and returns the stored messages themselves
from :meth:`InMemoryMemory.get_memory` (as AgentScope does): treat them as read-only.
"""

from __future__ import annotations

import operator
from typing import Any, ClassVar

from .._json import check_json_within
from ..message import Msg, is_shared
from ..message.serde import (
    checked_msg_json,
    fast_structure_msg,
    structure,
    unstructure_msg,
)
from ._memory_base import MemoryBase, _check_mark_args, _check_marks, check_storable

__all__ = ["INDEX_FROM", "InMemoryMemory"]

_Entry = tuple[Msg, list[str]]
# The id index of every memory too small to need one; never written (an index replaces it).
_NO_IDS: dict[str, int] = {}
INDEX_FROM = 32
"""Messages from which a memory keeps an index of their ids (a dict) to skip duplicates; a
smaller memory looks through its messages instead (a plain loop, a fraction of a
microsecond), sparing each agent of a large simulation the index's few hundred bytes."""


class _NoMarks(list[str]):
    """The marks of every unmarked message: one shared empty list (most messages carry no
    marks; a list each costs 56 bytes), replaced by a list of the message's own when a mark
    is added. It reads (and compares) as ``[]``; changing it in place raises."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            "the marks of an unmarked message are shared; add marks with "
            "update_messages_mark() (or add(..., marks=...))"
        )

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse


_NO_MARKS = _NoMarks()
_first = operator.itemgetter(0)
_msg_id = operator.attrgetter("id")


def _content_to_json(entries: list[_Entry]) -> list[list[Any]]:
    """The saved ``content``, checked to be JSON data (registered as checked: the state
    module does not walk it again).

    AgentScope writes each entry as a two-item JSON list; the converter would keep tuples.
    Most entries are checked on the way (``checked_msg_json``: only the metadata and tool
    arguments are walked); any other one is built by the converter and walked as a whole, so
    a value that is not JSON gets the error (and path) a check of the whole state gives.

    :raises MessageFormatError: naming the first part that is not JSON data.
    """
    data: list[list[Any]] = []
    for index, (msg, marks) in enumerate(entries):
        # The content list and the entry's own list enclose the message.
        msg_json = checked_msg_json(msg, 2)
        if msg_json is not None:
            for mark in marks:
                if mark.__class__ is not str:
                    msg_json = None
                    break
        if msg_json is None:
            entry = [unstructure_msg(msg), list(marks)]
            check_json_within(entry, f"content[{index}]", 1)
        else:
            entry = [msg_json, list(marks) if marks else []]
        data.append(entry)
    return data


def _has_id(msgs: list[Msg], msg_id: str) -> bool:
    # A plain loop: for the few messages of a memory without an index it beats a chain of
    # C-level maps, which costs more to set up than it saves (2.5x faster at 4 messages).
    for msg in msgs:  # noqa: SIM110 (a generator in any() is several times slower)
        if msg.has_id(msg_id):  # makes no id for a message whose id was never read
            return True
    return False


class _LoadedContent(list[_Entry]):
    """Entries built by :func:`_content_from_json` itself: valid ``(Msg, [str, ...])`` pairs
    with fresh lists of marks, which the ``content`` setter need not check again."""

    __slots__ = ()


def _content_from_json(data: Any) -> list[_Entry]:
    # Well-formed entries (what a save writes) are built directly; at the first other one the
    # converter structures the whole list, so errors name the same paths as ever.
    if data.__class__ is list:
        entries = _LoadedContent()
        for item in data:
            if item.__class__ is not list or len(item) != 2:
                break
            msg = fast_structure_msg(item[0])
            marks = item[1]
            if msg is None or marks.__class__ is not list:
                break
            if marks:
                if any(mark.__class__ is not str for mark in marks):
                    break
                entries.append((msg, list(marks)))
            else:
                entries.append((msg, _NO_MARKS))
        else:
            return entries
    loaded: list[tuple[Msg, list[str]]] = structure(
        data, list[tuple[Msg, list[str]]], what="state", path="content"
    )
    return [(msg, marks or _NO_MARKS) for msg, marks in loaded]


class InMemoryMemory(MemoryBase):
    """Messages with their marks, in insertion order, held in memory.

    ``content`` is a list of ``(Msg, marks)`` pairs (the marks of an unmarked message are one
    empty list shared by all of them, which refuses changes in place: mark messages with
    :meth:`update_messages_mark`); its saved form is AgentScope 1.0's
    ``{"_compressed_summary": str, "content": [[msg_dict, [mark, ...]], ...]}``, so memories
    saved by either library load in the other. Change it through the methods or by assigning
    ``content`` as a whole: reading it gives a new list of pairs each time.

    Inside, the messages are one list and their marks another, made when the first mark
    arrives: most memories carry no marks, and a pair per message cost 64 bytes (and one more
    object for the cycle collector to walk).
    """

    add_may_wait: ClassVar[bool] = False  # add() never awaits
    synchronous: ClassVar[bool] = True  # add_sync, get_memory_sync, delete_by_mark_sync

    def __init__(self) -> None:
        super().__init__()
        self._msgs: list[Msg] = []
        # The marks of each message (same length as _msgs), or None while none has any.
        self._marks: list[list[str]] | None = None
        # The shared empty index until the first add: an idle agent's memory holds no dict.
        self._ids: dict[str, int] = _NO_IDS
        # Whether some stored message is a shared snapshot (see message.share), to be
        # replaced by this memory's own copy before it is handed out.
        self._holds_shared = False
        self.register_state(
            "content",
            custom_to_json=_content_to_json,
            custom_from_json=_content_from_json,
            json_checked=True,
        )

    # ``content`` is a property so that loading state (or a user assigning it) rebuilds the
    # id index; the methods below work on ``_msgs`` and ``_marks`` directly.
    @property
    def content(self) -> list[_Entry]:
        """The stored ``(Msg, marks)`` pairs, oldest first (this memory's own messages)."""
        if self._holds_shared:
            self._own_messages()
        marks = self._marks
        if marks is None:
            return [(msg, _NO_MARKS) for msg in self._msgs]
        return list(zip(self._msgs, marks, strict=True))

    @content.setter
    def content(self, value: list[_Entry]) -> None:
        if value.__class__ is _LoadedContent:
            self._set_entries(value, loaded=True)
            return
        entries: list[_Entry] = []
        for index, item in enumerate(value):
            if not isinstance(item, tuple | list) or len(item) != 2 or not isinstance(item[0], Msg):
                raise TypeError(
                    f"InMemoryMemory.content[{index}] must be a (Msg, marks) pair, "
                    f"not {type(item).__name__}"
                )
            entries.append((item[0], _check_marks(item[1], f"content[{index}] marks")))
        self._set_entries(entries)

    def _set_entries(self, entries: list[_Entry], loaded: bool = False) -> None:
        """Hold *entries*' messages and marks (valid pairs, marks lists of the pairs' own);
        *loaded*: built from saved state (no shared snapshot among them)."""
        self._msgs = list(map(_first, entries))
        self._marks = None
        for _, marks in entries:
            if marks:
                self._marks = [marks or _NO_MARKS for _, marks in entries]
                break
        self._holds_shared = not loaded and any(map(is_shared, self._msgs))
        self._reindex()

    def _own_messages(self) -> None:
        """Replace each shared snapshot by this memory's own copy: its messages are about to
        leave it, and whoever gets them may change them."""
        self._msgs = [msg.copy() if is_shared(msg) else msg for msg in self._msgs]
        self._holds_shared = False

    def _marks_list(self) -> list[list[str]]:
        """The marks of each message, made (all unmarked) when a first mark arrives."""
        marks = self._marks
        if marks is None:
            marks = self._marks = [_NO_MARKS] * len(self._msgs)
        return marks

    def _keep(self, keep: list[bool]) -> int:
        """Keep the messages (and marks) where *keep* is true; return how many went."""
        before = len(self._msgs)
        self._msgs = [msg for msg, kept in zip(self._msgs, keep, strict=True) if kept]
        if self._marks is not None:
            self._marks = [marks for marks, kept in zip(self._marks, keep, strict=True) if kept]
        self._reindex()
        return before - len(self._msgs)

    def _reindex(self) -> None:
        msgs = self._msgs
        if len(msgs) < INDEX_FROM:
            self._ids = _NO_IDS
            return
        # Ids are almost always unique: one C-level pass says so (a whole memory is reindexed
        # on every load); otherwise count them.
        ids = dict.fromkeys(map(_msg_id, msgs), 1)
        if len(ids) != len(msgs):
            ids = {}
            for msg in msgs:
                ids[msg.id] = ids.get(msg.id, 0) + 1
        self._ids = ids

    async def add(
        self,
        memories: Msg | list[Msg] | None,
        marks: str | list[str] | None = None,
        allow_duplicates: bool = False,
        **kwargs: Any,
    ) -> None:
        """Store copies of *memories*, each with its own copy of *marks*.

        A shared snapshot (a hub's broadcast, see :func:`~agentscope_rt.message.share`) is
        kept as it is: its observers' memories hold one message between them, each replaced by
        the memory's own copy when its messages are handed out (:meth:`get_memory`).

        ``None`` (and ``None`` items in a list) are ignored. Without *allow_duplicates*, a
        message whose id is already stored (or appears earlier in the same call) is skipped.

        :raises TypeError: for an item that is not a Msg, or marks that are not strings
            (checked for the whole batch first: then nothing is stored).
        :raises MessageFormatError: for a message a saved memory could not hold (tool
            arguments or metadata nested deeper than ``MAX_TOOL_INPUT_DEPTH``, 100 levels;
            checked for the whole batch first too).
        """
        self.add_sync(memories, marks, allow_duplicates)

    def add_sync(
        self,
        memories: Msg | list[Msg] | None,
        marks: str | list[str] | None = None,
        allow_duplicates: bool = False,
        *,
        copy: bool = True,
        check: bool = True,
    ) -> None:
        """:meth:`add` as a plain function (see :attr:`MemoryBase.synchronous`).

        :param copy: ``False`` keeps the given messages themselves instead of copies: for a
            caller that hands them over and never changes them afterwards.
        :param check: ``False`` skips :func:`check_storable`: for a caller that built the
            messages to that rule itself (the ReAct agent records its steps so: it checks each
            tool call's arguments as it builds the step, and its structured output is such
            arguments), saving the walk on the reply's path.
        :raises TypeError: as :meth:`add`.
        :raises MessageFormatError: as :meth:`add` (unless *check* is ``False``).
        """
        if memories is None:
            return
        if memories.__class__ is Msg:
            batch: list[Msg] | tuple[Msg, ...] = (memories,)
        elif isinstance(memories, list | tuple):
            batch = memories
            for index, msg in enumerate(batch):
                if msg is not None and not isinstance(msg, Msg):
                    raise TypeError(f"memories[{index}] must be a Msg, not {type(msg).__name__}")
        elif isinstance(memories, Msg):
            batch = (memories,)
        else:
            raise TypeError(
                f"memories must be a Msg, a list of Msg or None, not {type(memories).__name__}"
            )
        if check:
            for msg in batch:
                if msg is not None:
                    check_storable(msg)
        mark_list = _check_marks(marks, "marks") if marks is not None else None
        ids = self._ids
        msgs = self._msgs
        marks_of = self._marks_list() if mark_list else self._marks
        for msg in batch:
            if msg is None:
                continue
            if ids is not _NO_IDS:
                msg_id = msg.id
                if msg_id in ids:
                    if not allow_duplicates:
                        continue
                    ids[msg_id] += 1
                else:
                    ids[msg_id] = 1
            elif not allow_duplicates and _has_id(msgs, msg.id):
                continue
            if not copy:
                msgs.append(msg)
            elif not is_shared(msg):
                msgs.append(msg.copy())
            else:
                self._holds_shared = True
                msgs.append(msg)
            if marks_of is not None:
                marks_of.append(list(mark_list) if mark_list else _NO_MARKS)
            if ids is _NO_IDS and len(msgs) >= INDEX_FROM:
                self._reindex()
                ids = self._ids

    async def delete(self, msg_ids: list[str], **kwargs: Any) -> int:
        """Remove every stored message whose id is in *msg_ids*; return how many."""
        wanted = set(msg_ids)
        ids = self._ids if self._ids is not _NO_IDS else map(_msg_id, self._msgs)
        if not wanted.intersection(ids):
            return 0
        return self._keep([msg.id not in wanted for msg in self._msgs])

    async def delete_by_mark(self, mark: str | list[str], **kwargs: Any) -> int:
        """Remove every message carrying *mark* (or any of the marks); return how many.

        :raises TypeError: if *mark* is not a string or a list of strings.
        """
        return self.delete_by_mark_sync(mark)

    def delete_by_mark_sync(self, mark: str | list[str]) -> int:
        """:meth:`delete_by_mark` as a plain function (see :attr:`MemoryBase.synchronous`).

        :raises TypeError: as :meth:`delete_by_mark`.
        """
        wanted = (mark,) if mark.__class__ is str else _check_marks(mark, "mark")
        # Called before every reasoning step, and most memories carry no marks at all.
        marks_of = self._marks
        if marks_of is None or not any(marks_of):
            return 0
        keep = [not any(m in marks for m in wanted) for marks in marks_of]
        return self._keep(keep) if not all(keep) else 0

    async def get_memory(
        self,
        mark: str | None = None,
        exclude_mark: str | None = None,
        prepend_summary: bool = True,
        **kwargs: Any,
    ) -> list[Msg]:
        """The stored messages (not copies), filtered by *mark* / *exclude_mark*.

        With *prepend_summary* and a compressed summary set, a user message holding the
        summary comes first. The messages are this memory's own: a shared snapshot it held is
        replaced by its own copy first (changing one never reaches another agent's memory).

        :raises TypeError: if *mark* or *exclude_mark* is neither a string nor ``None``.
        """
        return self.get_memory_sync(mark, exclude_mark, prepend_summary)

    def get_memory_sync(
        self,
        mark: str | None = None,
        exclude_mark: str | None = None,
        prepend_summary: bool = True,
        *,
        read_only: bool = False,
    ) -> list[Msg]:
        """:meth:`get_memory` as a plain function (see :attr:`MemoryBase.synchronous`).

        :param read_only: the caller only reads the messages (and keeps none of them): shared
            snapshots are then returned as they are, without a copy each (a prompt is built
            so). Changing a message read so may change other agents' memories.
        :raises TypeError: as :meth:`get_memory`.
        """
        if self._holds_shared and not read_only:
            self._own_messages()
        marks_of = self._marks
        if mark is None and exclude_mark is None:
            msgs = list(self._msgs)
        else:
            _check_mark_args(mark=mark, exclude_mark=exclude_mark)
            if marks_of is None:  # no marks: none carries *mark*, none is excluded
                msgs = [] if mark is not None else list(self._msgs)
            else:
                msgs = [
                    msg
                    for msg, marks in zip(self._msgs, marks_of, strict=True)
                    if (mark is None or mark in marks)
                    and (exclude_mark is None or exclude_mark not in marks)
                ]
        if prepend_summary and self._compressed_summary:
            return self._summary_first(msgs, prepend_summary)
        return msgs

    async def update_messages_mark(
        self,
        new_mark: str | None,
        old_mark: str | None = None,
        msg_ids: list[str] | None = None,
    ) -> int:
        """Add, replace or remove a mark; return how many messages changed.

        Messages considered: ids in *msg_ids* (all when ``None``) carrying *old_mark* (any
        when ``None``). ``new_mark=None`` removes *old_mark*; otherwise *old_mark* is replaced
        by *new_mark* (or *new_mark* added when it is not there yet).

        :raises TypeError: if a mark is neither a string nor ``None``.
        """
        _check_mark_args(new_mark=new_mark, old_mark=old_mark)
        if new_mark is not None:
            new_mark = str(new_mark)
        wanted = None if msg_ids is None else set(msg_ids)
        if self._marks is None and (new_mark is None or old_mark is not None):
            return 0  # no message carries old_mark (or any mark to remove)
        updated = 0
        marks_of = self._marks_list()
        for index, msg in enumerate(self._msgs):
            if wanted is not None and msg.id not in wanted:
                continue
            marks = marks_of[index]
            if old_mark is not None and old_mark not in marks:
                continue
            if marks is _NO_MARKS:
                marks = marks_of[index] = []
            if new_mark is None:
                if old_mark is not None and old_mark in marks:
                    marks.remove(old_mark)
                    updated += 1
                continue
            if old_mark is not None:
                marks.remove(old_mark)
            if new_mark not in marks:
                marks.append(new_mark)
                updated += 1
        return updated

    async def size(self) -> int:
        """The number of stored messages."""
        return len(self._msgs)

    async def clear(self) -> None:
        """Remove every message (the compressed summary is kept)."""
        self._msgs = []
        self._marks = None
        self._ids = _NO_IDS
        self._holds_shared = False

    def __repr__(self) -> str:
        return f"InMemoryMemory(size={len(self._msgs)}, summary={bool(self._compressed_summary)})"
