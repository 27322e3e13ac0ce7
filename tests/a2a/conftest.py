"""A2A servers in their own processes, on 127.0.0.1, started once per test session:

* ``served_url(backend)``: an agentscope-rt agent served by A2AServer under that backend
  (tests/a2a/_served_agent.py);
* ``sdk_url``: an agent served by a2a-sdk's own server classes on uvicorn (asyncio), answering
  protocol 1.0 and 0.3 (tests/a2a/_sdk_server.py);
* ``sdk_secured_url``: the same, wanting the bearer token ``sdk-token``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests._servers import _stop, _wait_listening, free_port

_HERE = Path(__file__).parent
_ROOT = _HERE.parent.parent
_STARTUP_TIMEOUT_S = 60.0


def _spawn(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(_ROOT)},
    )


def _first_line(process: subprocess.Popen[bytes]) -> str:
    """The first line the process prints (its URL), or an error if it prints none in time."""
    assert process.stdout is not None
    line: list[bytes] = []
    reader = threading.Thread(target=lambda: line.append(process.stdout.readline()))  # type: ignore[union-attr]
    reader.start()
    reader.join(_STARTUP_TIMEOUT_S)
    if not line or not line[0]:
        _stop(process, 9)
        raise RuntimeError("the A2A server process printed no URL")
    return line[0].decode().strip()


@pytest.fixture(scope="session")
def served_url() -> Iterator[Callable[[str], str]]:
    processes: dict[str, tuple[subprocess.Popen[bytes], str]] = {}

    def url(backend: str) -> str:
        if backend not in processes:
            process = _spawn(str(_HERE / "_served_agent.py"), backend)
            processes[backend] = (process, _first_line(process))
        return processes[backend][1]

    yield url
    for process, _ in processes.values():
        _stop(process, 15)
        assert process.stdout is not None
        process.stdout.close()


def _sdk_server(*args: str) -> Iterator[str]:
    port = free_port()
    process = _spawn(str(_HERE / "_sdk_server.py"), str(port), *args)
    _wait_listening(process, port, "a2a-sdk server", lambda: _stop(process, 9))
    yield f"http://127.0.0.1:{port}/"
    _stop(process, 15)
    assert process.stdout is not None
    process.stdout.close()


@pytest.fixture(scope="session")
def sdk_url() -> Iterator[str]:
    yield from _sdk_server()


@pytest.fixture(scope="session")
def sdk_secured_url() -> Iterator[str]:
    yield from _sdk_server("sdk-token")
