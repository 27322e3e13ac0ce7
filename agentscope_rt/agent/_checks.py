"""What an agent checks of the inputs its hooked methods and callers receive.

The checks raise :class:`TypeError` naming the method, what was expected and what was given,
before the method (or any hook) runs. ``observe`` and ``print`` inputs are checked by the hook
wrappers through :data:`INPUT_CHECKS`; agents check their own ``reply`` arguments with
:func:`check_msg_input`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..message import AudioBlock, Msg

__all__ = ["INPUT_CHECKS", "check_msg_input"]


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


def _check_observe_input(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    msg = args[0] if args else kwargs.get("msg")
    if msg is None or msg.__class__ is Msg:
        return
    check_msg_input(msg, f"{type(self).__name__}.observe")


def _check_print_input(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    msg = args[0] if args else kwargs.get("msg")
    if msg.__class__ is not Msg:
        check_msg_input(msg, f"{type(self).__name__}.print", allow_list=False, allow_none=False)
    speech = args[2] if len(args) > 2 else kwargs.get("speech") if kwargs else None
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


INPUT_CHECKS: dict[str, Callable[[Any, tuple[Any, ...], dict[str, Any]], None]] = {
    "observe": _check_observe_input,
    "print": _check_print_input,
}
