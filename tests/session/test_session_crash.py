"""A process killed (SIGKILL) at a random moment during a save leaves a whole state.

A child process saves ever-larger states of one session in a loop and reports each save it
finished; it is killed at a random moment, many times per storage. Afterwards the stored state
must load and be exactly the last reported save or the one in flight — never a torn mix, never
unreadable.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentscope_rt.session import JSONSession, RedisSession, SessionBase, SQLiteSession

from ._agents import make_memory
from ._crash_child import STEP
from ._crash_child import __file__ as CHILD

RUNS = 30
STARTUP_TIMEOUT_S = 30.0


def _kill_during_saves(kind: str, location: str, backend: str, delay: float) -> int:
    """Run the child, kill it *delay* seconds after it is ready; the last save it finished."""
    child = subprocess.Popen(
        [sys.executable, CHILD, kind, location, backend],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    line = child.stdout.readline()
    if line.strip() != "ready":
        child.kill()
        raise AssertionError(
            f"child did not start: {line!r} {child.stderr.read() if child.stderr else ''}"
        )
    assert time.monotonic() < deadline
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate()
    done = [int(x) for x in out.split()]
    return done[-1] if done else 0


@pytest.mark.parametrize("kind", ["json", "sqlite", "redis"])
async def test_a_save_killed_at_a_random_moment_leaves_the_old_or_the_new_state(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, anyio_backend: str
) -> None:
    rng = random.Random(f"{kind}-{anyio_backend}")
    for run in range(RUNS):
        if kind == "json":
            location = str(tmp_path / f"run{run}")
            session: SessionBase = JSONSession(location)
        elif kind == "sqlite":
            location = str(tmp_path / f"run{run}.db")
            session = SQLiteSession(location)
        else:
            location = str(request.getfixturevalue("redis_port"))
            request.getfixturevalue("redis_server").flush()
            session = RedisSession(host="127.0.0.1", port=int(location))

        last_done = _kill_during_saves(kind, location, anyio_backend, rng.uniform(0.0, 0.35))

        memory = make_memory()
        await session.load_session_state("crash", user_id="u", memory=memory)
        texts = [str(m.get_text_content()) for m in await memory.get_memory()]
        if last_done == 0 and not texts:
            await session.aclose()
            continue  # killed before the first save landed: nothing stored, nothing torn
        k = int(texts[0].split(":", 1)[0])
        assert k in (last_done, last_done + 1), (run, k, last_done)
        assert [t.split(":", 2)[:2] for t in texts] == [[str(k), str(i)] for i in range(k * STEP)]
        await session.aclose()
