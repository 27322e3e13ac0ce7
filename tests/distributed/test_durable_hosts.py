"""Agents on agent hosts in durable runs: their model and tool calls are recorded under the
proxy's call keys; when the host dies mid-call, a new host takes its place, the agents come
back from their recorded states, and the call in flight is made again through the same
records; a run opened again replays on new hosts. Each test starts hosts (processes) on the
session's local Ray cluster; one runs the program as a script and kills its process."""

from __future__ import annotations

import datetime
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.agent import CUT_OFF_TEXT, GenerateReason
from agentscope_rt.distributed import AgentHost, AgentHostDiedError
from agentscope_rt.durable import SQLiteRunStore, durable_run
from agentscope_rt.message import Msg

from ._agents import gate, make_noter, read_log
from ._durable_program import ROUNDS, program, wait_for

ROOT = Path(__file__).resolve().parent.parent.parent


def _chats(log: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return sorted((e["agent"], e["count"]) for e in log if e["what"] == "chat")


def _cut_off(transcripts: list[list[Any]], texts: set[str]) -> list[list[Any]]:
    """*transcripts* with the results of the tool calls noting *texts* cut off."""
    cut = [{"type": "text", "text": CUT_OFF_TEXT}]
    noted = [[{"type": "text", "text": f"noted {text}"}] for text in texts]
    return [
        [
            [name, role, [dict(b, output=cut) if b.get("output") in noted else b for b in blocks]]
            for name, role, blocks in transcript
        ]
        for transcript in transcripts
    ]


async def _killed_and_clean(
    ray: Any, tmp_path: Path, fanout: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The program run clean, then killed mid-call: for each, its transcripts, its run and
    its log (and for the killed one, when the kill was)."""
    runs = []
    for name in ("clean", "killed"):
        folder = tmp_path / name
        await anyio.Path(folder).mkdir()
        killed: list[float] = []
        transcripts, run = await program(
            ray,
            str(folder),
            tmp_path / f"{name}.db",
            killed if name == "killed" else None,
            fanout=fanout,
        )
        log = read_log(str(folder))
        runs.append({"transcripts": transcripts, "run": run, "log": log, "killed": killed})
    return runs[0], runs[1]


def _check_the_rule(clean: dict[str, Any], killed: dict[str, Any], waiting: int) -> set[str]:
    """The tools that were running when the host died started once and never ended; the
    calls made again on the new host got the cut-off note for them instead of running them
    again. Every other tool call ran once and ended, the model was called once per step as
    in the clean run (the model calls recorded before the kill were replayed, not made
    again), and the transcripts are the clean run's but for the cut-off results. The texts
    of the tools cut off."""
    log = killed["log"]
    waited = {e["text"] for e in log if e["what"] == "tool-waits"}
    starts = [e["text"] for e in log if e["what"] == "tool-start"]
    ends = [e["text"] for e in log if e["what"] == "tool-end"]
    assert len(waited) == waiting and len(killed["killed"]) == 1
    assert sorted(starts) == sorted(e["text"] for e in clean["log"] if e["what"] == "tool-start")
    assert len(set(starts)) == len(starts) and sorted(ends) == sorted(set(starts) - waited)
    assert _chats(log) == _chats(clean["log"])
    assert clean["run"].replayed == 0 and killed["run"].replayed >= waiting
    expected = _cut_off(clean["transcripts"], waited)
    assert killed["transcripts"] == expected != clean["transcripts"]
    return waited


def _log_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "agentscope_rt.distributed"]


async def test_a_host_killed_mid_tool_call_is_replaced_and_the_run_goes_on(
    tmp_path: Path, ray_cluster: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "agentscope_rt.distributed")
    with anyio.fail_after(300):
        clean, killed = await _killed_and_clean(ray_cluster, tmp_path, fanout=False)
    (waited,) = _check_the_rule(clean, killed, 1)

    # One warning says the host was replaced; A (in flight) and B (idle on the host, its
    # memory holding the first round: the transcripts show it) are restored from their
    # recorded states.
    lines = [r.getMessage() for r in _log_lines(caplog)]
    assert sum("died; a new one answers" in line for line in lines) == 1
    assert (
        sum("restored on the new agent host 'h-durable' from its last" in line for line in lines)
        == 2
    )

    # Recovery: from the kill to the new host answering, to the cut-off record written by
    # the call made again there, and to its next model call (its first live step).
    kill = killed["killed"][0]
    (replaced,) = [r for r in _log_lines(caplog) if "died" in r.getMessage()]
    first_live = min(e["t"] for e in killed["log"] if e["t"] > kill and e["what"] == "chat")
    store = SQLiteRunStore(tmp_path / "killed.db")
    records = {r.key: r for r in await store.load_steps("", "r")}
    await store.aclose()
    cut_record = records[f"A#{ROUNDS}/tool:{waited}#1"]
    written = datetime.datetime.fromisoformat(cut_record.at).timestamp()
    print(  # the figures the docs quote
        f"recovery: kill -> new host answers {replaced.created - kill:.2f} s "
        f"({replaced.args[1]:.2f} s of it starting the host), -> cut-off record "
        f"{written - kill:.2f} s, -> next model call {first_live - kill:.2f} s"
    )
    assert records["snapshot:A"].kind == "snapshot"

    # Opened again on a new host, the run replays whole: no model call, no tool, same end.
    folder = str(tmp_path / "killed")
    again, replayed = await program(ray_cluster, folder, tmp_path / "killed.db")
    assert again == killed["transcripts"] and read_log(folder) == killed["log"]
    assert replayed.recorded == 0 and replayed.replayed > killed["run"].replayed


async def test_calls_in_flight_on_a_killed_host_are_all_made_again_on_one_new_host(
    tmp_path: Path, ray_cluster: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "agentscope_rt.distributed")
    with anyio.fail_after(300):
        clean, killed = await _killed_and_clean(ray_cluster, tmp_path, fanout=True)
    _check_the_rule(clean, killed, 2)
    lines = [r.getMessage() for r in _log_lines(caplog)]
    assert sum("died; a new one answers" in line for line in lines) == 1
    assert sum("restored on the new agent host" in line for line in lines) == 2


async def _died_at_the_gate(folder: Path, db: Path, backend: str) -> float:
    """Run the program as a script on that backend, and kill its process (its Ray cluster
    and its host go with it) while A's tool waits in the last round; when."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    script = [sys.executable, "-m", "tests.distributed._durable_program", str(folder), str(db)]
    # The child writes its errors there (a file: nothing has to drain it).
    with open(folder.parent / "driver.err", "wb") as err:  # noqa: ASYNC230
        process = await anyio.open_process(
            [*script, backend], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err
        )
    async with process:
        try:
            while not any(e["what"] == "tool-waits" for e in read_log(str(folder))):
                assert process.returncode is None, (folder.parent / "driver.err").read_text()
                await anyio.sleep(0.05)
            return time.time()
        finally:
            process.kill()
            await process.wait()


async def test_a_run_whose_program_died_mid_call_resumes_on_new_hosts(
    tmp_path: Path, ray_cluster: Any, anyio_backend_name: str
) -> None:
    clean_folder, folder = tmp_path / "clean", tmp_path / "died"
    await anyio.Path(clean_folder).mkdir()
    await anyio.Path(folder).mkdir()
    with anyio.fail_after(300):
        transcripts, clean_run = await program(ray_cluster, str(clean_folder), tmp_path / "c.db")
        died = await _died_at_the_gate(folder, tmp_path / "d.db", anyio_backend_name)
        # The same program, started again on this process's cluster: new host, same run.
        resumed, run = await program(ray_cluster, str(folder), tmp_path / "d.db")
    clean = {"transcripts": transcripts, "run": clean_run, "log": read_log(str(clean_folder))}
    again = {"transcripts": resumed, "run": run, "log": read_log(str(folder)), "killed": [died]}
    assert run.resumed
    _check_the_rule(clean, again, 1)


async def _interrupted_call(ray: Any, folder: str, db: Path, interrupt: bool) -> tuple[Any, ...]:
    """A's one call in run "r", interrupted while its tool waits (or replayed): its answer,
    why it ended, and the run."""
    store = SQLiteRunStore(db)
    answers: list[Msg] = []
    try:
        async with AgentHost("h-interrupt") as host:
            agent = await host.create_agent(make_noter, name="A", folder=folder)

            async def call() -> None:
                answers.append(await agent(Msg("user", "go", "user")))

            async with durable_run("r", store) as run, anyio.create_task_group() as tg:
                tg.start_soon(call)
                if interrupt:
                    await wait_for(folder, "tool-waits", 1)
                    agent.interrupt()
            reason = agent.generate_reason
    finally:
        await store.aclose()
    return answers[0].get_text_content(), reason, run


async def test_a_remote_call_interrupted_in_a_durable_run_replays_interrupted(
    tmp_path: Path, ray_cluster: Any
) -> None:
    folder = str(tmp_path)
    await anyio.Path(gate(folder, "A")).touch()
    with anyio.fail_after(300):
        first = await _interrupted_call(ray_cluster, folder, tmp_path / "r.db", True)
        again = await _interrupted_call(ray_cluster, folder, tmp_path / "r.db", False)
    assert first[:2] == again[:2] and first[1] == GenerateReason.INTERRUPTED
    # Replayed on the new host: the model and the tool were not called again.
    assert [e["what"] for e in read_log(folder)] == ["chat", "tool-start", "tool-waits"]
    assert again[2].recorded == 0 and again[2].replayed >= 2


async def test_a_call_that_kills_its_host_each_time_gives_up_after_three_hosts(
    tmp_path: Path, ray_cluster: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "agentscope_rt.distributed")
    folder = str(tmp_path)
    await anyio.Path(tmp_path / "crash-A").touch()
    store = SQLiteRunStore(tmp_path / "r.db")
    with anyio.fail_after(300):
        async with AgentHost("h-crash") as host:
            agent = await host.create_agent(make_noter, name="A", folder=folder)
            with pytest.raises(AgentHostDiedError, match=r"died under this call .* 3 times"):
                async with durable_run("r", store):
                    await agent(Msg("user", "go", "user"))
    await store.aclose()
    assert [e["what"] for e in read_log(folder)] == ["chat"] * 3
    lines = [r.getMessage() for r in _log_lines(caplog)]
    assert sum("died; a new one answers" in line for line in lines) == 2
