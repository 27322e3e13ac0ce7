"""Shared test configuration.

Every ``async def`` test runs twice, on asyncio and on trio: anyio's pytest plugin runs in auto
mode (``anyio_mode = "auto"`` in pyproject.toml), so each async test requests ``anyio_backend``,
which is parametrised here over both backends.

Every test runs the routes (``agentscope_rt._intercept``) in a state it chooses, whatever ran
before it: no interceptor or observer registered when it starts (a test that leaves one
registered fails, checked after each test through ``_intercept.installed()``, which lists
both), or, with ``AGENTSCOPE_RT_TEST_INTERCEPTORS=hooks,tracing`` in the
environment, a do-nothing agent hook of every kind and tracing (to a provider that keeps no
span) registered around each test, as an application with hooks and tracing runs (except
tests marked ``bare_routes``, which check the bare state itself). ``nox -s tests`` runs the
agent, ReAct, pipeline, tracing and studio suites both ways.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from ._noop_hooks import register_noop_hooks, remove_noop_hooks

# Hypothesis runs inside async tests too; the function-scoped anyio_backend fixture is fine there.
settings.register_profile(
    "default",
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile("ci", parent=settings.get_profile("default"), max_examples=50)
settings.load_profile("ci" if os.environ.get("CI") else "default")

# Tests never print to the console unless they ask to.
os.environ.setdefault("AGENTSCOPE_RT_DISABLE_CONSOLE_OUTPUT", "true")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


_INTERCEPTORS = {
    name for name in os.environ.get("AGENTSCOPE_RT_TEST_INTERCEPTORS", "").split(",") if name
}


def _install_suite_interceptors(request: pytest.FixtureRequest) -> list[Any]:
    """Register what ``AGENTSCOPE_RT_TEST_INTERCEPTORS`` names; return how to undo it."""
    undo: list[Any] = []
    if "hooks" in _INTERCEPTORS:
        undo += register_noop_hooks()
    # The tracing and studio suites turn tracing on and off themselves.
    own_tracing = {"tracing", "studio"} & set(Path(str(request.path)).parts)
    if "tracing" in _INTERCEPTORS and not own_tracing:
        from opentelemetry.sdk.trace import TracerProvider

        from agentscope_rt.tracing import enable_tracing

        enable_tracing(tracer_provider=TracerProvider())
        undo.append("tracing")
    return undo


def _uninstall_suite_interceptors(undo: list[Any]) -> None:
    if "tracing" in undo:
        from agentscope_rt.tracing import disable_tracing

        disable_tracing()
    remove_noop_hooks([item for item in undo if item != "tracing"])


@pytest.fixture(autouse=True)
def _routes_in_a_known_state(request: pytest.FixtureRequest) -> Iterator[None]:
    from agentscope_rt import _intercept

    if _intercept.installed():
        gc.collect()  # hooks of agents or classes a test before left to the collector
    before = {kind: set(map(id, items)) for kind, items in _intercept.installed().items()}
    bare = request.node.get_closest_marker("bare_routes") is not None
    undo = _install_suite_interceptors(request) if _INTERCEPTORS and not bare else []
    yield
    _uninstall_suite_interceptors(undo)
    left = _left_registered(before)
    for _ in range(40):
        if not left:
            break
        # A hooked agent may still be held for a moment by a worker thread finishing a call
        # the test cancelled: give it up to two seconds to go.
        gc.collect()
        left = _left_registered(before)
        if left:
            time.sleep(0.05)
    if left:
        pytest.fail(
            f"the test left interceptors or observers registered (later tests would run them): "
            f"{left}"
        )


def _left_registered(before: dict[str, set[int]]) -> dict[str, list[Any]]:
    from agentscope_rt import _intercept

    left = {
        kind: [item for item in items if id(item) not in before.get(kind, set())]
        for kind, items in _intercept.installed().items()
    }
    return {kind: items for kind, items in left.items() if items}


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """A local Ray cluster, started once per test session on first use (shared by the
    evaluator's and the agent hosts' tests: Ray is initialised once per process)."""
    import ray

    # The actors unpickle the tests' functions by module name: they need the checkout on
    # their path as the test process has it.
    root = str(Path(__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    try:
        yield ray
    finally:
        ray.shutdown()
