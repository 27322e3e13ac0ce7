"""What crosses between a caller and an agent host: messages as JSON data (``Msg.to_dict`` /
``Msg.from_dict``), never pickled live objects."""

from __future__ import annotations

from typing import Any

from .._json import check_json
from ..durable import StepRecord
from ..exception import MessageFormatError
from ..message import Msg

__all__ = ["WireMsg", "as_data", "kwargs_to_wire", "msg_from_wire", "msg_to_wire"]

WireMsg = dict[str, Any] | list[dict[str, Any]] | None
"""A message, a list of messages or ``None``, as JSON data."""


def msg_to_wire(msg: Msg | list[Msg] | None, where: str) -> WireMsg:
    """*msg* as JSON data.

    :raises TypeError: when *msg* is not a Msg, a list of Msg or None.
    """
    if msg is None:
        return None
    if isinstance(msg, Msg):
        return msg.to_dict()
    if isinstance(msg, list | tuple):
        out = []
        for index, item in enumerate(msg):
            if not isinstance(item, Msg):
                raise TypeError(f"{where}: msg[{index}] must be a Msg, not {type(item).__name__}")
            out.append(item.to_dict())
        return out
    raise TypeError(f"{where}: msg must be a Msg, a list of Msg or None, not {type(msg).__name__}")


def msg_from_wire(data: WireMsg) -> Msg | list[Msg] | None:
    """The messages *data* holds (as made by :func:`msg_to_wire`).

    :raises MessageFormatError: when *data* is not a message's JSON form.
    """
    if data is None:
        return None
    if isinstance(data, list):
        return [Msg.from_dict(item) for item in data]
    return Msg.from_dict(data)


def kwargs_to_wire(kwargs: dict[str, Any], where: str) -> dict[str, Any]:
    """*kwargs* if they are JSON data (what a remote reply's extra arguments must be).

    :raises TypeError: naming the argument that is not JSON data (a class, a function...).
    """
    try:
        check_json(kwargs, "kwargs")
    except MessageFormatError as exc:
        raise TypeError(
            f"{where}: the arguments of a remote reply cross as JSON data: {exc}"
        ) from None
    return kwargs


def as_data(record: StepRecord) -> dict[str, Any]:
    """*record* as the keyword arguments of ``StepRecord`` (what crosses to and from a host).
    Not a deep copy: its payload is JSON data already, and Ray copies it as it sends it (a
    deep copy here took about 15% of a host's time in a durable group call, profiled)."""
    return {
        "key": record.key,
        "kind": record.kind,
        "status": record.status,
        "fingerprint": record.fingerprint,
        "payload": record.payload,
        "seq": record.seq,
        "at": record.at,
    }
