"""Ids: random ids and sequential reply ids are 32 hex digits, unique, also across a fork."""

from __future__ import annotations

import os
import re

import pytest

from agentscope_rt._ids import new_id, sequential_id

HEX32 = re.compile(r"[0-9a-f]{32}")


def test_ids_are_32_hex_digits_and_unique() -> None:
    for make in (new_id, sequential_id):
        ids = [make() for _ in range(10_000)]
        assert all(HEX32.fullmatch(i) for i in ids)
        assert len(set(ids)) == len(ids)


def test_sequential_ids_share_a_prefix_and_count_up() -> None:
    first, second = sequential_id(), sequential_id()
    assert first[:16] == second[:16]
    assert int(second[16:], 16) == int(first[16:], 16) + 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX only")
def test_a_forked_child_makes_other_ids_than_its_parent() -> None:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next ids and leave at once
        try:
            os.write(write_end, f"{new_id()} {sequential_id()}".encode())
        finally:
            os._exit(0)
    os.close(write_end)
    child_random, child_sequential = os.read(read_end, 100).decode().split()
    os.close(read_end)
    os.waitpid(pid, 0)
    parent_random, parent_sequential = new_id(), sequential_id()
    assert child_random != parent_random
    assert child_sequential[:16] != parent_sequential[:16]
