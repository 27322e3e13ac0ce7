"""Built-in tools that run code: :func:`execute_python_code` and :func:`execute_shell_command`.

Guarantee: the child runs in its own process group (``start_new_session=True``), and when the
call times out, *is cancelled*, or the child exits, the whole group is killed with SIGKILL and
the child reaped before the call returns or the cancellation propagates — no orphaned
grandchildren keep running (a grandchild that starts its own session escapes, by design of
POSIX sessions).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import tempfile
from typing import Annotated, Any

import anyio
import anyio.abc
import pydantic

from ._execution import text_response
from ._response import ToolResponse

__all__ = ["execute_python_code", "execute_shell_command"]

# After killing the process group, how long to wait for the direct child to be reaped.
_REAP_TIMEOUT = 5.0
# After the child exits, how long to keep reading output still buffered in its pipes.
_DRAIN_GRACE = 1.0
# Upper bound on captured output per stream, so a chatty program cannot exhaust memory.
_MAX_CAPTURE_BYTES = 1 << 20

# The `timeout` parameter as the model sees it: a number of seconds above zero (the schema
# says `"exclusiveMinimum": 0`, so argument validation refuses zero and negative values).
# NaN and Infinity have no JSON Schema spelling: _check_timeout refuses them.
_Timeout = Annotated[float, pydantic.Field(gt=0)]


def _check_timeout(timeout: Any) -> float:
    """:raises ValueError: unless *timeout* is a positive, finite number (a NaN, an infinite
    or a negative deadline would fail deep inside the task group, or time out at once)."""
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ValueError(f"timeout must be a positive, finite number of seconds, not {timeout!r}")
    return timeout


def _kill_group(process: anyio.abc.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _drain(stream: anyio.abc.ByteReceiveStream | None, sink: bytearray) -> None:
    if stream is None:
        return
    async for data in stream:
        room = _MAX_CAPTURE_BYTES - len(sink)
        if room > 0:
            sink += data[:room]


async def _run(
    argv: list[str], limit: float, env: dict[str, str] | None, what: str
) -> ToolResponse:
    stdout, stderr = bytearray(), bytearray()
    process = await anyio.open_process(argv, env=env, start_new_session=True)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_drain, process.stdout, stdout)
            tg.start_soon(_drain, process.stderr, stderr)
            with anyio.move_on_after(limit) as scope:
                await process.wait()
            timed_out = scope.cancelled_caught
            # On timeout the child is still running; after a normal exit, background
            # grandchildren may be left holding the pipes. Either way the group goes.
            _kill_group(process)
            # Output still in the pipes is collected; a pipe held open by a process that
            # left the group is given up on after a short grace period.
            tg.cancel_scope.deadline = anyio.current_time() + _DRAIN_GRACE
    finally:
        _kill_group(process)
        with anyio.CancelScope(shield=True) as reap:
            reap.deadline = anyio.current_time() + _REAP_TIMEOUT
            await process.aclose()
    out = stdout.decode("utf-8", errors="replace")
    err = stderr.decode("utf-8", errors="replace")
    returncode = process.returncode
    if timed_out:
        returncode = -1
        notice = f"TimeoutError: The {what} execution exceeded the timeout of {limit} seconds."
        err = f"{err}\n{notice}" if err else notice
    return text_response(
        f"<returncode>{returncode}</returncode><stdout>{out}</stdout><stderr>{err}</stderr>"
    )


def _write_script(code: str) -> str:
    fd, path = tempfile.mkstemp(prefix="agentscope_rt_", suffix=".py")
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(code)
    return path


# The `timeout` parameter is part of AgentScope's tool signature (the model sets it).
async def execute_python_code(
    code: str,
    timeout: _Timeout = 300,  # noqa: ASYNC109
    **kwargs: Any,
) -> ToolResponse:
    """Execute the given python code in a temp file and capture the return
    code, standard output and error. Note you must `print` the output to get
    the result, and the tmp file will be removed right after the execution.

    Args:
        code (`str`):
            The Python code to be executed.
        timeout (`float`, defaults to `300`):
            The maximum time (in seconds) allowed for the code to run.

    Returns:
        `ToolResponse`:
            The response containing the return code, standard output, and
            standard error of the executed code.

    Raises:
        `ValueError`:
            If `timeout` is not a positive, finite number (nothing runs then).
    """
    limit = _check_timeout(timeout)
    path = await anyio.to_thread.run_sync(_write_script, code)
    env = {**os.environ, "PYTHONUTF8": "1", "PYTHONIOENCODING": "utf-8"}
    try:
        return await _run([sys.executable, "-u", path], limit, env, "code")
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_unlink_quietly, path)


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


async def execute_shell_command(
    command: str,
    timeout: _Timeout = 300,  # noqa: ASYNC109
    **kwargs: Any,
) -> ToolResponse:
    """Execute given command and return the return code, standard output and
    error within <returncode></returncode>, <stdout></stdout> and
    <stderr></stderr> tags.

    Args:
        command (`str`):
            The shell command to execute.
        timeout (`float`, defaults to `300`):
            The maximum time (in seconds) allowed for the command to run.

    Returns:
        `ToolResponse`:
            The tool response containing the return code, standard output, and
            standard error of the executed command.

    Raises:
        `ValueError`:
            If `timeout` is not a positive, finite number (nothing runs then).
    """
    return await _run(["/bin/sh", "-c", command], _check_timeout(timeout), None, "command")
