"""Ids: random, 32 hex digits, unique, also across threads and a fork."""

from __future__ import annotations

import itertools
import os
import re
import threading

import pytest

from agentscope_rt import _ids
from agentscope_rt._ids import new_id

HEX32 = re.compile(r"[0-9a-f]{32}")


def test_ids_are_32_hex_digits_and_unique() -> None:
    ids = [new_id() for _ in range(10_000)]  # many batches
    assert all(HEX32.fullmatch(i) for i in ids)
    assert len(set(ids)) == len(ids)


def test_ids_are_random_not_counted() -> None:
    # Consecutive ids share no prefix beyond chance (a counter would share most digits).
    ids = [new_id() for _ in range(200)]
    shared = sum(a[:4] == b[:4] for a, b in itertools.pairwise(ids))
    assert shared < 5


def test_threads_taking_ids_at_once_get_distinct_ids() -> None:
    results: list[list[str]] = []

    def take() -> None:
        results.append([new_id() for _ in range(5_000)])

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [i for ids in results for i in ids]
    assert len(every) == 20_000
    assert len(set(every)) == len(every)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX only")
def test_a_forked_child_makes_other_ids_than_its_parent() -> None:
    new_id()  # the parent holds ids made in advance: the child must not hand them out
    assert _ids._pool
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next ids and leave at once
        try:
            os.write(write_end, " ".join(new_id() for _ in range(3)).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    child_ids = os.read(read_end, 200).decode().split()
    os.close(read_end)
    os.waitpid(pid, 0)
    parent_ids = [new_id() for _ in range(3)]
    assert len(child_ids) == 3
    assert not set(child_ids) & set(parent_ids)
