"""Durable replies: a reply checkpointed to a session resumes after its process died.

The SIGKILL test runs a five-step task in a child process (``_durable_child.py``), kills it at
a random moment, runs the same program again on the same session, and checks that the resumed
reply ends with the same answer and the same memory as an uninterrupted run, apart from tool
calls cut off by the kill (each answered by the cut-off note and done again), and that no
completed tool call ran twice.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.agent._durable import CUT_OFF_TEXT
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel, reply, tool_call
from agentscope_rt.session import JSONSession
from agentscope_rt.tool import Toolkit, ToolResponse

from . import _durable_child

CHILD = _durable_child.__file__
RUNS = 30


def _run_child(
    db: Path, backend: str, log: Path, kill_after: float | None
) -> dict[str, Any] | None:
    child = subprocess.Popen(
        [sys.executable, CHILD, str(db), backend, str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    if kill_after is None:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        return json.loads(out.splitlines()[-1])
    assert child.stdout.readline().strip() == "ready"
    time.sleep(kill_after)
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate()
    lines = out.splitlines()
    return json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None


def _finished_before_the_kill(db: Path) -> bool:
    from agentscope_rt.agent._durable import PROGRESS_KEY, ReplyProgress
    from agentscope_rt.session import SQLiteSession

    progress = ReplyProgress()
    progress.in_progress = True  # stays so when nothing was saved yet

    async def load() -> None:
        await SQLiteSession(db).load_session_state("task-1", **{PROGRESS_KEY: progress})

    anyio.run(load)
    return not progress.in_progress


def _without_cut_offs(memory: list[list[Any]]) -> list[list[Any]]:
    cut = {entry[1] for entry in memory if entry[0] == "result" and entry[2] == "cut off"}
    # The reasoning text that came with a cut-off call goes with it (the summary lists a
    # message's text just before its calls).
    kept = [
        e
        for i, e in enumerate(memory)
        if not (e[0] in ("call", "result") and e[1] in cut)
        and not (
            e[0] == "assistant"
            and i + 1 < len(memory)
            and memory[i + 1][0] == "call"
            and memory[i + 1][1] in cut
        )
    ]
    # A step done again after a cut-off has a new call id; the rest is the same.
    return [
        [e[0], e[1].rsplit("-", 1)[0], *e[2:]] if e[0] in ("call", "result") else e for e in kept
    ]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_reply_killed_at_random_moments_resumes_to_the_same_end(
    backend: str, tmp_path: Path
) -> None:
    expected = _run_child(tmp_path / "clean.db", backend, tmp_path / "clean.log", None)
    assert expected is not None
    baseline = _without_cut_offs(expected["memory"])
    rng = random.Random(backend)
    resumed_mid_reply = 0
    for run in range(RUNS):
        db, log = tmp_path / f"run{run}.db", tmp_path / f"run{run}.log"
        killed = _run_child(db, backend, log, rng.uniform(0.0, 0.5))
        if killed is None and _finished_before_the_kill(db):
            # The reply had ended (its last checkpoint says so) and only the printing was
            # cut: running the program again would be a new question, not a resumed reply.
            continue
        final = killed or _run_child(db, backend, log, None)
        assert final is not None
        resumed_mid_reply += killed is None
        assert final["answer"] == expected["answer"], run
        memory = final["memory"]
        # Every call has exactly one result, and the memory matches the clean run's.
        calls = [e[1] for e in memory if e[0] == "call"]
        results = [e[1] for e in memory if e[0] == "result"]
        assert calls == results, (run, memory)
        assert _without_cut_offs(memory) == baseline, (run, memory)
        # Completed calls never ran again: each step ran at most once per call of it, and a
        # step completed once.
        ran = Counter(int(n) for n in log.read_text().split()) if log.exists() else Counter()
        attempts = Counter(e[2] for e in memory if e[0] == "call")
        assert all(ran[n] <= attempts[n] for n in ran), (run, ran, attempts)
        done = Counter(e[2].split()[1] for e in memory if e[0] == "result" and e[2] != "cut off")
        assert all(v == 1 for v in done.values()), (run, memory)
    assert resumed_mid_reply >= RUNS // 3  # most kills landed mid-reply


# -- in one process -------------------------------------------------------------------------


def _agent(script: list[Any], ran: list[str]) -> ReActAgent:
    async def lookup(city: str) -> ToolResponse:
        """Look a city up.

        Args:
            city: The city.
        """
        ran.append(city)
        await anyio.sleep(0 if city != "Slow" else 60)
        return ToolResponse(content=[{"type": "text", "text": f"{city}: sunny"}])  # type: ignore[list-item]

    toolkit = Toolkit()
    toolkit.register_tool_function(lookup)
    agent = ReActAgent(
        name="Friday",
        sys_prompt="",
        model=ScriptedChatModel(script),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
    )
    agent.set_console_output_enabled(False)
    return agent


async def test_a_reply_cancelled_mid_tool_resumes_in_a_new_agent(tmp_path: Path) -> None:
    session = JSONSession(tmp_path)
    ran: list[str] = []
    first = _agent(
        [
            reply(
                tool_call("lookup", {"city": "Oslo"}, id="a"),
                tool_call("lookup", {"city": "Slow"}, id="b"),
                tool_call("lookup", {"city": "Rome"}, id="c"),
            )
        ],
        ran,
    )
    first.checkpoint_to(session, "job")
    with anyio.move_on_after(0.5):  # the process "dies" while the second call runs
        await first(Msg("user", "Weather?", "user"))
    assert ran == ["Oslo", "Slow"]

    # A new agent with the same session and input: Oslo is not looked up again, Slow was cut
    # off, Rome had not started and runs now; then the model answers.
    second = _agent(["Oslo and Rome are sunny."], ran)
    second.checkpoint_to(session, "job")
    answer = await second(Msg("user", "Weather?", "user"))
    assert answer.get_text_content() == "Oslo and Rome are sunny."
    assert ran == ["Oslo", "Slow", "Rome"]
    results = {
        b["id"]: b["output"]
        for m in await second.memory.get_memory()
        for b in m.get_content_blocks("tool_result")
    }
    assert results["b"] == CUT_OFF_TEXT
    assert results["a"][0]["text"] == "Oslo: sunny" and results["c"][0]["text"] == "Rome: sunny"
    memory = await second.memory.get_memory()
    assert memory[0].get_text_content() == "Weather?"
    assert len(await second.memory.get_memory(mark=None)) == 6  # input, calls, 3 results, answer

    # The next process finds the reply finished: a new question starts a new reply.
    third = _agent(["Anything else?"], ran)
    third.checkpoint_to(session, "job")
    assert (await third(Msg("user", "Thanks", "user"))).get_text_content() == "Anything else?"


async def test_a_reply_that_had_answered_before_dying_is_not_run_again(tmp_path: Path) -> None:
    session = JSONSession(tmp_path)
    ran: list[str] = []
    first = _agent(["Done."], ran)
    first.checkpoint_to(session, "job")
    await first(Msg("user", "Go", "user"))
    # Simulate a death after the answer was checkpointed but before the reply was marked done.
    first._durable.progress.in_progress = True  # type: ignore[union-attr]
    first._durable.progress.answer = None  # type: ignore[union-attr]  # (the input is kept)
    await first._durable.checkpoint()  # type: ignore[union-attr]

    second = _agent([], ran)  # a model call would fail: the script is empty
    second.checkpoint_to(session, "job")
    answer = await second(Msg("user", "Go", "user"))
    assert answer.get_text_content() == "Done."


async def test_a_different_input_closes_the_unfinished_reply(tmp_path: Path) -> None:
    session = JSONSession(tmp_path)
    ran: list[str] = []
    first = _agent([reply(tool_call("lookup", {"city": "Slow"}, id="s"))], ran)
    first.checkpoint_to(session, "job")
    with anyio.move_on_after(0.3):
        await first(Msg("user", "Weather?", "user"))

    second = _agent(["Hello!"], ran)
    second.checkpoint_to(session, "job")
    answer = await second(Msg("user", "Never mind, hi.", "user"))
    assert answer.get_text_content() == "Hello!"
    memory = await second.memory.get_memory()
    results = [b for m in memory for b in m.get_content_blocks("tool_result")]
    assert [r["output"] for r in results] == [CUT_OFF_TEXT]
    assert ran == ["Slow"]


def test_checkpoint_to_needs_a_session() -> None:
    agent = _agent([], [])
    with pytest.raises(TypeError, match="save_session_state"):
        agent.checkpoint_to(object(), "job")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="session_id"):
        agent.checkpoint_to(JSONSession("."), "")
