"""What an agent checks of the inputs its hooked methods and callers receive.

The checks raise :class:`TypeError` naming the method, what was expected and what was given,
before the method (or any hook) runs. ``observe`` and ``print`` inputs are checked by their
routes' wrappers (:data:`OBSERVE_INPUT`, :data:`PRINT_INPUT`, compiled into each wrapper);
agents check their own ``reply`` arguments with :func:`check_msg_input`.
"""

from __future__ import annotations

from typing import Any

from .._intercept import Precondition
from ..memory import MemoryBase
from ..message import AudioBlock, Msg
from ._compression import CompressionConfig as _CompressionConfig

__all__ = ["OBSERVE_INPUT", "PRINT_INPUT", "check_msg_input"]


def check_msg_input(
    value: Any, where: str, *, allow_list: bool = True, allow_none: bool = True
) -> None:
    """Check that *value* is a :class:`Msg` (or a list of them, or ``None`` when allowed).

    :param where: what received the value, for the error message (e.g. ``"UserAgent.reply"``).
    :raises TypeError: naming *where*, what was expected and what was given.
    """
    if isinstance(value, Msg) or (allow_none and value is None):
        return
    if allow_list and isinstance(value, list):
        for index, item in enumerate(value):
            if not isinstance(item, Msg):
                raise TypeError(
                    f"{where}: msg[{index}] must be a Msg, not {type(item).__name__}; "
                    "wrap plain text as Msg(name, text, role)"
                )
        return
    expected = (
        "a Msg" + (", a list of Msg" if allow_list else "") + (" or None" if allow_none else "")
    )
    raise TypeError(
        f"{where}: msg must be {expected}, not {type(value).__name__}; "
        "wrap plain text as Msg(name, text, role)"
    )


def _check_observe_input(self: Any, msg: Any) -> None:
    check_msg_input(msg, f"{type(self).__name__}.observe")


def _check_print_input(self: Any, msg: Any, speech: Any) -> None:
    if msg.__class__ is not Msg:
        check_msg_input(msg, f"{type(self).__name__}.print", allow_list=False, allow_none=False)
    if speech is not None:
        _check_speech(speech, f"{type(self).__name__}.print")


def _is_audio(block: Any) -> bool:
    return isinstance(block, AudioBlock) or (
        isinstance(block, dict) and block.get("type") == "audio"
    )


def _check_speech(speech: Any, where: str) -> None:
    """:raises TypeError: when *speech* is not an audio block (or dict form), a list of them or
    ``None``."""
    if _is_audio(speech):
        return
    if isinstance(speech, list | tuple):
        for index, block in enumerate(speech):
            if not _is_audio(block):
                raise TypeError(
                    f"{where}: speech[{index}] must be an AudioBlock (or its dict form with "
                    f"type 'audio'), not {type(block).__name__}"
                )
        return
    raise TypeError(
        f"{where}: speech must be an AudioBlock, a list of AudioBlocks or None, not "
        f"{type(speech).__name__}"
    )


OBSERVE_INPUT = Precondition(
    "{msg} is None or {msg}.__class__ is {Msg}",
    _check_observe_input,
    arguments=(("msg", 0),),
    names={"Msg": Msg},
)
"""What ``observe``'s route checks: a Msg, a list of Msg or None."""

PRINT_INPUT = Precondition(
    "{msg}.__class__ is {Msg} and {speech} is None",
    _check_print_input,
    arguments=(("msg", 0), ("speech", 2)),
    names={"Msg": Msg},
)
"""What ``print``'s route checks: a Msg, and audio blocks (or None) as speech."""


def _check_type(
    what: str, value: Any, kind: type, *, optional: bool = False, shown: str | None = None
) -> None:
    if value is None and optional:
        return
    if not isinstance(value, kind):
        raise TypeError(
            f"ReActAgent {what} must be a {shown or kind.__name__}"
            + (" or None" if optional else "")
            + f", not {type(value).__name__}"
        )


def _check_memory_compresses(memory: Any, config: _CompressionConfig | None) -> None:
    """Refuse, when the agent is built, a memory that compression could not mark.

    :raises TypeError: if compression is on and *memory* keeps ``MemoryBase``'s
        ``update_messages_mark``, which raises (AgentScope would fail at the first compression).
    """
    if config is None or not config.enable:
        return
    if getattr(type(memory), "update_messages_mark", None) is MemoryBase.update_messages_mark:
        raise TypeError(
            f"ReActAgent compression marks compressed messages with "
            f"memory.update_messages_mark(), which {type(memory).__name__} does not implement: "
            "implement it, or turn compression off"
        )


def _check_msg(msg: Any) -> None:
    check_msg_input(msg, "ReActAgent.reply")
