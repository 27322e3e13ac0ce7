"""Seeing durable runs: inspect_run's report (steps in order, per-agent counts, where a run
that did not finish stopped), its plain text, and the command line in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from agentscope_rt.agent import CUT_OFF_TEXT
from agentscope_rt.durable import (
    PROGRAM,
    SUMMARY_CHARS,
    AgentCounts,
    DurableRunError,
    InFlightCall,
    SQLiteRunStore,
    StepRecord,
    durable_run,
    format_report,
    format_runs,
    inspect_run,
)

from ._recorded import DEBATE_KEYS, STUCK_TOOL, ada, cyd, record_runs


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteRunStore]:
    runs = SQLiteRunStore(tmp_path / "runs.db")
    await record_runs(runs)
    yield runs
    await runs.aclose()


async def test_a_finished_run_shows_its_steps_in_order_and_counts_per_agent(
    store: SQLiteRunStore,
) -> None:
    report = await inspect_run(store, "debate", "ann")
    assert report.info.status == "finished" and report.info.steps == len(DEBATE_KEYS)
    assert [row.key for row in report.steps] == DEBATE_KEYS
    assert [row.seq for row in report.steps] == sorted(row.seq for row in report.steps)
    summaries = {row.key: row.summary for row in report.steps}
    assert summaries["Ada#1/chat#1"] == 'note({"text": "bikes"})'
    assert summaries["Ada#1/tool:n1#1"] == "noted bikes"
    assert summaries["Ada#1/chat#2"] == "Bicycles win on short trips."
    assert summaries["Ada#1"] == "Bicycles win on short trips."
    assert summaries["dice#1"] == "4"
    assert [row.agent for row in report.steps] == ["Ada"] * 4 + ["Brook"] * 2 + [PROGRAM]
    assert report.agents == [
        AgentCounts("Ada", calls=1, chats=2, tools=1),
        AgentCounts("Brook", calls=1, chats=1, tools=0),
        AgentCounts(PROGRAM),
    ]
    assert report.where_stopped is None


async def test_a_crashed_run_says_which_call_was_in_flight_and_which_tool_was_cut_off(
    store: SQLiteRunStore,
) -> None:
    report = await inspect_run(store, "stuck", "ann")
    assert report.info.status == "failed"
    stopped = report.where_stopped
    assert stopped is not None
    assert [(row.key, row.status) for row in stopped.last_calls] == [("Ada#1", "done")]
    assert stopped.in_flight == [InFlightCall("Cyd#1", "Cyd", 2, STUCK_TOOL)]
    assert [(row.key, row.summary) for row in stopped.tools_started] == [
        (STUCK_TOOL, "started, no result recorded")
    ]
    text = format_report(report)
    assert "failed (resumable)" in text
    assert "Cyd#1: 2 step(s) recorded, the last Cyd#1/tool:c1#1" in text
    assert "tools started but not done (they get the cut-off result on resume)" in text

    # What the report says is what resuming does: the started tool is not run again, it
    # gets the cut-off result, and the call completes.
    def again() -> None:
        raise AssertionError("a tool recorded as started ran again")

    resumed = cyd(["I stop here."], again)
    async with durable_run("stuck", store, user_id="ann"):
        await ada()()
        await resumed()
    after = await inspect_run(store, "stuck", "ann")
    assert after.info.status == "finished" and after.where_stopped is None
    tool = next(row for row in after.steps if row.key == STUCK_TOOL)
    assert tool.status == "done" and tool.summary.startswith(CUT_OFF_TEXT[:40])
    assert after.steps[-1].key == "Cyd#1" and after.steps[-1].summary == "I stop here."


async def test_every_kind_of_step_is_summarised_in_one_line(tmp_path: Path) -> None:
    store = SQLiteRunStore(tmp_path / "runs.db")
    long = "word " * 100
    records = [
        # An agent whose name holds '/', observed by Bob, and a reply too long for a line.
        ("A%2Fx#1", "call", "done", {"reply": {"content": long}}),
        ("A%2Fx#1/observe:Bob#1/chat#1", "chat", "done", {"response": {"content": "seen"}}),
        ("Eve#1/embed#1", "embed", "done", {"embeddings": [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]}),
        ("Eve#1/dice#1", "step", "done", {"a": [1, 2]}),
        ("Eve#1/chat#1", "chat", "partial", "a payload of another shape"),
        ("Eve#1/tool:t1", "tool", "done", {"content": [{"type": "image"}]}),
    ]
    await store.acquire("", "hand")
    for seq, (key, kind, status, payload) in enumerate(records, 1):
        await store.put_step("", "hand", StepRecord(key, kind, status, "f", payload, seq))
    await store.release("", "hand", "failed")
    report = await inspect_run(store, "hand")
    await store.aclose()
    rows = {row.key: row for row in report.steps}
    call = rows["A%2Fx#1"]
    assert call.agent == "A/x" and len(call.summary) == SUMMARY_CHARS
    assert call.summary.endswith("...") and "  " not in call.summary
    assert rows["A%2Fx#1/observe:Bob#1/chat#1"].agent == "Bob"
    assert rows["Eve#1/embed#1"].summary == "2 vector(s) of 3 dimensions"
    assert rows["Eve#1/dice#1"].summary == '{"a": [1, 2]}'
    assert rows["Eve#1/chat#1"].summary == '"a payload of another shape"'
    assert rows["Eve#1/tool:t1"].summary == "[image]"
    assert [(c.agent, c.calls, c.chats, c.tools) for c in report.agents] == [
        ("A/x", 1, 0, 0),
        ("Bob", 0, 1, 0),
        ("Eve", 0, 1, 1),
    ]
    stopped = report.where_stopped
    assert stopped is not None
    assert stopped.in_flight == [InFlightCall("Eve#1", "Eve", 4, "Eve#1/tool:t1")]


async def test_an_unknown_run_or_another_users_run_is_refused_by_name(
    store: SQLiteRunStore,
) -> None:
    with pytest.raises(DurableRunError, match="no run 'nope' of user 'ann'"):
        await inspect_run(store, "nope", "ann")
    with pytest.raises(DurableRunError, match="no run 'debate' of user 'bob'"):
        await inspect_run(store, "debate", "bob")


async def test_the_text_shows_the_last_steps_asked_for(store: SQLiteRunStore) -> None:
    report = await inspect_run(store, "debate", "ann")
    text = format_report(report, last_steps=2)
    assert "(5 earlier step(s) not shown)" in text
    assert "Brook#1  " in text and "dice#1" in text and "Ada#1/chat#1" not in text
    assert "where it stopped" not in text
    counts = [line.split() for line in text.splitlines() if line.startswith("  Ada ")]
    assert counts == [["Ada", "1", "2", "1"]]
    everything = format_report(report, last_steps=100)
    assert "not shown" not in everything and all(key in everything for key in DEBATE_KEYS)
    assert "not shown" not in format_report(report)
    assert "(7 earlier step(s) not shown)" in format_report(report, last_steps=0)
    with pytest.raises(ValueError, match="0 or more"):
        format_report(report, last_steps=-1)
    runs = format_runs(await store.list_runs())
    assert runs.splitlines()[0].split() == [
        "run",
        "user",
        "status",
        "steps",
        "updated",
        "last",
        "step",
    ]
    assert {line.split()[0] for line in runs.splitlines()[1:]} == {"debate", "stuck", "solo"}
    assert format_runs([]) == "no runs"


# -- the command line ------------------------------------------------------------------------


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"

    async def record() -> None:
        store = SQLiteRunStore(path)
        await record_runs(store)
        await store.aclose()

    anyio.run(record)
    return path


def cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentscope_rt.durable", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_the_command_line_lists_runs_and_shows_one(db: Path) -> None:
    listed = cli("--db", db, "list", cwd=db.parent)
    assert listed.returncode == 0, listed.stderr
    assert {line.split()[0] for line in listed.stdout.splitlines()[1:]} == {
        "debate",
        "stuck",
        "solo",
    }
    bobs = cli("--db", db, "list", "--user", "bob", cwd=db.parent)
    assert [line.split()[:3] for line in bobs.stdout.splitlines()[1:]] == [
        ["solo", "bob", "finished"]
    ]
    # The default database is ./agentscope_runs.db, as SQLiteRunStore's.
    db.rename(db.parent / "agentscope_runs.db")
    shown = cli("show", "stuck", "--user", "ann", "--steps", "2", cwd=db.parent)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert out.startswith("run 'stuck' of user 'ann': failed (resumable)")
    assert "calls in flight" in out and f"    {STUCK_TOOL} (seq" in out
    assert "earlier step(s) not shown" in out
    assert out.rstrip().splitlines()[-1].split()[3:6] == ["tool", "started", STUCK_TOOL]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--db", "missing.db", "list"], "no run database at missing.db"),
        (["--db", "runs.db", "show", "nope"], "no run 'nope' of user '' in this store"),
        (["--db", "runs.db", "show", "debate", "--steps", "-1"], "must be 0 or more"),
        (["--db", "runs.db"], "the following arguments are required"),
    ],
)
def test_the_command_line_refuses_with_a_message_and_status_2(
    db: Path, args: list[str], message: str
) -> None:
    result = cli(*args, cwd=db.parent)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (db.parent / "missing.db").exists()


@pytest.mark.parametrize("option", ["--postgres", "--redis"])
def test_a_server_store_is_built_by_name_and_its_address_never_shown(
    tmp_path: Path, option: str
) -> None:
    # Nothing listens on port 1: whether or not this installation has the store class, the
    # command fails with a message, and the password in the address is not in it.
    scheme = "postgresql" if option == "--postgres" else "redis"
    result = cli(option, f"{scheme}://user:s3cret-pw@127.0.0.1:1/0", "list", cwd=tmp_path)
    assert result.returncode in (1, 2)
    assert "Traceback" not in result.stderr and "s3cret-pw" not in result.stderr
    assert result.stderr.startswith("python -m agentscope_rt.durable: ")


async def test_a_tool_cut_off_by_cancelling_the_run_is_reported_as_started(
    tmp_path: Path,
) -> None:
    from agentscope_rt.message import Msg

    from ._world import World

    world = World()
    world.tool_gate, world.tool_entered = anyio.Event(), anyio.Event()
    alice = world.agent("Alice")
    store = SQLiteRunStore(tmp_path / "runs.db")
    try:
        with anyio.CancelScope() as scope:
            async with durable_run("cut", store), anyio.create_task_group() as tg:
                tg.start_soon(alice, Msg("user", "Hi.", "user"))
                await world.tool_entered.wait()
                scope.cancel()
        report = await inspect_run(store, "cut")
    finally:
        await store.aclose()
    assert report.where_stopped is not None
    assert [row.key for row in report.where_stopped.tools_started] == ["Alice#1/tool:Alice-2#1"]
    assert [call.key for call in report.where_stopped.in_flight] == ["Alice#1"]


async def test_an_agent_state_recorded_for_a_host_is_shown_as_that_agents(tmp_path: Path) -> None:
    store = SQLiteRunStore(tmp_path / "runs.db")
    try:
        async with durable_run("hosted", store) as run:
            await run.record_snapshot("Ada/2", {"memory": {"content": []}, "name": "Ada/2"})
        report = await inspect_run(store, "hosted")
    finally:
        await store.aclose()
    (row,) = report.steps
    assert (row.kind, row.agent) == ("snapshot", "Ada/2")
    assert row.summary.startswith("the agent's state (")
