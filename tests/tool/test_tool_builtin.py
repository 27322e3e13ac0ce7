"""Built-in tools: subprocess execution (output, exit codes, killing the process tree) and the
text file tools (editing, atomic writes, root confinement against traversal)."""

# Tests read and write small files directly and poll /proc; blocking there is intended.
# ruff: noqa: ASYNC240, ASYNC110

from __future__ import annotations

import os
import pathlib
import re

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentscope_rt.message import ToolUseBlock
from agentscope_rt.tool import (
    TextFileTools,
    Toolkit,
    execute_python_code,
    execute_shell_command,
    insert_text_file,
    view_text_file,
    write_text_file,
)

from .._timing import finishes_within


def _alive(pid: int) -> bool:
    """Whether *pid* is a running (not zombie) process."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def _wait_gone(pid: int) -> bool:
    with anyio.move_on_after(3):
        while _alive(pid):
            await anyio.sleep(0.02)
    return not _alive(pid)


def _parts(text: str) -> tuple[str, str, str]:
    match = re.fullmatch(
        r"<returncode>(.*)</returncode><stdout>(.*)</stdout><stderr>(.*)</stderr>", text, re.S
    )
    assert match, text
    return match.group(1), match.group(2), match.group(3)


# -- subprocess tools -------------------------------------------------------------------------


async def test_shell_output_and_exit_code() -> None:
    result = await execute_shell_command("echo out; echo err >&2; exit 3")
    assert _parts(result.get_text()) == ("3", "out\n", "err\n")


async def test_python_output_and_error() -> None:
    ok = await execute_python_code("print(sum(range(5)))")
    assert _parts(ok.get_text()) == ("0", "10\n", "")
    failed = await execute_python_code("raise SystemExit('nope')")
    code, out, err = _parts(failed.get_text())
    assert code == "1" and out == "" and "nope" in err


async def test_timeout_kills_the_process_tree(tmp_path: pathlib.Path) -> None:
    pid_file = tmp_path / "pids"
    command = f"sleep 30 & echo $! > {pid_file}; echo $$ >> {pid_file}; echo started; wait"
    async with finishes_within(what="a command holding a 30 s sleep past its 0.5 s timeout"):
        result = await execute_shell_command(command, timeout=0.5)
    code, out, err = _parts(result.get_text())
    assert code == "-1" and out == "started\n"
    assert "TimeoutError: The command execution exceeded the timeout of 0.5 seconds." in err
    pids = [int(p) for p in pid_file.read_text().split()]
    assert len(pids) == 2
    for pid in pids:
        assert await _wait_gone(pid), f"process {pid} survived the timeout"


async def test_python_timeout_kills_child_processes(tmp_path: pathlib.Path) -> None:
    pid_file = tmp_path / "pid"
    code = (
        "import subprocess, time\n"
        f"p = subprocess.Popen(['sleep', '30'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(30)\n"
    )
    result = await execute_python_code(code, timeout=1)
    assert _parts(result.get_text())[0] == "-1"
    assert await _wait_gone(int(pid_file.read_text()))


async def test_cancellation_kills_the_process_tree(tmp_path: pathlib.Path) -> None:
    pid_file = tmp_path / "pids"
    command = f"sleep 30 & echo $! > {pid_file}; echo $$ >> {pid_file}; wait"
    with anyio.move_on_after(0.5) as scope:
        await execute_shell_command(command, timeout=60)
    assert scope.cancelled_caught
    pids = [int(p) for p in pid_file.read_text().split()]
    for pid in pids:
        assert await _wait_gone(pid), f"process {pid} survived the cancellation"


async def test_background_grandchild_does_not_hold_the_call(tmp_path: pathlib.Path) -> None:
    async with finishes_within(what="a command leaving a 30 s sleep in the background"):
        result = await execute_shell_command("sleep 30 & echo quick", timeout=20)
    assert _parts(result.get_text())[:2] == ("0", "quick\n")


async def test_interrupting_shell_tool_through_toolkit(tmp_path: pathlib.Path) -> None:
    pid_file = tmp_path / "pid"
    toolkit = Toolkit()
    toolkit.register_tool_function(execute_shell_command)
    tool_call = ToolUseBlock(
        id="1", name="execute_shell_command", input={"command": f"echo $$ > {pid_file}; sleep 30"}
    )
    chunks = []
    with anyio.move_on_after(0.5):
        async for chunk in toolkit.call_tool_function(tool_call):
            chunks.append(chunk)
    assert [c.is_interrupted for c in chunks] == [True]
    assert await _wait_gone(int(pid_file.read_text()))


# -- text file tools ----------------------------------------------------------------------------


async def test_view_write_insert(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "f.txt")
    created = await write_text_file(path, "a\nb\nc\n")
    assert created.get_text() == f"Create and write {path} successfully."
    view = await view_text_file(path)
    assert view.get_text() == f"The content of {path}:\n```\n1: a\n2: b\n3: c\n```"
    part = await view_text_file(path, [2, 3])
    assert part.get_text().endswith("```\n2: b\n3: c\n```")
    last = await view_text_file(path, [-1, -1])
    assert last.get_text().endswith("```\n3: c\n```")
    replaced = await write_text_file(path, "B1\nB2", [2, 2])
    assert "successfully" in replaced.get_text()
    assert pathlib.Path(path).read_text() == "a\nB1\nB2\nc\n"
    inserted = await insert_text_file(path, "zero", 1)
    assert "at line 1 successfully" in inserted.get_text()
    appended = await insert_text_file(path, "end", 6)
    assert "successfully" in appended.get_text()
    assert pathlib.Path(path).read_text() == "zero\na\nB1\nB2\nc\nend"
    overwritten = await write_text_file(path, "new")
    assert overwritten.get_text() == f"Overwrite {path} successfully."
    assert pathlib.Path(path).read_text() == "new"


async def test_file_tool_errors_are_readable(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "f.txt")
    pathlib.Path(path).write_text("one\ntwo\n")
    missing = str(tmp_path / "missing.txt")
    assert (
        await view_text_file(missing)
    ).get_text() == f"Error: The file {missing} does not exist."
    assert "not a file" in (await view_text_file(str(tmp_path))).get_text()
    assert "out of bounds" in (await view_text_file(path, [5, 6])).get_text()
    assert "Invalid range format" in (await view_text_file(path, [1])).get_text()  # type: ignore[list-item]
    assert "greater than the end" in (await view_text_file(path, [2, 1])).get_text()
    assert "is invalid" in (await insert_text_file(path, "x", 0)).get_text()
    assert "valid range [1, 3]" in (await insert_text_file(path, "x", 9)).get_text()
    assert "does not exist" in (await insert_text_file(missing, "x", 1)).get_text()
    assert "start line 7 is invalid" in (await write_text_file(path, "x", [7, 8])).get_text()
    nested = str(tmp_path / "no" / "dir" / "f.txt")
    assert "directory" in (await write_text_file(nested, "x")).get_text()
    assert pathlib.Path(path).read_text() == "one\ntwo\n"


async def test_writes_are_atomic_and_keep_mode(tmp_path: pathlib.Path) -> None:
    target = tmp_path / "script.sh"
    target.write_text("old\n")
    target.chmod(0o750)
    inode_before = target.stat().st_ino
    await write_text_file(str(target), "new\n")
    assert target.read_text() == "new\n"
    assert target.stat().st_mode & 0o777 == 0o750
    # A new inode: the content was replaced as a whole, never rewritten in place.
    assert target.stat().st_ino != inode_before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["script.sh"]


async def test_new_files_get_the_umask_mode(tmp_path: pathlib.Path) -> None:
    previous = os.umask(0o027)
    try:
        await write_text_file(str(tmp_path / "new.txt"), "x\n")
    finally:
        os.umask(previous)
    assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.txt"]


def test_confined_root_must_exist(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="existing directory"):
        TextFileTools(tmp_path / "missing")


async def test_confined_tools_work_inside_root(tmp_path: pathlib.Path) -> None:
    files = TextFileTools(tmp_path)
    (tmp_path / "sub").mkdir()
    assert "successfully" in (await files.write_text_file("sub/a.txt", "x\n")).get_text()
    assert (tmp_path / "sub" / "a.txt").read_text() == "x\n"
    inside_abs = str(tmp_path / "sub" / "a.txt")
    assert "1: x" in (await files.view_text_file(inside_abs)).get_text()
    assert "1: x" in (await files.view_text_file("sub/../sub/./a.txt")).get_text()
    toolkit = Toolkit()
    for tool in files.tools():
        toolkit.register_tool_function(tool)
    schemas = {s["function"]["name"]: s for s in toolkit.get_json_schemas()}
    assert set(schemas) == {"view_text_file", "write_text_file", "insert_text_file"}
    assert "root" not in str(schemas["view_text_file"]["function"]["parameters"])


@pytest.fixture
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, pathlib.Path]:
    base = tmp_path_factory.mktemp("confine")
    root = base / "root"
    outside = base / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (root / "inner").mkdir()
    (root / "ok.txt").write_text("ok\n")
    (root / "link_out").symlink_to(outside)
    (root / "file_link").symlink_to(outside / "secret.txt")
    (root / "inner" / "up").symlink_to(base)
    return root, outside


_segments = st.sampled_from(
    ["..", ".", "inner", "link_out", "file_link", "up", "outside", "secret.txt", "ok.txt", "x"]
)


@given(
    segments=st.lists(_segments, min_size=1, max_size=6),
    absolute=st.sampled_from(["relative", "root", "outside", "slash"]),
)
async def test_confinement_refuses_every_escape(
    sandbox: tuple[pathlib.Path, pathlib.Path], segments: list[str], absolute: str
) -> None:
    root, outside = sandbox
    prefix = {"relative": "", "root": f"{root}/", "outside": f"{outside}/", "slash": "/"}[absolute]
    path = prefix + "/".join(segments)
    files = TextFileTools(root)
    resolved = os.path.realpath(path if os.path.isabs(path) else os.path.join(root, path))
    inside = resolved == str(root) or resolved.startswith(f"{root}{os.sep}")
    for result in (
        await files.view_text_file(path),
        await files.write_text_file(path, "pwned\n"),
        await files.insert_text_file(path, "pwned", 1),
    ):
        refused = result.get_text().startswith("PermissionError: The path")
        assert refused == (not inside), (path, result.get_text())
    # Nothing outside the root was ever touched.
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "secret\n"


@given(name=st.text(min_size=1, max_size=30))
async def test_arbitrary_names_never_escape(
    sandbox: tuple[pathlib.Path, pathlib.Path], name: str
) -> None:
    root, _ = sandbox
    files = TextFileTools(root)
    result = await files.view_text_file(name)
    assert "1: secret" not in result.get_text()
