"""JSONSession: one JSON file per session, in AgentScope's file naming and layout.

A session is stored as ``{save_dir}/{user_id}_{session_id}.json`` (``{session_id}.json`` when
``user_id`` is empty), holding the one-line JSON object ``{name: state_dict}`` that AgentScope
1.x writes, so files move between the two in both directions.

Writes are atomic: the new state goes to a temporary file in the same folder, is flushed to
disk (``fsync``), and then renamed over the old file, which a crash cannot leave half done
(POSIX ``rename``). Saves of one session are serialised by a lock per file; saves of different
sessions run concurrently. All file work runs in worker threads.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import anyio
import anyio.to_thread

from ..exception import SessionError
from ..module import StateModule
from ._session_base import (
    SessionBase,
    check_session_ids,
    decode_session_state,
    encode_session_state,
    load_modules,
    logger,
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


class JSONSession(SessionBase):
    """Sessions saved as JSON files in *save_dir* (created on first save).

    :param save_dir: the folder holding the session files.
    """

    def __init__(self, save_dir: str | os.PathLike[str] = "./") -> None:
        self.save_dir = os.fspath(save_dir)
        self._locks: dict[Path, tuple[anyio.Lock, int]] = {}

    def __repr__(self) -> str:
        return f"JSONSession(save_dir={self.save_dir!r})"

    def get_save_path(self, session_id: str, user_id: str = "") -> Path:
        """Where the session is stored (AgentScope's naming).

        :raises SessionError: for an id that is empty or holds a path separator.
        """
        check_session_ids(session_id, user_id)
        name = f"{user_id}_{session_id}.json" if user_id else f"{session_id}.json"
        return Path(self.save_dir) / name

    async def _locked(self, path: Path) -> anyio.Lock:
        lock, users = self._locks.get(path, (None, 0))
        if lock is None:
            lock = anyio.Lock()
        self._locks[path] = (lock, users + 1)
        await lock.acquire()
        return lock

    def _release(self, path: Path, lock: anyio.Lock) -> None:
        lock.release()
        _, users = self._locks[path]
        if users == 1:
            del self._locks[path]
        else:
            self._locks[path] = (lock, users - 1)

    async def save_session_state(
        self, session_id: str, user_id: str = "", **state_modules_mapping: StateModule
    ) -> None:
        """Save the modules' states to the session's file, atomically.

        :raises SessionError: for an invalid id, or when the file cannot be written (the old
            file is then unchanged).
        :raises StateError: when a module's state cannot be saved.
        """
        path = self.get_save_path(session_id, user_id)
        data = encode_session_state(state_modules_mapping)
        lock = await self._locked(path)
        try:
            await anyio.to_thread.run_sync(self._write, path, data)
        finally:
            self._release(path, lock)
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

        :raises SessionError: when the file is missing and *allow_not_exist* is false, or is
            corrupted or does not fit the modules (naming the file and the path inside it);
            the modules are unchanged then.
        """
        path = self.get_save_path(session_id, user_id)
        data = await anyio.to_thread.run_sync(self._read, path)
        if data is None:
            if allow_not_exist:
                logger.info("Session file %s does not exist; nothing loaded.", path)
                return
            raise SessionError(
                f"Failed to load session state for file {path} does not exist. "
                "Save the session first, or pass allow_not_exist=True."
            )
        where = f"session {session_id!r} (file {path})"
        load_modules(decode_session_state(data, where), state_modules_mapping, where)
        logger.info("Loaded session state from %s.", path)

    @staticmethod
    def _read(path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise SessionError(f"cannot read session file {path}: {exc}") from exc
