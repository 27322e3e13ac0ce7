"""Shared test configuration.

Every ``async def`` test runs twice, on asyncio and on trio: anyio's pytest plugin runs in auto
mode (``anyio_mode = "auto"`` in pyproject.toml), so each async test requests ``anyio_backend``,
which is parametrised here over both backends.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

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
