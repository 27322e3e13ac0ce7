"""Virtual environments holding AgentScope releases, for side-by-side benchmarks.

AgentScope is never a dependency of agentscope-rt: each benchmark runs AgentScope's half of a
workload in a subprocess with its own interpreter. This module creates (once) and reuses a venv
per AgentScope version under ``bench/.venvs/``. AgentScope 1.0.x imports only with ``mcp<2``,
``tqdm`` and ``greenlet`` installed beside it.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

VENVS = pathlib.Path(__file__).parent / ".venvs"
EXTRA_PACKAGES = ("mcp<2", "tqdm", "greenlet")
# The fastest 1.x measured on this kind of machine, and the newest 1.0.x release.
FAST_VERSION = "1.0.4"
NEWEST_VERSION = "1.0.21"


def agentscope_python(version: str, extra: tuple[str, ...] = ()) -> pathlib.Path:
    """The interpreter of a venv with ``agentscope==version`` installed (created on first use).

    :param extra: more packages to install beside it (e.g. ``("ray",)`` for its RayEvaluator);
        such a venv is kept apart from the plain one, named after them.
    :raises RuntimeError: if the venv cannot be created or the install fails (the message holds
        pip's output).
    """
    venv = VENVS / "+".join([f"agentscope-{version}", *extra])
    python = venv / "bin" / "python"
    marker = venv / ".installed"
    if marker.exists() and python.exists():
        return python
    VENVS.mkdir(parents=True, exist_ok=True)
    base = os.environ.get("PYTHON_FOR_AGENTSCOPE", sys.executable)
    steps = [
        [base, "-m", "venv", str(venv)],
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            f"agentscope=={version}",
            *EXTRA_PACKAGES,
            *extra,
        ],
    ]
    for step in steps:
        result = subprocess.run(step, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(
                f"could not prepare agentscope {version}: {' '.join(step)} failed:\n"
                f"{result.stdout}\n{result.stderr}"
            )
    check = subprocess.run(
        [str(python), "-c", "import agentscope, sys; sys.stdout.write(agentscope.__version__)"],
        capture_output=True,
        text=True,
    )
    if check.returncode != 0 or check.stdout.strip() != version:
        raise RuntimeError(f"agentscope {version} does not import:\n{check.stderr}")
    marker.write_text(version)
    return python


if __name__ == "__main__":
    for v in sys.argv[1:] or [FAST_VERSION, NEWEST_VERSION]:
        print(v, agentscope_python(v))


def pin_to_one_cpu() -> int | None:
    """Pin this process (and so every worker it starts afterwards, which inherits it) to one
    CPU; return it, or ``None`` where affinity cannot be set.

    The benchmarks alternate between agentscope-rt and AgentScope workers; on a shared machine
    the cores do not run at the same speed (measured up to 1.4x apart), so both sides run on
    the same core.
    """
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return cpu
