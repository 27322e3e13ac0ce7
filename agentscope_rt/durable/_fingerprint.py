"""Fingerprints: a short digest of a step's input, compared when the step is replayed.

Only what the program decides goes in: the text, names, roles, tool calls and metadata of
messages, the formatted prompt of a model call, a tool call's name and input. What changes
from one execution to the next by design — message ids, timestamps, reply ids, objects'
addresses — stays out, so the same program with the same recorded results makes the same
fingerprints.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import attrs

from ..message import Msg
from ..message.serde import unstructure

__all__ = ["fingerprint", "plain"]


def plain(value: Any) -> Any:
    """*value* as JSON data for a fingerprint (the ``default`` of :func:`json.dumps`)."""
    if isinstance(value, Msg):
        content = value.content
        return {
            "name": value.name,
            "role": value.role,
            "content": content if isinstance(content, str) else unstructure(content),
            "metadata": value.metadata,
        }
    if attrs.has(type(value)):
        return unstructure(value)
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, (bytes, bytearray)):
        return hashlib.blake2b(value, digest_size=16).hexdigest()
    dump = getattr(value, "model_dump", None)  # a pydantic object
    if callable(dump):
        return dump(mode="json")
    # Anything else counts by its type only: its repr may hold an address.
    return f"<{type(value).__qualname__}>"


def fingerprint(value: Any) -> str:
    """A 32-digit hex digest of *value*'s JSON form (see :func:`plain`)."""
    text = json.dumps(value, sort_keys=True, default=plain, ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
