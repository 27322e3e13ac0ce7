"""Random ids for messages, model responses and tool responses.

Ids come from a private generator seeded from ``os.urandom`` (and reseeded in forked
children): unique like ``uuid4().hex`` (128 random bits, 32 hex digits), at a fraction of the
cost of a system call per id, and unaffected by applications that seed the global ``random``
module. Id creation is on the hot path of every message.

Reply ids (one per agent call) come from :func:`sequential_id`: a random prefix per process and
a counter, cheaper still, and just as unique.
"""

from __future__ import annotations

import itertools
import os
import random

__all__ = ["new_id", "sequential_id"]

_rng = random.Random()
_bits = _rng.getrandbits


def new_id() -> str:
    """A new random id: 32 lowercase hex digits."""
    return _bits(128).to_bytes(16, "big").hex()  # measured cheaper than format() here


_prefix = ""
_sequence: itertools.count[int] = itertools.count()


def _start_sequence() -> None:
    global _prefix, _sequence
    _prefix = new_id()[:16]
    # Counting from 2**60, every number has 16 hex digits: the ids keep one length without a
    # padded format, which costs more than the rest of the id here.
    _sequence = itertools.count(1 << 60)


_start_sequence()


def _after_fork_in_child() -> None:
    _rng.seed()
    _start_sequence()  # the parent goes on with the same prefix and numbers


if hasattr(os, "register_at_fork"):  # POSIX only; elsewhere there is no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


def sequential_id() -> str:
    """A new id, 32 lowercase hex digits, unique like :func:`new_id` but cheaper: a random
    prefix per process (new in a forked child) and a counter. Ids made one after another
    share their first half."""
    return f"{_prefix}{next(_sequence):x}"
