"""The check that the ``studio`` extra is installed, done once when :mod:`agentscope_rt.studio`
is imported, so that a missing library is one error naming the extra rather than a bare
``ModuleNotFoundError`` from whichever module imports it first (or later, from a call)."""

from __future__ import annotations

from .._extras import check_extra

__all__: list[str] = []

check_extra(
    ("starlette", "hypercorn", "opentelemetry.sdk", "wsproto"),
    extra="studio",
    user="agentscope_rt.studio",
)
