"""Fast deep copies of JSON-like data and blocks.

``copy.deepcopy`` costs tens of microseconds per message because of its memo and dispatch
machinery; messages hold only JSON data and blocks, so a direct walk is several times cheaper.
"""

from __future__ import annotations

import copy
from typing import Any

_IMMUTABLE = (str, int, float, bool, type(None), bytes, tuple, frozenset)


def copy_json(value: Any) -> Any:
    """Return a deep copy of *value* (dicts, lists, blocks; other objects via ``deepcopy``)."""
    cls = value.__class__
    if cls is str or value is None or cls is int or cls is float or cls is bool:
        return value
    if cls is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if cls is list:
        return [copy_json(v) for v in value]
    if hasattr(cls, "__attrs_attrs__") and hasattr(cls, "copy"):
        return value.copy()
    if isinstance(value, _IMMUTABLE):
        return value
    return copy.deepcopy(value)
