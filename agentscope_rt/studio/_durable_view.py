"""The studio's *Durable runs* view: a run store's runs and one run's report, as JSON pages.

The studio shows the runs of one user, the one it was given with its store
(``serve(run_store=..., run_user=...)``): the page has no notion of users, so whoever holds the
studio's token sees that user's runs and no other's.
"""

from __future__ import annotations

from typing import Any

import attrs

from ..durable import RunReport, RunStore, inspect_run

__all__ = ["DEFAULT_PAGE", "MAX_PAGE", "run_page", "runs_page"]

DEFAULT_PAGE = 100
"""Runs, or steps of a run, in one answer when the request gives no ``limit``."""

MAX_PAGE = 1000
"""The largest ``limit`` a request may ask for (a run can hold tens of thousands of steps)."""


def _page(items: list[Any], offset: int, limit: int) -> dict[str, Any]:
    return {
        "items": [attrs.asdict(item) for item in items[offset : offset + limit]],
        "total": len(items),
        "offset": offset,
        "limit": limit,
    }


async def runs_page(store: RunStore, user_id: str, offset: int, limit: int) -> dict[str, Any]:
    """The runs of *user_id*, most recently updated first, from *offset*, at most *limit*:
    ``{"items": [RunInfo as a dict, ...], "total", "offset", "limit"}``.

    :raises DurableRunError: when the store cannot be read.
    """
    return _page(await store.list_runs(user_id), offset, limit)


async def run_page(
    store: RunStore, user_id: str, run_id: str, offset: int, limit: int
) -> dict[str, Any] | None:
    """The report of run *run_id* (see :func:`~agentscope_rt.durable.inspect_run`), its
    steps paged: ``{"info", "agents", "where_stopped", "steps": {"items", "total",
    "offset", "limit"}}``; ``None`` when *user_id* has no such run.

    :raises DurableRunError: when the store cannot be read.
    """
    if await store.get_run(user_id, run_id) is None:
        return None
    report: RunReport = await inspect_run(store, run_id, user_id)
    steps = attrs.fields(RunReport).steps
    whole = attrs.asdict(report, filter=lambda field, _: field is not steps)
    whole["steps"] = _page(report.steps, offset, limit)
    return whole
