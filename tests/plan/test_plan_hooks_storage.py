"""Plan change hooks (sync and async) and plan storage."""

from __future__ import annotations

import logging

import anyio
import pytest

from agentscope_rt.plan import InMemoryPlanStorage, Plan, PlanNotebook, PlanStorageBase

from ._support import notebook_with, subtask, subtask_dict


async def test_sync_and_async_hooks_see_every_change_in_order() -> None:
    notebook = PlanNotebook()
    seen: list[tuple[str, str | None, list[str] | None]] = []

    def sync_hook(nb: PlanNotebook, plan: Plan | None) -> None:
        assert nb is notebook
        seen.append(
            (
                "sync",
                plan.name if plan else None,
                [s.state for s in plan.subtasks] if plan else None,
            )
        )

    async def async_hook(nb: PlanNotebook, plan: Plan | None) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(("async", plan.name if plan else None, None))

    notebook.register_plan_change_hook("sync", sync_hook)
    notebook.register_plan_change_hook("async", async_hook)
    await notebook.create_plan("P", "d", "e", [subtask_dict("A"), subtask_dict("B")])
    await notebook.update_subtask_state(0, "in_progress")
    await notebook.finish_subtask(0, "a")
    await notebook.revise_current_plan(2, "add", subtask_dict("C"))
    await notebook.update_subtask_state(2, "abandoned")
    await notebook.finish_subtask(1, "b")
    await notebook.finish_plan("done", "ok")
    assert [entry for entry in seen if entry[0] == "sync"] == [
        ("sync", "P", ["todo", "todo"]),
        ("sync", "P", ["in_progress", "todo"]),
        ("sync", "P", ["done", "in_progress"]),
        ("sync", "P", ["done", "in_progress", "todo"]),
        ("sync", "P", ["done", "in_progress", "abandoned"]),
        ("sync", "P", ["done", "done", "abandoned"]),
        ("sync", None, None),
    ]
    assert [entry[0] for entry in seen] == ["sync", "async"] * 7
    # Reading and refused calls change nothing and fire no hook.
    seen.clear()
    await notebook.view_historical_plans()
    await notebook.finish_plan("done", "again")
    await notebook.update_subtask_state(0, "todo")
    assert seen == []


async def test_recovering_fires_the_hooks() -> None:
    notebook = await notebook_with("A")
    plan_id = notebook.current_plan.id if notebook.current_plan else ""
    await notebook.finish_plan("abandoned", "later")
    names: list[str | None] = []
    notebook.register_plan_change_hook("h", lambda nb, plan: names.append(plan and plan.name))
    await notebook.recover_historical_plan(plan_id)
    assert names == ["Report"]


async def test_hooks_can_be_replaced_and_removed() -> None:
    notebook = PlanNotebook()
    calls: list[str] = []
    notebook.register_plan_change_hook("h", lambda nb, plan: calls.append("first"))
    notebook.register_plan_change_hook("h", lambda nb, plan: calls.append("second"))
    await notebook.create_plan("P", "d", "e", [subtask_dict("A")])
    assert calls == ["second"]
    notebook.remove_plan_change_hook("h")
    await notebook.update_subtask_state(0, "in_progress")
    assert calls == ["second"]
    with pytest.raises(ValueError) as info:
        notebook.remove_plan_change_hook("h")
    assert str(info.value) == "Hook 'h' not found."
    with pytest.raises(TypeError, match="callable"):
        notebook.register_plan_change_hook("x", "not a function")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="hook_name"):
        notebook.register_plan_change_hook(1, print)  # type: ignore[arg-type]


async def test_a_failing_hook_is_logged_and_neither_undoes_the_change_nor_stops_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    notebook = PlanNotebook()
    later: list[str] = []

    def broken(nb: PlanNotebook, plan: Plan | None) -> None:
        raise RuntimeError("display is down")

    notebook.register_plan_change_hook("broken", broken)
    notebook.register_plan_change_hook("later", lambda nb, plan: later.append("ran"))
    with caplog.at_level(logging.ERROR, logger="agentscope_rt.plan"):
        res = await notebook.create_plan("P", "d", "e", [subtask_dict("A")])
    assert res.get_text() == "Plan 'P' created successfully."
    assert notebook.current_plan is not None
    assert later == ["ran"]
    assert "plan change hook 'broken' failed" in caplog.text
    assert "display is down" in caplog.text


async def test_a_hook_may_call_the_notebook() -> None:
    notebook = PlanNotebook()
    views: list[str] = []

    async def show(nb: PlanNotebook, plan: Plan | None) -> None:
        if plan is not None:
            views.append((await nb.view_subtasks([0])).get_text().splitlines()[2])
            if plan.subtasks[0].state == "todo":
                await nb.update_subtask_state(0, "in_progress")  # re-enters: no deadlock

    notebook.register_plan_change_hook("show", show)
    await notebook.create_plan("P", "d", "e", [subtask_dict("A")])
    assert views == ["- [ ] A", "- [ ] [WIP]A"]


class SlowStorage(InMemoryPlanStorage):
    """Yields to other tasks inside every call, as a storage doing I/O does."""

    async def add_plan(self, plan: Plan, override: bool = True) -> None:
        await anyio.lowlevel.checkpoint()
        await super().add_plan(plan, override)

    async def get_plan(self, plan_id: str) -> Plan | None:
        await anyio.lowlevel.checkpoint()
        return await super().get_plan(plan_id)


async def test_concurrent_calls_are_applied_one_after_the_other() -> None:
    notebook = await notebook_with("A", "B", "C", storage=SlowStorage())
    results: list[str] = []

    async def call(tool: str, *args: object) -> None:
        results.append((await getattr(notebook, tool)(*args)).get_text())

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(call, "finish_subtask", 0, "a")
    assert sorted(r.split(" named")[0] for r in results) == [
        "Error: Subtask (at index 0)",
        "Error: Subtask (at index 0)",
        "Subtask (at index 0)",
    ]
    results.clear()
    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(call, "finish_plan", "abandoned", "stop")
    assert sorted(results) == [
        "The current plan is finished successfully as 'abandoned'.",
        "There is no plan to finish.",
        "There is no plan to finish.",
    ]
    (stored,) = await notebook.storage.get_plans()
    results.clear()
    async with anyio.create_task_group() as tg:
        for _ in range(2):
            tg.start_soon(call, "recover_historical_plan", stored.id)
    assert sorted(r[:24] for r in results) == [
        "Error: The plan with ID ",
        "Historical plan named 'R",
    ]
    assert len(await notebook.storage.get_plans()) == 1


class GatedStorage(InMemoryPlanStorage):
    """Holds every add_plan until the test opens the gate (a slow disk, under control)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate: anyio.Event | None = None

    async def add_plan(self, plan: Plan, override: bool = True) -> None:
        self.gate = anyio.Event()
        await self.gate.wait()
        await super().add_plan(plan, override)


def test_a_notebook_moves_between_backends() -> None:
    storage = GatedStorage()
    notebook = PlanNotebook(storage=storage)

    async def work(name: str) -> None:
        await notebook.create_plan(name, "d", "e", [subtask_dict("A")])
        async with anyio.create_task_group() as tg:
            tg.start_soon(notebook.finish_plan, "abandoned", "moved on")  # holds the lock
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(notebook.update_subtask_state, 0, "in_progress")  # waits in line
            await anyio.wait_all_tasks_blocked()
            assert storage.gate is not None
            storage.gate.set()

    for name, backend in [("first", "asyncio"), ("second", "trio"), ("third", "asyncio")]:
        anyio.run(work, name, backend=backend)
    assert [plan["name"] for plan in storage.state_dict()["plans"].values()] == [
        "first",
        "second",
        "third",
    ]
    assert notebook.current_plan is None


async def test_a_waiter_cancelled_in_line_leaves_the_lock_usable() -> None:
    notebook = await notebook_with("A")
    storage = GatedStorage()
    notebook.storage = storage
    results: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(notebook.finish_plan, "abandoned", "stop")  # holds the lock, waits
        await anyio.wait_all_tasks_blocked()
        with anyio.CancelScope() as waiter_scope:
            waiter_scope.cancel()
            results.append((await notebook.update_subtask_state(0, "in_progress")).get_text())
        assert storage.gate is not None
        storage.gate.set()
    assert results == []  # the cancelled waiter never ran
    assert notebook.current_plan is None
    with anyio.fail_after(10):  # a lock left held would hang here
        res = await notebook.create_plan("Next", "d", "e", [subtask_dict("B")])
    assert res.get_text() == "Plan 'Next' created successfully."


async def test_in_memory_storage() -> None:
    storage = InMemoryPlanStorage()
    first = Plan(name="A", description="d", expected_outcome="e", subtasks=[subtask("x")])
    second = Plan(name="B", description="d", expected_outcome="e", subtasks=[])
    await storage.add_plan(first)
    await storage.add_plan(second)
    assert await storage.get_plans() == [first, second]
    assert await storage.get_plan(first.id) is first
    assert await storage.get_plan("missing") is None
    renamed = first.copy()
    renamed.name = "A2"
    with pytest.raises(ValueError, match=f"Plan with id {first.id} already exists."):
        await storage.add_plan(renamed, override=False)
    await storage.add_plan(renamed)
    assert [p.name for p in await storage.get_plans()] == ["A2", "B"]  # keeps its place
    with pytest.raises(TypeError, match="Plan"):
        await storage.add_plan({"name": "A"})  # type: ignore[arg-type]
    await storage.delete_plan(first.id)
    await storage.delete_plan("missing")
    assert await storage.get_plans() == [second]
    state = storage.state_dict()
    assert state == {"plans": {second.id: second.to_dict()}}
    restored = InMemoryPlanStorage()
    restored.load_state_dict(state)
    assert await restored.get_plans() == [second]


class DictStorage(PlanStorageBase):
    """A storage written against the base class, as a user would."""

    def __init__(self) -> None:
        super().__init__()
        self.saved: dict[str, dict[str, object]] = {}
        self.register_state("saved")

    async def add_plan(self, plan: Plan) -> None:
        self.saved[plan.id] = plan.to_dict()

    async def delete_plan(self, plan_id: str) -> None:
        self.saved.pop(plan_id, None)

    async def get_plans(self) -> list[Plan]:
        return [Plan.from_dict(data) for data in self.saved.values()]

    async def get_plan(self, plan_id: str) -> Plan | None:
        data = self.saved.get(plan_id)
        return None if data is None else Plan.from_dict(data)


async def test_a_custom_storage_keeps_the_history() -> None:
    storage = DictStorage()
    notebook = await notebook_with("A", storage=storage)
    await notebook.finish_plan("abandoned", "stop")
    (plan_id,) = storage.saved
    assert "Plan named 'Report'" in (await notebook.view_historical_plans()).get_text()
    assert notebook.state_dict()["storage"] == {"saved": storage.saved}
    res = await notebook.recover_historical_plan(plan_id)
    assert res.get_text().startswith("Historical plan named 'Report'")
    with pytest.raises(TypeError):
        PlanStorageBase()  # type: ignore[abstract]
