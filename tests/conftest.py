"""Shared test configuration.

Every ``async def`` test runs twice, on asyncio and on trio: the ``anyio`` marker is added
automatically and ``anyio_backend`` is parametrised over both backends.
"""

from __future__ import annotations

import inspect
import os

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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        function = getattr(item, "function", None)
        if function is not None and inspect.iscoroutinefunction(function):
            item.add_marker(pytest.mark.anyio)
