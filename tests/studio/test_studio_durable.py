"""The studio's Durable runs view without a browser: the two JSON routes over a real run
store (runs recorded by real programs), their token, paging, one user's runs only, and what
they refuse."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentscope_rt.durable import SQLiteRunStore, durable_run
from agentscope_rt.studio import serve

from ..durable._recorded import STUCK_TOOL, record_runs


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteRunStore]:
    runs = SQLiteRunStore(tmp_path / "runs.db")
    await record_runs(runs)
    async with durable_run("team/a?b", runs, user_id="ann") as run:
        await run.step("pick", lambda: 1)
    yield runs
    await runs.aclose()


async def get(client: httpx.AsyncClient, path: str, token: str, **params: Any) -> httpx.Response:
    return await client.get(path, params={"token": token, **params})


async def test_the_runs_of_the_studios_user_are_listed_and_paged(store: SQLiteRunStore) -> None:
    async with (
        serve(run_store=store, run_user="ann") as studio,
        httpx.AsyncClient(base_url=studio.base_url) as client,
    ):
        for path in ("/api/durable/runs", "/api/durable/runs/debate"):
            assert (await client.get(path)).status_code == 403
        everything = await get(client, "/api/durable/runs", studio.token)
        assert everything.status_code == 200
        page = everything.json()
        # Bob's run is not among them.
        assert sorted(run["run_id"] for run in page["items"]) == ["debate", "stuck", "team/a?b"]
        assert page["total"] == 3 and page["offset"] == 0 and page["limit"] == 100
        stuck = next(run for run in page["items"] if run["run_id"] == "stuck")
        assert stuck["user_id"] == "ann" and stuck["status"] == "failed" and stuck["steps"] == 6
        second = (await get(client, "/api/durable/runs", studio.token, offset=1, limit=1)).json()
        assert second["items"] == [page["items"][1]] and second["total"] == 3


async def test_one_run_shows_its_report_with_its_steps_paged(store: SQLiteRunStore) -> None:
    async with (
        serve(run_store=store, run_user="ann") as studio,
        httpx.AsyncClient(base_url=studio.base_url) as client,
    ):
        answer = await get(client, "/api/durable/runs/stuck", studio.token, offset=4, limit=1)
        assert answer.status_code == 200
        report = answer.json()
        assert report["info"]["run_id"] == "stuck" and report["info"]["status"] == "failed"
        assert report["agents"] == [
            {"agent": "Ada", "calls": 1, "chats": 2, "tools": 1},
            {"agent": "Cyd", "calls": 0, "chats": 1, "tools": 1},
        ]
        stopped = report["where_stopped"]
        assert [call["key"] for call in stopped["last_calls"]] == ["Ada#1"]
        assert stopped["in_flight"] == [
            {"key": "Cyd#1", "agent": "Cyd", "steps": 2, "last_step": STUCK_TOOL}
        ]
        assert [tool["key"] for tool in stopped["tools_started"]] == [STUCK_TOOL]
        steps = report["steps"]
        assert steps["total"] == 6 and steps["offset"] == 4 and steps["limit"] == 1
        assert [step["key"] for step in steps["items"]] == ["Cyd#1/chat#1"]
        assert steps["items"][0]["summary"] == 'deliberate({"topic": "bikes"})'
        finished = (await get(client, "/api/durable/runs/debate", studio.token)).json()
        assert finished["where_stopped"] is None and finished["steps"]["total"] == 7
        # A run id holding '/' and '?' comes through the path, percent-encoded.
        odd = await client.get(
            "/api/durable/runs/team%2Fa%3Fb", headers={"X-Studio-Token": studio.token}
        )
        assert odd.status_code == 200 and odd.json()["info"]["run_id"] == "team/a?b"


@pytest.mark.parametrize(
    ("path", "params", "status", "error"),
    [
        ("/api/durable/runs/solo", {}, 404, "no such run"),  # Bob's
        ("/api/durable/runs/nope", {}, 404, "no such run"),
        ("/api/durable/runs/a%00b", {}, 404, "no run"),
        ("/api/durable/runs", {"limit": "0"}, 400, "limit must be from 1 to 1000, not 0"),
        ("/api/durable/runs", {"limit": "1001"}, 400, "limit must be from 1 to 1000"),
        ("/api/durable/runs/debate", {"offset": "-1"}, 400, "offset must be 0 or more"),
        ("/api/durable/runs", {"offset": "x"}, 400, "offset must be an int, not 'x'"),
    ],
)
async def test_what_the_routes_refuse(
    store: SQLiteRunStore, path: str, params: dict[str, str], status: int, error: str
) -> None:
    async with (
        serve(run_store=store, run_user="ann") as studio,
        httpx.AsyncClient(base_url=studio.base_url) as client,
    ):
        answer = await get(client, path, studio.token, **params)
    assert answer.status_code == status
    assert error in answer.json()["error"]


async def test_a_store_that_fails_is_503_with_its_message(
    store: SQLiteRunStore, tmp_path: Path
) -> None:
    with sqlite3.connect(tmp_path / "runs.db") as db:
        db.execute("UPDATE agentscope_run_steps SET payload = '{' WHERE key = 'dice#1'")
    async with (
        serve(run_store=store, run_user="ann") as studio,
        httpx.AsyncClient(base_url=studio.base_url) as client,
    ):
        answer = await get(client, "/api/durable/runs/debate", studio.token)
        assert answer.status_code == 503
        assert "the record of step 'dice#1' is corrupted" in answer.json()["error"]
        # The list does not read records: it still answers.
        assert (await get(client, "/api/durable/runs", studio.token)).status_code == 200


async def test_without_a_run_store_the_routes_say_how_to_get_one() -> None:
    async with serve() as studio, httpx.AsyncClient(base_url=studio.base_url) as client:
        assert studio.run_store is None
        for path in ("/api/durable/runs", "/api/durable/runs/debate"):
            answer = await get(client, path, studio.token)
            assert answer.status_code == 404
            assert "serve(run_store=...)" in answer.json()["error"]
        assert (await get(client, "/", studio.token)).status_code == 200


async def test_serve_refuses_what_is_not_a_run_store() -> None:
    with pytest.raises(TypeError, match="run_store must be a durable RunStore"):
        async with serve(run_store="runs.db"):  # type: ignore[arg-type]
            pass
    with pytest.raises(TypeError, match="run_user must be a str"):
        async with serve(run_store=SQLiteRunStore("unused.db"), run_user=None):  # type: ignore[arg-type]
            pass
