"""A stateful MCP client used the way AgentScope's examples use it: ``await client.connect()``
... ``await client.close()``, with the caller's code failing in between, or ``close()`` never
called at all.

Each scenario runs as a program of its own (``anyio.run`` on asyncio or trio), so what the user
would see on stderr can be checked: the user's own exception, never a ``TrioInternalError`` or
an "Exception ignored" traceback from a task group or async generator left open, and the stdio
server process is gone when the program has ended. Over stdio and SSE.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import HttpServer
from .helpers import SERVER_SCRIPT

REPO_ROOT = Path(__file__).resolve().parents[2]
# Far above what a run takes (starting the server imports the whole SDK: a few seconds).
HANG_GUARD = 120.0

PROGRAM = textwrap.dedent(
    """
    import sys

    import anyio

    from agentscope_rt.mcp import HttpStatefulClient, StdIOStatefulClient

    backend, transport, scenario, target = sys.argv[1:5]


    def new_client():
        if transport == "stdio":
            return StdIOStatefulClient(
                name="demo", command=sys.executable, args=[target, "stdio"]
            )
        return HttpStatefulClient(name="demo", transport="sse", url=target)


    async def connect_and_report(client):
        await client.connect()
        result = await client.call_tool("pid")
        print(result.content[0].text, flush=True)


    async def main():
        client = new_client()
        if scenario == "raise":
            await connect_and_report(client)
            raise ValueError("user error")
            await client.close()
        elif scenario == "raise_in_scopes":
            # Connected inside the caller's own task group and cancel scope, which are left
            # by the exception before close() could run.
            async with anyio.create_task_group():
                with anyio.CancelScope():
                    await connect_and_report(client)
                    raise ValueError("user error")
        elif scenario == "forget_close":
            await connect_and_report(client)
        elif scenario == "close_elsewhere":
            # close() from another task, and two clients closed in connection order.
            other = new_client()
            await connect_and_report(client)
            await other.connect()
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.close)
            await other.close()
            assert not client.is_connected and not other.is_connected
            print("closed", flush=True)


    anyio.run(main, backend=backend)
    """
)


@pytest.fixture(scope="module")
def sse_server() -> Iterator[HttpServer]:
    server = HttpServer("sse")
    yield server
    server.stop()


def _run(
    backend: str, transport: str, scenario: str, target: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, backend, transport, scenario, target],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        check=False,
    )


def _running(pid: int) -> bool:
    """Whether *pid* is a running process (a zombie whose parent has exited is not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def _assert_clean(stderr: str) -> None:
    assert "TrioInternalError" not in stderr, stderr
    assert "Exception ignored" not in stderr, stderr
    assert "RuntimeError" not in stderr, stderr


def _target(transport: str, request: pytest.FixtureRequest) -> str:
    if transport == "stdio":
        return str(SERVER_SCRIPT)
    server: HttpServer = request.getfixturevalue("sse_server")
    return server.url


def _assert_stdio_server_gone(transport: str, stdout: str) -> None:
    if transport != "stdio":
        return
    pid = int(stdout.split()[0])
    # The SDK ended the server before the program exited; allow a moment for the kernel.
    deadline = time.monotonic() + 10
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(pid)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("transport", ["stdio", "sse"])
@pytest.mark.parametrize("scenario", ["raise", "raise_in_scopes"])
def test_an_error_between_connect_and_close_is_the_error_the_user_sees(
    backend: str, transport: str, scenario: str, request: pytest.FixtureRequest
) -> None:
    result = _run(backend, transport, scenario, _target(transport, request))
    assert result.returncode == 1, result.stderr
    _assert_clean(result.stderr)
    # The user's own exception is what the program ends with (inside the ExceptionGroup of
    # the user's task group in "raise_in_scopes").
    last = result.stderr.rstrip().splitlines()[-1 if scenario == "raise" else -2]
    assert last.strip(" |") == "ValueError: user error", result.stderr
    _assert_stdio_server_gone(transport, result.stdout)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("transport", ["stdio", "sse"])
def test_a_client_never_closed_ends_with_the_event_loop_and_a_warning(
    backend: str, transport: str, request: pytest.FixtureRequest
) -> None:
    result = _run(backend, transport, "forget_close", _target(transport, request))
    assert result.returncode == 0, result.stderr
    _assert_clean(result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    assert "'demo' was never closed" in result.stderr
    _assert_stdio_server_gone(transport, result.stdout)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_close_from_another_task_and_in_any_order(
    backend: str, request: pytest.FixtureRequest
) -> None:
    result = _run(backend, "stdio", "close_elsewhere", _target("stdio", request))
    assert result.returncode == 0, result.stderr
    _assert_clean(result.stderr)
    assert "Traceback" not in result.stderr and "never closed" not in result.stderr
    assert result.stdout.split()[1] == "closed"
    _assert_stdio_server_gone("stdio", result.stdout)
