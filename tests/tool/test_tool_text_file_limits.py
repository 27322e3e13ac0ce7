"""The file tools against files that block, never end, are huge, or are edited concurrently."""

from __future__ import annotations

import os
import pathlib
import socket
import stat
import threading
from typing import Any

import anyio
import pytest

from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel, reply, tool_call
from agentscope_rt.tool import (
    _text_file,
    insert_text_file,
    view_text_file,
    write_text_file,
)

from ..react._support import make_agent, toolkit_of

# Generous bounds: they only turn a hang into a failure.
BOUND_S = 20


def _fifo(tmp_path: pathlib.Path) -> str:
    path = str(tmp_path / "pipe")
    os.mkfifo(path)
    return path


async def test_fifos_are_refused_without_blocking(tmp_path: pathlib.Path) -> None:
    fifo = _fifo(tmp_path)
    with anyio.fail_after(BOUND_S):
        for response in [
            await view_text_file(fifo),
            await view_text_file(fifo, [1, 2]),
            await write_text_file(fifo, "x"),
            await write_text_file(fifo, "x", [1, 1]),
            await insert_text_file(fifo, "x", 1),
        ]:
            assert "is a FIFO (named pipe), not a regular file" in response.get_text()
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # an overwrite left it alone


async def test_devices_and_sockets_are_refused(tmp_path: pathlib.Path) -> None:
    with anyio.fail_after(BOUND_S):
        # /dev/zero never ends: reading it whole would never return.
        assert "is a device" in (await view_text_file("/dev/zero")).get_text()
        assert "is a device" in (await insert_text_file("/dev/null", "x", 1)).get_text()
        path = str(tmp_path / "sock")
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(path)
            assert "is a socket" in (await view_text_file(path)).get_text()
            assert "is a socket" in (await write_text_file(path, "x")).get_text()


async def test_a_range_is_read_only_as_far_as_it_reaches(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "f.txt"
    # Undecodable bytes after line 3: reading the whole file would fail on them.
    path.write_bytes(b"one\ntwo\nthree\n\xff\xfe broken\n")
    assert (
        (await view_text_file(str(path), [1, 3]))
        .get_text()
        .endswith("```\n1: one\n2: two\n3: three\n```")
    )
    assert "UnicodeDecodeError" in (await view_text_file(str(path))).get_text()


async def test_a_huge_file_is_shown_in_a_bounded_excerpt(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("".join(f"line {i}\n" for i in range(1, 200_001)))
    text = (await view_text_file(str(path))).get_text()
    assert len(text) < _text_file.MAX_VIEW_CHARS + 1_000
    shown = int(text.rsplit("only lines 1-", 1)[1].split(" ", 1)[0])
    assert f"\n{shown}: line {shown}\n```" in text
    assert f"e.g. [{shown + 1}, {shown + 200}]" in text
    # The end of the file, by a negative range, with the right line numbers.
    tail = (await view_text_file(str(path), [-2, -1])).get_text()
    assert tail.endswith("```\n199999: line 199999\n200000: line 200000\n```")
    # A range larger than the cap is cut too, and says how to go on.
    wide = (await view_text_file(str(path), [10, 150_000])).get_text()
    assert len(wide) < _text_file.MAX_VIEW_CHARS + 1_000 and "View the rest" in wide


async def test_one_huge_line_shows_its_beginning(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "line.txt"
    path.write_text("x" * (3 * _text_file.MAX_VIEW_CHARS))
    text = (await view_text_file(str(path))).get_text()
    assert "1: xxx" in text and len(text) < _text_file.MAX_VIEW_CHARS + 1_000


async def test_concurrent_inserts_into_one_file_lose_nothing(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("first\n")
    results: list[str] = []

    async def insert(i: int) -> None:
        results.append((await insert_text_file(str(path), f"line {i}", 1)).get_text())

    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as tg:
            for i in range(50):
                tg.start_soon(insert, i)
    assert all("successfully" in r for r in results)
    lines = path.read_text().splitlines()
    assert sorted(lines) == sorted(["first", *(f"line {i}" for i in range(50))])


@pytest.fixture
def hung_file_system(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> Any:
    """Reads block until released, as on a stale network mount (the OS is the boundary): the
    events "a read began" and "reads may end", and a file to read."""
    path = tmp_path / "f.txt"
    path.write_text("x\n")
    release = threading.Event()
    entered = threading.Event()

    def hung_read(*args: Any) -> Any:
        entered.set()
        release.wait()
        raise OSError("the mount came back too late")

    monkeypatch.setattr(_text_file, "_read_view", hung_read)
    # Released in any case, so the abandoned worker thread ends with the test.
    timer = threading.Timer(BOUND_S, release.set)
    timer.start()
    yield entered, release, path
    release.set()
    timer.cancel()


async def test_an_outer_timeout_is_not_held_up_by_a_hung_read(hung_file_system: Any) -> None:
    _, release, path = hung_file_system
    with pytest.raises(TimeoutError), anyio.fail_after(0.5):
        await view_text_file(str(path))
    assert not release.is_set()  # the timeout came while the read still hung


async def test_an_interrupt_is_not_held_up_by_a_hung_read(hung_file_system: Any) -> None:
    entered, release, path = hung_file_system
    model = ScriptedChatModel([reply(tool_call("view_text_file", {"file_path": str(path)}))])
    agent = make_agent(model, toolkit_of(view_text_file), sys_prompt="")

    async def interrupt_when_reading() -> None:
        await anyio.to_thread.run_sync(entered.wait)
        agent.interrupt()

    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(interrupt_when_reading)
            answer = await agent(Msg("user", "read it", "user"))
    assert not release.is_set()
    assert answer.metadata == {"_is_interrupted": True}
    memory = await agent.memory.get_memory()
    results = [b for m in memory for b in m.get_content_blocks("tool_result")]
    assert len(results) == 1 and "interrupted" in str(results[0]["output"])
