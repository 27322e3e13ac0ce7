"""Run every benchmark and write ``bench/RESULTS.md``.

Usage: ``nox -s bench`` (or ``python bench/run.py [react] [hub]`` in an environment where
agentscope-rt is installed). Each benchmark module exposes ``main() -> str`` returning a markdown
section; AgentScope's side of each workload runs in its own venv (see ``_agentscope_env.py``).
Sections of benchmarks not run (delimited by their ``## `` headings) are kept from the existing
file. Figures are ratios measured in one run on one machine: compare them, not absolute numbers
across machines.
"""

from __future__ import annotations

import datetime
import importlib
import importlib.metadata
import os
import pathlib
import platform
import sys

HERE = pathlib.Path(__file__).parent
BENCHMARKS = {
    "react": "bench_react",
    "hub": "bench_hub",
    "persistence": "bench_persistence",
    "rag": "bench_rag",
    "evaluate": "bench_evaluate",
    "rag-large": "bench_rag_large",
    "tracing": "bench_tracing",
    "scale": "bench_scale",
    "durable": "bench_durable",
}


def machine_summary() -> str:

    import agentscope_rt

    return (
        f"- date: {datetime.date.today().isoformat()}\n"
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}\n"
        f"- Python {platform.python_version()}, agentscope-rt {agentscope_rt.__version__}, "
        f"anyio {importlib.metadata.version('anyio')}, trio {importlib.metadata.version('trio')}\n"
    )


def _sections(text: str) -> dict[str, str]:
    """The ``## `` sections of a results file, by heading, in order (the preamble dropped)."""
    sections: dict[str, str] = {}
    heading: str | None = None
    lines: list[str] = []
    for line in text.splitlines(keepends=True):
        if line.startswith("## "):
            if heading is not None:
                sections[heading] = "".join(lines)
            heading, lines = line.strip(), [line]
        elif heading is not None:
            lines.append(line)
    if heading is not None:
        sections[heading] = "".join(lines)
    return sections


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(HERE))
    names = argv or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; choose from {list(BENCHMARKS)}", file=sys.stderr)
        return 2
    results = HERE / "RESULTS.md"
    previous = _sections(results.read_text(encoding="utf-8")) if results.exists() else {}
    fresh: dict[str, str] = {}
    for name in names:
        module = importlib.import_module(BENCHMARKS[name])
        print(f"== {name}", flush=True)
        section = module.main()
        print(section, flush=True)
        fresh.update(_sections(section))
    # Sections of benchmarks not run this time are kept as they were, in their place.
    merged = {**previous, **fresh}
    sections = ["# Benchmark results\n", machine_summary()]
    sections += [body.rstrip("\n") + "\n" for body in merged.values()]
    results.write_text("\n".join(sections), encoding="utf-8")
    print(f"wrote {HERE / 'RESULTS.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
