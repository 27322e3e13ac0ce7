"""JSONSession: one JSON file per session, named so that no two (user, session) pairs share one.

A session is stored as ``{save_dir}/{user_id}_{session_id}.json`` (``{session_id}.json`` when
``user_id`` is empty), holding the one-line JSON object ``{name: state_dict}`` that AgentScope
1.x writes. In the file name, ``%`` and ``_`` inside an id are written ``%25`` and ``%5F``:
AgentScope's plain naming gives ``john`` / ``doe_chat1`` and ``john_doe`` / ``chat1`` the same
file, which this naming cannot. Ids without ``%`` and ``_`` get AgentScope's own names, so
those files move between the two in both directions. A name that would be too long for the
file system (with its temporary file) becomes ``_{sha256 of the ids}.json``.

A file AgentScope named differently (ids holding ``_`` or ``%``) is read when the pair has no
file of its own and the name can belong to this pair only; a name several pairs could have
written is read only with ``read_agentscope_names=True`` (see :class:`JSONSession`).

Writes are atomic: the new state goes to a temporary file in the same folder, is flushed to
disk (``fsync``), and then renamed over the old file, which a crash cannot leave half done
(POSIX ``rename``). Saves of one session are serialised by a lock per file (one that works
under whichever event loop runs, and is dropped when nobody holds or waits for it); saves of
different sessions run concurrently. All file work runs in worker threads.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import anyio.to_thread

from .._locks import FairLock
from ..exception import SessionError
from ..module import StateModule
from ._session_base import (
    SessionBase,
    check_session_ids,
    encode_session_state,
    escape_id,
    load_stored_state,
    logger,
    unescape_id,
    valid_ids,
)

__all__ = ["JSONSession", "atomic_write"]


def atomic_write(path: Path, data: bytes) -> None:
    """Replace *path* with *data* so that a crash leaves the old file or the new one.

    Blocking: call it in a worker thread.

    :raises OSError: when the folder is not writable or the disk is full (the old file is
        then untouched and no temporary file is left behind).
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        with open(tmp, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    # Make the rename itself durable (a crash right after must not bring the old name back).
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


_SPECIAL = "%_"
"""Written ``%XX`` inside an id in a file name: the escape itself and the separator."""

_NAME_MAX = 255 - len(".") - len(".0123456789ab.tmp")
"""The longest file name whose temporary file (see :func:`atomic_write`) fits in the 255
bytes most file systems allow."""

_HASHED = re.compile(r"_[0-9a-f]{64}\.json")


def session_file_name(session_id: str, user_id: str) -> str:
    """The file name of a checked pair of ids; no other pair has it.

    Escaped names hold at most one bare ``_`` (the separator, never first); a hashed name
    starts with ``_``, so it is never an escaped name.
    """
    session_part = escape_id(session_id, _SPECIAL)
    name = (
        f"{escape_id(user_id, _SPECIAL)}_{session_part}.json" if user_id else f"{session_part}.json"
    )
    if len(name.encode("utf-8")) <= _NAME_MAX:
        return name
    digest = hashlib.sha256(json.dumps([user_id, session_id]).encode("ascii")).hexdigest()
    return f"_{digest}.json"


def agentscope_file_name(session_id: str, user_id: str) -> str:
    """The name AgentScope 1.x gives the pair's file."""
    return f"{user_id}_{session_id}.json" if user_id else f"{session_id}.json"


def _is_some_pairs_file_name(name: str) -> bool:
    """Whether *name* is :func:`session_file_name` of some pair of ids (hashed names
    included, whose pair cannot be told)."""
    if _HASHED.fullmatch(name):
        return True
    stem = name.removesuffix(".json")
    if stem == name:
        return False
    ids = [unescape_id(part, _SPECIAL) for part in stem.split("_")]
    user_id: str | None
    session_id: str | None
    if len(ids) == 1:
        user_id, session_id = "", ids[0]
    elif len(ids) == 2 and ids[0]:  # an empty user part: a name that starts with "_"
        user_id, session_id = ids
    else:
        return False
    if user_id is None or session_id is None:
        return False
    return valid_ids(session_id, user_id) and session_file_name(session_id, user_id) == name


def _only_this_pairs_agentscope_file(session_id: str, user_id: str) -> bool:
    """Whether AgentScope's name for the pair can have been written for this pair only and is
    no other pair's file name here.

    AgentScope's ``{user}_{session}.json`` may always be the user-less session
    ``{user}_{session}`` too, and a name holding ``_`` may be split at any ``_``: only a
    user-less session id without ``_`` has a name of its own.
    """
    if user_id or "_" in session_id:
        return False
    return not _is_some_pairs_file_name(agentscope_file_name(session_id, user_id))


class JSONSession(SessionBase):
    """Sessions saved as JSON files in *save_dir* (created on first save).

    :param save_dir: the folder holding the session files.
    :param read_agentscope_names: also read a file AgentScope 1.x named for the pair when the
        pair has no file of its own, even where that name could have been written for another
        pair (AgentScope names ``john`` / ``doe_chat1``, ``john_doe`` / ``chat1`` and the
        user-less ``john_doe_chat1`` all ``john_doe_chat1.json``). Only for a folder whose ids
        are known not to collide; by default such a file is not read (a load says so). Saves
        always go to the pair's own file.
    :param pause_gc: hold off Python's cyclic garbage collector while a state is encoded or
        decoded (off by default). It makes saving and loading a large session several times
        faster (the collector would walk the many containers being built, freeing nothing),
        but the switch is process-wide: meanwhile no thread of the program collects cycles.
    """

    def __init__(
        self,
        save_dir: str | os.PathLike[str] = "./",
        *,
        read_agentscope_names: bool = False,
        pause_gc: bool = False,
    ) -> None:
        self.save_dir = os.fspath(save_dir)
        self.read_agentscope_names = read_agentscope_names
        self.pause_gc = pause_gc
        # Per file: its lock and how many saves hold or wait for it (dropped at zero).
        self._locks: dict[Path, tuple[FairLock, int]] = {}

    def __repr__(self) -> str:
        return f"JSONSession(save_dir={self.save_dir!r})"

    def get_save_path(self, session_id: str, user_id: str = "") -> Path:
        """Where the session is stored: AgentScope's naming with ``%`` and ``_`` escaped in
        the ids, or a hashed name when too long (see the module's docs).

        :raises SessionError: for an id that is empty, holds a path separator or NUL, or is
            not valid text.
        :raises TypeError: for an id that is not a string.
        """
        check_session_ids(session_id, user_id)
        return Path(self.save_dir) / session_file_name(session_id, user_id)

    @contextlib.asynccontextmanager
    async def _file_lock(self, path: Path) -> AsyncIterator[None]:
        """Hold *path*'s lock; its entry is removed when nobody holds or waits for it, also
        when the wait is cancelled."""
        loop_lock, users = self._locks.get(path, (None, 0))
        if loop_lock is None:
            loop_lock = FairLock()
        self._locks[path] = (loop_lock, users + 1)
        try:
            async with loop_lock:
                yield
        finally:
            _, users = self._locks[path]
            if users == 1:
                del self._locks[path]
            else:
                self._locks[path] = (loop_lock, users - 1)

    async def save_session_state(
        self, session_id: str, user_id: str = "", **state_modules_mapping: StateModule
    ) -> None:
        """Save the modules' states to the session's file, atomically.

        :raises SessionError: for an invalid id, or when the file cannot be written (the old
            file is then unchanged).
        :raises TypeError: for an id that is not a string.
        :raises StateError: when a module's state cannot be saved.
        """
        path = self.get_save_path(session_id, user_id)
        data = encode_session_state(state_modules_mapping, pause_gc=self.pause_gc)
        async with self._file_lock(path):
            await anyio.to_thread.run_sync(self._write, path, data)
        logger.info("Saved session state to %s.", path)

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, data)
        except OSError as exc:
            raise SessionError(f"cannot save session file {path}: {exc}") from exc

    async def load_session_state(
        self,
        session_id: str,
        user_id: str = "",
        allow_not_exist: bool = True,
        **state_modules_mapping: StateModule,
    ) -> None:
        """Load the session's file into the modules named in it (all or nothing).

        Without a file of its own, the pair's AgentScope-named file is read when that name
        can only be this pair's (or with ``read_agentscope_names=True``).

        :raises SessionError: when the file is missing and *allow_not_exist* is false, or is
            corrupted, nested too deeply or does not fit the modules (naming the file and the
            path inside it); the modules are unchanged then.
        :raises TypeError: for an id that is not a string.
        """
        path = self.get_save_path(session_id, user_id)
        path, data, not_read = await anyio.to_thread.run_sync(
            self._read_pair, path, session_id, user_id
        )
        if data is None:
            self._missing(path, not_read, allow_not_exist)
            return
        where = f"session {session_id!r} (file {path})"
        load_stored_state(data, state_modules_mapping, where, pause_gc=self.pause_gc)
        logger.info("Loaded session state from %s.", path)

    def _missing(self, path: Path, not_read: Path | None, allow_not_exist: bool) -> None:
        hint = ""
        if not_read is not None:
            hint = (
                f" AgentScope's file {not_read} may hold it, but that name may belong to "
                "another user or session, so it is not read; pass read_agentscope_names=True "
                "to JSONSession if your ids cannot collide."
            )
        if allow_not_exist:
            log = logger.warning if hint else logger.info
            log("Session file %s does not exist; nothing loaded.%s", path, hint)
            return
        raise SessionError(
            f"Failed to load session state for file {path} does not exist. "
            f"Save the session first, or pass allow_not_exist=True.{hint}"
        )

    def _read_pair(
        self, path: Path, session_id: str, user_id: str
    ) -> tuple[Path, bytes | None, Path | None]:
        """``(file read, its bytes, None)``; or, without one, ``(path, None, an AgentScope
        file left unread because its name is ambiguous, if any)``."""
        data = self._read(path)
        legacy = path.with_name(agentscope_file_name(session_id, user_id))
        if data is not None or legacy == path:
            return path, data, None
        legacy_data = self._read(legacy)
        if legacy_data is None:
            return path, None, None
        if self.read_agentscope_names or _only_this_pairs_agentscope_file(session_id, user_id):
            return legacy, legacy_data, None
        return path, None, legacy

    @staticmethod
    def _read(path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:  # an AgentScope name: no such file can exist
                return None
            raise SessionError(f"cannot read session file {path}: {exc}") from exc
