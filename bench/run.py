"""Run every benchmark and write ``bench/RESULTS.md``.

Usage: ``nox -s bench`` (or ``python bench/run.py [react] [hub]`` in an environment where
agentscope-rt is installed). Each benchmark module exposes ``main() -> str`` returning a markdown
section; AgentScope's side of each workload runs in its own venv (see ``_agentscope_env.py``).
Figures are ratios measured in one run on one machine: compare them, not absolute numbers
across machines.
"""

from __future__ import annotations

import datetime
import importlib
import os
import pathlib
import platform
import sys

HERE = pathlib.Path(__file__).parent
BENCHMARKS = {"react": "bench_react", "hub": "bench_hub"}


def machine_summary() -> str:
    import anyio

    import agentscope_rt

    return (
        f"- date: {datetime.date.today().isoformat()}\n"
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}\n"
        f"- Python {platform.python_version()}, agentscope-rt {agentscope_rt.__version__}, "
        f"anyio {anyio.__version__ if hasattr(anyio, '__version__') else ''}\n"
    )


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(HERE))
    names = argv or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; choose from {list(BENCHMARKS)}", file=sys.stderr)
        return 2
    sections = ["# Benchmark results\n", machine_summary()]
    for name in names:
        module = importlib.import_module(BENCHMARKS[name])
        print(f"== {name}", flush=True)
        section = module.main()
        print(section, flush=True)
        sections.append(section)
    (HERE / "RESULTS.md").write_text("\n".join(sections), encoding="utf-8")
    print(f"wrote {HERE / 'RESULTS.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
