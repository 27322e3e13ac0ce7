"""Instructions per ReAct reply, counted by cachegrind: a deterministic companion to timing.

Timings on a shared machine drift by 10-20% from minute to minute, far more than most changes
to a hot path are worth. The number of machine instructions a reply executes does not drift:
this script runs ``bench_react``'s workload under valgrind's cachegrind and prints, per reply,
the instructions executed and the level-1 instruction and data cache misses (level 2 simulated
at 2 MiB). Use it to compare two versions of the code; use ``bench_react.py`` for the
verdict against AgentScope.

What makes the count repeatable: a fixed ``PYTHONHASHSEED``, a clock that advances a fixed
10 us per reading (``Msg`` timestamps cache the current millisecond, and valgrind runs the
code some 50 times slower than real time), and the garbage collector run once and then
disabled after warm-up (in a long run it almost never runs: a reply leaves about two tracked
objects behind; right after the imports it would run often). Startup is taken out by running
the workload twice, 10 and 10 + N replies, and dividing the difference by N.

Usage (valgrind must be installed)::

    python bench/instructions.py                      # this checkout, trio and asyncio
    python bench/instructions.py --against HEAD~3     # and that revision, side by side
    python bench/instructions.py --backend trio --replies 1000
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parent
EVENTS = ("Ir", "I1mr", "D1mr")


def _child(backend: str, replies: int) -> None:
    """Run the workload in this process (under cachegrind)."""
    import gc
    import itertools
    import time

    import anyio

    sys.path.insert(0, str(HERE))
    import bench_react

    import agentscope_rt.message._msg as msg_module

    if not hasattr(msg_module, "_time"):
        raise RuntimeError("agentscope_rt.message._msg no longer reads the clock as _time")
    msg_module._time = itertools.count(time.time(), 0.00001).__next__

    async def run() -> None:
        one = bench_react.rt_workload()
        for _ in range(5):
            await one()
        gc.collect()
        gc.disable()
        for _ in range(replies):
            await one()

    anyio.run(run, backend=backend)


def _count(backend: str, replies: int, pythonpath: str | None, out: pathlib.Path) -> list[int]:
    env = dict(os.environ, PYTHONHASHSEED="0")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=yes",
            "--LL=2097152,16,64",
            f"--cachegrind-out-file={out}",
            sys.executable,
            str(pathlib.Path(__file__).resolve()),
            "--child",
            backend,
            str(replies),
        ],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    names: list[str] = []
    for line in out.read_text().splitlines():
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith("summary:"):
            totals = dict(zip(names, map(int, line.split()[1:]), strict=True))
            return [totals[event] for event in EVENTS]
    raise RuntimeError(f"no summary in {out}")


def per_reply(backend: str, replies: int, pythonpath: str | None, tmp: pathlib.Path) -> list[float]:
    """Instructions and misses per reply, startup taken out (two runs, in parallel)."""
    tag = f"{backend}-{abs(hash(pythonpath))}"
    with ThreadPoolExecutor(2) as pool:
        short, long = pool.map(
            lambda n: _count(backend, n, pythonpath, tmp / f"{tag}-{n}.out"), (10, 10 + replies)
        )
    return [(b - a) / replies for a, b in zip(short, long, strict=True)]


def _export(revision: str, into: pathlib.Path) -> str:
    """*revision*'s package, extracted and compiled (so that startup compiles nothing)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "agentscope_rt"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(into)], check=True)
    return str(into)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("trio", "asyncio"), action="append")
    parser.add_argument("--replies", type=int, default=500)
    parser.add_argument("--against", metavar="REV", help="also count this git revision")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], int(args.child[1]))
        return
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed: install it (e.g. apt install valgrind) to count")
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = pathlib.Path(tmpdir)
        # This checkout by its own path (an editable install elsewhere must not stand in for
        # it), compiled like the exported revision so that both start alike.
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(ROOT / "agentscope_rt")], check=True
        )
        versions: dict[str, str | None] = {"this checkout": str(ROOT)}
        if args.against:
            (tmp / "against").mkdir()
            versions = {args.against: _export(args.against, tmp / "against"), **versions}
        for backend in args.backend or ["trio", "asyncio"]:
            figures = {
                name: per_reply(backend, args.replies, path, tmp) for name, path in versions.items()
            }
            print(f"{backend}: per reply ({args.replies} replies)")
            first = next(iter(figures.values()))
            for name, values in figures.items():
                cells = "  ".join(f"{e} {v:,.0f}" for e, v in zip(EVENTS, values, strict=True))
                change = (
                    "" if values is first else f"  ({100 * (values[0] / first[0] - 1):+.2f}% Ir)"
                )
                print(f"  {name:>14}: {cells}{change}")


if __name__ == "__main__":
    main()
