"""Random ids for messages, model responses and tool responses.

Ids come from a private generator seeded from ``os.urandom`` (and reseeded in forked
children): unique like ``uuid4().hex`` (128 random bits, 32 hex digits), at a fraction of the
cost of a system call per id, and unaffected by applications that seed the global ``random``
module. Id creation is on the hot path of every message.
"""

from __future__ import annotations

import os
import random

__all__ = ["new_id"]

_rng = random.Random()
if hasattr(os, "register_at_fork"):  # POSIX only; elsewhere there is no fork
    os.register_at_fork(after_in_child=_rng.seed)
_bits = _rng.getrandbits


def new_id() -> str:
    """A new random id: 32 lowercase hex digits."""
    return _bits(128).to_bytes(16, "big").hex()  # measured cheaper than format() here
