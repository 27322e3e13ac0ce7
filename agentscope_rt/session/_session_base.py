"""SessionBase: save and load named StateModules under a session id (and a user id).

What every session class here guarantees, beyond AgentScope's contract:

* **Atomic writes.** A save replaces the stored state as a whole or not at all: a process killed
  in the middle of a save leaves either the previous state or the new one, never a mix.
* **All or nothing on load.** Every module named in the stored state is loaded, or — when one of
  them fails — none is changed: modules loaded before the failing one are put back as they were.
* **Clear errors.** A stored state that is not valid JSON, is not a JSON object, or does not fit
  a module raises :class:`~agentscope_rt.exception.SessionError` naming the session, where it is
  stored, and the path inside the state. Nothing stored is overwritten by a failed load.
* **No blocking.** File and database work runs in worker threads (``anyio.to_thread``), so a
  session works the same under asyncio and trio.
"""

from __future__ import annotations

import abc
import contextlib
import gc
import json
import logging
import re
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from .._file_names import check_file_name
from .._json import json_problem
from ..exception import SessionError, StateError
from ..module import StateModule

__all__ = [
    "SessionBase",
    "check_session_ids",
    "decode_session_state",
    "encode_session_state",
    "escape_id",
    "unescape_id",
    "valid_ids",
]

logger = logging.getLogger(__name__)


def check_session_ids(session_id: str, user_id: str) -> None:
    """Refuse ids that are not strings, could escape a storage location, or cannot be stored.

    :raises TypeError: when an id is not a string.
    :raises SessionError: for an empty session id, or an id holding a path separator or NUL
        (``"../x"`` must not name a file outside the session folder), or a lone surrogate
        (no file name, SQLite text or Redis key can hold one).
    """
    for what, value in (("session_id", session_id), ("user_id", user_id)):
        if not isinstance(value, str):
            raise TypeError(f"{what} must be a str, not {type(value).__name__}")
        # An empty user id is allowed (no user); JSONSession hashes names that are too long.
        if value or what == "session_id":
            check_file_name(
                value, what, SessionError, max_bytes=None, advice="choose an id that is plain text"
            )


def escape_id(value: str, special: str) -> str:
    """*value* with every character of *special* (ASCII, ``%`` among them) written ``%XX``.

    Ids without those characters are returned as they are, so storage names built from them
    stay AgentScope's; with them, the separators a storage name is built with can no longer
    occur inside an id, so two different pairs of ids never make the same name.
    """
    if not any(ch in value for ch in special):
        return value
    return "".join(f"%{ord(ch):02X}" if ch in special else ch for ch in value)


_ESCAPE = re.compile(r"%([0-9A-F]{2})")


def unescape_id(text: str, special: str) -> str | None:
    """The id that :func:`escape_id` turns into *text*, or ``None`` when it makes no id."""
    value = _ESCAPE.sub(lambda match: chr(int(match[1], 16)), text)
    return value if escape_id(value, special) == text else None


def valid_ids(session_id: str, user_id: str) -> bool:
    """Whether :func:`check_session_ids` accepts the pair."""
    try:
        check_session_ids(session_id, user_id)
    except SessionError:
        return False
    return True


def _check_modules(modules: Mapping[str, Any]) -> None:
    for name, module in modules.items():
        if not isinstance(module, StateModule):
            raise TypeError(
                f"session state {name!r} must be a StateModule (an agent, memory, toolkit, "
                f"...), not {type(module).__name__}"
            )


_gc_lock = threading.Lock()
_gc_pausers = 0
_gc_was_enabled = False


@contextlib.contextmanager
def _gc_paused(pause: bool) -> Iterator[None]:
    """With *pause*, hold off the cyclic garbage collector while a whole session state is built
    or read (the sessions' ``pause_gc`` option); without, do nothing.

    The collector's switch is process-wide: while it is off, every thread of the program runs
    without it, which is why this is an option a program chooses. Turning thousands of
    messages into JSON data (or back) allocates hundreds of thousands of
    containers that are all alive until the end: each collection the allocations trigger walks
    them (and, when it is a full one, every object of the program) and frees nothing, which
    costs more than the work itself. Nothing here makes reference cycles, so nothing is
    leaked: the collector runs as usual afterwards. Threads pausing at the same time are
    counted; a collector the program had disabled stays disabled.
    """
    global _gc_pausers, _gc_was_enabled
    if not pause:
        yield
        return
    with _gc_lock:
        if _gc_pausers == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pausers += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pausers -= 1
            if _gc_pausers == 0 and _gc_was_enabled:
                gc.enable()


def _state_is_json(module: StateModule, state: Any) -> bool:
    """Whether *state*, just returned by ``module.state_dict()``, is known to be JSON data.

    :meth:`StateModule.state_dict` checks what it returns; a class that overrides it may
    return anything, so that part is walked here.
    """
    if type(module).state_dict is not StateModule.state_dict:
        return json_problem(state, "") is None
    for key, sub_module in module._module_dict.items():
        if not _state_is_json(sub_module, state.get(key)):
            return False
    return True


def encode_session_state(modules: Mapping[str, StateModule], *, pause_gc: bool = False) -> bytes:
    """The saved form of *modules*: AgentScope's one-line JSON object ``{name: state_dict}``.

    :param pause_gc: hold off the garbage collector meanwhile (see :func:`_gc_paused`).
    :raises TypeError: when a value is not a StateModule.
    :raises StateError: when a module's state cannot be saved.
    """
    _check_modules(modules)
    with _gc_paused(pause_gc):
        return _encode(modules)


def _encode(modules: Mapping[str, StateModule]) -> bytes:
    states = {name: module.state_dict() for name, module in modules.items()}
    # orjson writes JSON data several times faster than json. It would write NaN as null, so it
    # gets only states known to be JSON data (no NaN); it refuses lone surrogates and integers
    # beyond 64 bits, which json writes (as AgentScope does).
    if all(_state_is_json(module, states[name]) for name, module in modules.items()):
        import orjson  # here: a program that never saves a session never loads it

        try:
            return orjson.dumps(states)
        except TypeError:  # orjson.JSONEncodeError
            pass
    # As AgentScope writes it: non-ASCII kept as is; a lone surrogate in a string survives.
    return json.dumps(states, ensure_ascii=False).encode("utf-8", errors="surrogatepass")


# Every byte to "0" (a digit), "1" (what may come right before a number: [ : , - or
# whitespace) or "2" (anything else), for _may_hold_a_long_integer.
_NUMBER_SHAPE = bytes(
    ord("0") if byte in b"0123456789" else ord("1") if byte in b"[:,- \t\r\n" else ord("2")
    for byte in range(256)
)
_LONG_INTEGER = b"1" + b"0" * 19


def _may_hold_a_long_integer(data: bytes) -> bool:
    """Whether *data* may hold an integer of 19 digits or more, which orjson would read as a
    float (beyond 64 bits) where json reads an int. Digits in a string after one of those
    characters also say yes: json then reads the document, the same as before."""
    return _LONG_INTEGER in data.translate(_NUMBER_SHAPE)


_NOT_READ: Any = object()


def _orjson_loads(data: bytes) -> Any:
    """*data* read by orjson, or ``_NOT_READ`` for what it refuses and json reads (NaN,
    Infinity, lone surrogates, which AgentScope's files may hold) or refuses with its own
    message (json's is the one users see)."""
    import orjson

    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return _NOT_READ


def _json_loads(raw: bytes, where: str) -> Any:
    """*raw* read by json, every way it can fail turned into a :class:`SessionError`."""
    try:
        return json.loads(raw.decode("utf-8", errors="surrogatepass"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SessionError(f"{where} is corrupted: not valid JSON ({exc})") from None
    except RecursionError:
        raise SessionError(f"{where} cannot be read: it is nested too deeply") from None
    except ValueError as exc:  # an integer beyond sys.get_int_max_str_digits()
        raise SessionError(f"{where} cannot be read: {exc}") from None


def decode_session_state(
    data: bytes | str, where: str, *, pause_gc: bool = False
) -> dict[str, Any]:
    """Parse a stored session state.

    :param where: names the session and its storage location in error messages.
    :param pause_gc: hold off the garbage collector meanwhile (see :func:`_gc_paused`).
    :raises SessionError: when *data* is not UTF-8 JSON holding an object of objects, or is
        nested too deeply or holds an integer too long for Python to read.
    """
    raw = data if isinstance(data, bytes) else data.encode("utf-8", errors="surrogatepass")
    with _gc_paused(pause_gc):
        states = _NOT_READ if _may_hold_a_long_integer(raw) else _orjson_loads(raw)
        if states is _NOT_READ:
            states = _json_loads(raw, where)
    if not isinstance(states, dict):
        raise SessionError(
            f"{where} is not a session state: expected a JSON object of named states, "
            f"got {type(states).__name__}"
        )
    for name, state in states.items():
        if not isinstance(state, dict):
            raise SessionError(
                f"{where}: the state of {name!r} must be a JSON object, got {type(state).__name__}"
            )
    return states


def load_stored_state(
    data: bytes | str,
    modules: Mapping[str, StateModule],
    where: str,
    *,
    pause_gc: bool = False,
) -> None:
    """Load a stored session state into *modules*: :func:`decode_session_state`, then
    :func:`load_modules` (all or nothing).

    :raises SessionError: as those two raise; the modules are unchanged then.
    """
    states = decode_session_state(data, where, pause_gc=pause_gc)
    load_modules(states, modules, where, pause_gc=pause_gc)


def load_modules(
    states: dict[str, Any],
    modules: Mapping[str, StateModule],
    where: str,
    *,
    pause_gc: bool = False,
) -> None:
    """Load each module whose name is in *states* (others are left alone), all or nothing.

    With *pause_gc*, the garbage collector is held off while each module loads (see
    :func:`_gc_paused`).

    Whatever a module raises from its ``load_state_dict``, the modules loaded before it are
    put back as they were.

    :raises SessionError: naming *where* and the failing module (with the module's own
        exception as its ``__cause__`` when that is not a :class:`StateError`); every module
        is as it was. A ``BaseException`` (a cancellation) is re-raised as it is, after the
        same roll-back.
    """
    _check_modules(modules)
    loaded: list[tuple[str, StateModule, dict[str, Any]]] = []
    for name, module in modules.items():
        if name not in states:
            continue
        before = module.state_dict()
        try:
            with _gc_paused(pause_gc):
                module.load_state_dict(states[name])
        except BaseException as exc:
            _put_back(loaded, exc)
            if isinstance(exc, StateError):
                raise SessionError(f"{where}: cannot load {name!r}: {exc}") from None
            if isinstance(exc, Exception):
                raise SessionError(
                    f"{where}: cannot load {name!r}: {type(exc).__name__}: {exc}"
                ) from exc
            raise
        loaded.append((name, module, before))


def _put_back(loaded: list[tuple[str, StateModule, dict[str, Any]]], exc: BaseException) -> None:
    """Restore the modules of a failed load, newest first; one that cannot be restored does not
    stop the others and is noted on *exc* (the error the caller sees)."""
    for name, module, state in reversed(loaded):
        try:
            module.load_state_dict(state)
        except Exception as failure:
            logger.error("Could not put %r back after a failed load: %r", name, failure)
            exc.add_note(f"{name!r} could not be put back as it was: {failure!r}")


class SessionBase(abc.ABC):
    """Saves and loads the state of named StateModules (AgentScope's interface).

    ``await session.save_session_state(session_id, user_id, agent=agent, memory=memory)``
    stores ``{"agent": agent.state_dict(), "memory": memory.state_dict()}`` under that session;
    ``load_session_state`` with the same keyword names restores them. Names in the stored state
    that are not passed are ignored; names passed but not stored are left unchanged.
    """

    @abc.abstractmethod
    async def save_session_state(
        self, session_id: str, user_id: str = "", **state_modules_mapping: StateModule
    ) -> None:
        """Save the state of every module passed by keyword, replacing what was stored.

        :raises SessionError: for an invalid id or when the storage fails.
        :raises StateError: when a module's state cannot be saved.
        """

    @abc.abstractmethod
    async def load_session_state(
        self,
        session_id: str,
        user_id: str = "",
        allow_not_exist: bool = True,
        **state_modules_mapping: StateModule,
    ) -> None:
        """Load the stored state into the modules passed by keyword.

        :param allow_not_exist: when false, a session that was never saved is an error;
            when true it is logged and nothing changes.
        :raises SessionError: for a missing session (unless allowed), a corrupted or
            incompatible state (nothing is changed then), or an invalid id.
        """

    async def aclose(self) -> None:  # noqa: B027 - optional hook with nothing to do here
        """Release what the session holds (connections); the base class holds nothing."""

    async def close(self) -> None:
        """AgentScope's name for :meth:`aclose`."""
        await self.aclose()

    async def __aenter__(self) -> SessionBase:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
