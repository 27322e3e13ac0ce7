"""Random ids for messages, replies, model responses and tool responses.

Ids come from a private generator seeded from ``os.urandom`` (and reseeded in forked
children): unique like ``uuid4().hex`` (128 random bits, 32 hex digits), and unaffected by
applications that seed the global ``random`` module. Id creation is on the hot path of every
message, so ids are made 64 at a time, in one draw of random bits turned into hex digits by C
code, and handed out one by one: a list pop per id instead of three conversions.
"""

from __future__ import annotations

import os
import random

__all__ = ["new_id"]

_BATCH = 64
_rng = random.Random()
_bits = _rng.getrandbits
_pool: list[str] = []
_take = _pool.pop


def _refill() -> None:
    # One hex string, a space after every 16 bytes (32 digits), split into the ids.
    _pool.extend(_bits(128 * _BATCH).to_bytes(16 * _BATCH, "big").hex(" ", 16).split())


def new_id() -> str:
    """A new random id: 32 lowercase hex digits. Safe to call from any thread."""
    while True:
        try:
            return _take()
        except IndexError:  # empty (another thread may empty it again before we take one)
            _refill()


def _after_fork_in_child() -> None:
    # The parent goes on handing out the ids already made: the child must not.
    _pool.clear()
    _rng.seed()


if hasattr(os, "register_at_fork"):  # POSIX only; elsewhere there is no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)
