"""Reading many files: a progress bar on a terminal, silence elsewhere, and a light import."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from agentscope_rt.exception import ReaderError
from agentscope_rt.rag import TextReader, read_files
from agentscope_rt.rag._progress import ProgressBar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_draws_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTSCOPE_RT_DISABLE_CONSOLE_OUTPUT", raising=False)
    terminal = _Terminal()
    with ProgressBar(4, "reading", stream=terminal) as bar:
        bar.update(label="a.txt")
        bar.update(3, label="d.txt")
    out = terminal.getvalue()
    assert "\rreading [" + "#" * 6 + "." * 18 + "] 1/4 a.txt" in out
    assert "] 4/4 d.txt" in out
    assert out.endswith("\n")

    pipe = io.StringIO()
    with ProgressBar(4, "reading", stream=pipe) as bar:
        bar.update()
    assert pipe.getvalue() == ""
    monkeypatch.setenv("AGENTSCOPE_RT_DISABLE_CONSOLE_OUTPUT", "true")
    silenced = _Terminal()
    with ProgressBar(4, "reading", stream=silenced) as bar:
        bar.update()
    assert silenced.getvalue() == ""

    forced = io.StringIO()
    with ProgressBar(1, "x", stream=forced, enabled=True) as bar:
        bar.update()
    assert "1/1" in forced.getvalue()


async def test_read_files_reads_in_order_and_is_quiet_off_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = []
    for i in range(3):
        path = tmp_path / f"f{i}.txt"
        path.write_text(f"File {i}.", encoding="utf-8")
        paths.append(path)
    docs = await read_files(TextReader(), paths)
    assert [d.metadata.content["text"] for d in docs] == ["File 0.", "File 1.", "File 2."]
    assert capsys.readouterr().err == ""  # pytest's captured stderr is not a terminal
    docs = await read_files(TextReader(), paths, show_progress=True)
    assert "3/3 f2.txt" in capsys.readouterr().err

    with pytest.raises(ReaderError, match=r"missing\.txt"):
        await read_files(TextReader(), [*paths, tmp_path / "missing.txt"])


def test_importing_rag_loads_no_parser_or_database_client() -> None:
    heavy = ("qdrant_client", "pymilvus", "pypdf", "docx", "pptx", "openpyxl", "numpy", "grpc")
    code = (
        f"import sys, agentscope_rt.rag\nprint(','.join(m for m in {heavy!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""


async def test_read_files_takes_string_paths_as_files_only(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("Notes. More notes.", encoding="utf-8")
    docs = await read_files(TextReader(), [str(path)])
    assert [d.metadata.content["text"] for d in docs] == ["Notes.", "More notes."]
    # TextReader reads a string that names no file as text; read_files reads files.
    missing = str(tmp_path / "missing.txt")
    with pytest.raises(ReaderError, match=r"missing\.txt': no such file"):
        await read_files(TextReader(), [str(path), missing])
    # One path instead of a list would be read character by character.
    with pytest.raises(TypeError, match=r"a list of paths.*\[path\]"):
        await read_files(TextReader(), str(path))
    with pytest.raises(TypeError, match=r"a list of paths"):
        await read_files(TextReader(), path)  # type: ignore[arg-type]
