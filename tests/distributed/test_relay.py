"""The relay that carries a host's records of a durable run's call to the caller: a step waits
until its record is written, and a fetch whose answer was lost loses nothing. No Ray: the relay
is the host's side, driven here as the caller drives it."""

from __future__ import annotations

import anyio
import pytest

from agentscope_rt.distributed._relay import Relay
from agentscope_rt.durable import DurableRunError, StepRecord


async def test_a_step_goes_on_once_its_record_is_written_and_a_lost_fetch_loses_nothing() -> None:
    relay = Relay()
    done: list[str] = []

    async def step(key: str) -> None:
        await relay.put_step("", "r", StepRecord(key, "chat", "done", "f", {"n": key}))
        done.append(key)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(step, "A#1/chat#1")
            first, ended = await relay.take([])  # waits for the record
            assert [record["key"] for _, record in first] == ["A#1/chat#1"] and not ended
            # The answer of that fetch never reached the caller: the next hands it again,
            # and the step waits until the caller says it wrote it.
            assert await relay.take([]) == (first, False)
            await anyio.wait_all_tasks_blocked()
            assert done == []
            tg.start_soon(step, "A#1/chat#2")
            await anyio.wait_all_tasks_blocked()
            second, _ = await relay.take([first[0][0]])
            assert [record["key"] for _, record in second] == ["A#1/chat#2"]
            await anyio.wait_all_tasks_blocked()
            assert done == ["A#1/chat#1"]
            relay.finish()
            # Ended, but a record is still unwritten: not said to have ended before it is.
            assert await relay.take([]) == (second, False)
            assert await relay.take([second[0][0]]) == ([], True)
    assert done == ["A#1/chat#1", "A#1/chat#2"]


async def test_a_relay_only_writes() -> None:
    with pytest.raises(DurableRunError, match="cannot open a run"):
        await Relay().acquire("", "r")


async def test_a_question_is_handed_with_every_fetch_until_the_caller_answers_it() -> None:
    relay = Relay()
    got: list[list[StepRecord]] = []

    async def ask() -> None:
        got.append(await relay.ask(["A#2", "B#2"]))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            # A fetch waits for the question as it waits for a record.
            assert await relay.take([]) == ([], False) and relay.question == ["A#2", "B#2"]
            # That answer was lost: the question stays for the next fetch.
            assert await relay.take([]) == ([], False) and relay.question == ["A#2", "B#2"]
            relay.answer([{"key": "A#2", "kind": "call", "status": "done", "fingerprint": "f"}])
            relay.answer([])  # the same answer come twice: nothing more
            assert relay.question is None
    assert [[record.key for record in records] for records in got] == [["A#2"]]
