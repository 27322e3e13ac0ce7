"""The AgentScope-shaped examples run unattended (``AGENTSCOPE_RT_EXAMPLES=1``) on both backends
and print what their docstrings promise.

Each example runs as a subprocess, as ``nox -s examples`` runs it, with this checkout first on
the path and console output on (the examples' output is what is checked).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BACKENDS = ["asyncio", "trio"]


def run_example(name: str, *args: str) -> str:
    """Run ``examples/<name>`` unattended; return its standard output (it must exit with 0)."""
    env = dict(os.environ)
    env["AGENTSCOPE_RT_EXAMPLES"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    # The suite switches console output off for itself; the examples must print.
    env.pop("AGENTSCOPE_RT_DISABLE_CONSOLE_OUTPUT", None)
    env.pop("OPENAI_API_KEY", None)  # the offline model, whatever the developer's shell holds
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.local_model
@pytest.mark.parametrize("backend", BACKENDS)
def test_user_chat_loop_takes_the_scripted_turns(backend: str) -> None:
    out = run_example("02_user_chat_loop.py", backend)
    for line in ["Hello! Who are you?", "What colour is a ripe banana?"]:
        assert f"[scripted] User types: {line}" in out
        assert f"\nUser: {line}\n" in out
    assert "\nUser: exit\n" in out
    # Friday printed (streamed) one answer after each of the two lines, none after "exit".
    assert len(re.findall(r"^Friday: \S", out, flags=re.MULTILINE)) == 2
    assert out.index("User: exit") > out.rindex("Friday: ")
    assert "2 turns; Friday's memory holds 4 messages" in out


@pytest.mark.parametrize("backend", BACKENDS)
def test_werewolf_ends_with_a_winner_after_saved_rounds(backend: str) -> None:
    out = run_example("24_werewolf.py", backend)
    lines = out.splitlines()
    winner = lines[-1]
    assert re.fullmatch(r"Winner: the (villagers|werewolves)", winner), winner
    saved = [line for line in lines if line.startswith("[session] round ")]
    assert saved, out
    for number, line in enumerate(saved, start=1):
        assert line.startswith(f"[session] round {number} saved (7 modules in werewolf.json)")
        assert f"reloaded: round {number}, alive " in line
    # Every vote names a player, and the night hub holds only werewolves.
    assert "Moderator: Night 1. Werewolves Bob, Erin, open your eyes" in out
    votes = [line for line in lines if line.startswith("Moderator: Votes: ")]
    assert len(votes) >= 2 * len(saved) - 1
    assert all(re.fullmatch(r"Moderator: Votes: (\w+ -> \w+(, )?)+\.", v) for v in votes)
    assert re.search(r"Moderator: \w+ is out\. \w+ was a (villager|werewolf|seer)\.", out)
    # The state reloaded after the last round is the one that decided the winner.
    alive = saved[-1].split("alive ")[1].split(", ")
    wolves_alive = [name for name in alive if name in ("Bob", "Erin")]
    expected = "the villagers" if not wolves_alive else "the werewolves"
    assert winner == f"Winner: {expected}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_durable_werewolf_resumes_a_killed_game_to_the_same_end(backend: str) -> None:
    out = run_example("63_durable_werewolf.py", "--backend", backend)
    killed = re.search(r"killed with SIGKILL \(exit code -9\) after (\d+) recorded steps", out)
    assert killed and int(killed[1]) >= 30, out
    assert "run status: running" in out
    resumed = re.search(
        r"resumed: True\): (\d+) steps replayed from the record, (\d+) run live", out
    )
    assert resumed and 0 < int(resumed[1]) <= int(killed[1]) and int(resumed[2]) > 0, out
    assert "same transcript as the uninterrupted game: True" in out
    assert "same winner: True" in out
    calls = re.search(
        r"model calls: (\d+) made by the resumed process, (\d+) by the "
        r"uninterrupted game: the resume saved (\d+)",
        out,
    )
    assert calls and int(calls[1]) < int(calls[2]) and int(calls[3]) > 0, out


@pytest.mark.parametrize("backend", BACKENDS)
def test_durable_pipeline_replays_what_the_failed_attempt_recorded(backend: str) -> None:
    out = run_example("64_durable_pipeline.py", backend)
    first, second = out.split("[attempt 2] resumed: True; ")
    assert "[attempt 1] failed: ConnectionError(" in first
    recorded = re.search(r"0 steps replayed \(run.replayed\), (\d+) steps run live", first)
    assert recorded, out
    assert second.startswith(f"{recorded[1]} steps replayed (run.replayed)")
    searched = "today#1, Searcher#1 (model calls: 2, tool calls: 1), Reader#1 (model calls: 4, "
    assert f"run live: {searched}" in first and f"replayed: {searched}" in second
    # The reviewers run at once: their records come in the order they finish.
    live = re.search(r"run live: (.*)$", second, flags=re.MULTILINE)
    assert live, out
    groups = dict(re.findall(r"(\w+#\d+) \(([^)]*)\)", live[1]))
    reviewers = {f"{name}#1": "model calls: 1" for name in ("Accuracy", "Clarity", "Sources")}
    assert groups == {"Writer#1": "model calls: 2, tool calls: 1", **reviewers}, live[1]
    assert "run 'research-cancellation': finished, 23 steps recorded" in out
    assert "tool runs over both attempts: {'search_notes': 1, 'read_note': 3, 'publish': 1}" in out


@pytest.mark.local_model
def test_agents_in_trio_nursery_cancel_cleanly() -> None:
    out = run_example("25_agents_in_trio_nursery.py")
    assert "[watcher] new question: q1.txt" in out
    assert "[client] answer file a1.txt: " in out
    assert "[client] cancelling the nursery while Friday is replying" in out
    assert "[main] nursery exited cleanly; cancelled: True" in out
    ticks = re.search(r"ticked (\d+) times, (\d+) of them while Friday was replying", out)
    assert ticks and int(ticks[2]) > 0, out
    assert "[main] after the cancellation Friday still answers: True" in out


@pytest.mark.local_model
@pytest.mark.parametrize("backend", BACKENDS)
def test_web_app_streams_the_reply_as_server_sent_events(backend: str) -> None:
    out = run_example("42_web_app_sse.py", backend)
    assert re.search(rf"serving on http://127\.0\.0\.1:\d+/ \({backend}\)", out)
    assert "[client] page: " in out and "uses EventSource: True" in out
    assert "[client] content-type: text/event-stream" in out
    events = re.findall(r"^\[client\] event: (\w+) data: (.*)$", out, flags=re.MULTILINE)
    kinds = [kind for kind, _ in events]
    assert kinds.count("chunk") >= 2 and kinds[-1] == "done" and kinds.count("done") == 1
    chunks = "".join(json.loads(data)["text"] for kind, data in events if kind == "chunk")
    assert chunks and json.loads(events[-1][1])["text"] == chunks
    # The same reply streamed on the server's console, its pieces between the client's lines.
    console = out[out.index("Friday: ") : out.rindex("server stopped")].splitlines()
    assert "".join(line for line in console if not line.startswith("[client]")) == (
        f"Friday: {chunks}"
    )
    assert out.rstrip().endswith("server stopped")


@pytest.mark.parametrize("backend", BACKENDS)
def test_research_assistant_finishes_its_plan_and_cites_the_tools(backend: str) -> None:
    out = run_example("51_research_assistant.py", backend)
    assert "MCP tools: read_note, search_notes" in out
    assert "[plan] Answer with sources (todo)" in out
    assert "- [x] Write the answer" in out
    assert "[plan] finished and moved to the history" in out
    assert '"name": "search_notes"' in out and '"name": "read_note"' in out
    assert "\nPlan finished: done\n" in out
    answer = re.search(r"^Answer: (.*)$", out, flags=re.MULTILINE)
    assert answer, out
    assert sorted(re.findall(r"\[([\w-]+)\]", answer[1])) == [
        "anyio-levels",
        "asyncio-cancel",
        "trio-cancel",
    ]
    assert "every citation names a note the tools returned: True" in out
