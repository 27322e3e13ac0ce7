"""Every plan tool: its success texts, its error texts, and that an error changes nothing."""

# The exact texts the model reads are kept whole, one per line, to compare them at a glance.
# ruff: noqa: E501

from __future__ import annotations

import json
from typing import Any

import pytest

from agentscope_rt.plan import PlanNotebook, SubTask

from ._support import PLAN_TOOLS, notebook_with, states, subtask, subtask_dict, text_of

NO_PLAN = (
    "Error: The current plan is None, you need to create a plan by calling create_plan() first."
)


def _snapshot(notebook: PlanNotebook) -> str:
    return json.dumps(notebook.state_dict())


async def _refused(notebook: PlanNotebook, tool: str, expected: str, **args: Any) -> None:
    """Call *tool*; it must answer *expected* and leave the notebook unchanged."""
    before = _snapshot(notebook)
    res = await getattr(notebook, tool)(**args)
    assert text_of(res) == expected
    assert _snapshot(notebook) == before


# -- no plan -----------------------------------------------------------------------------------


async def test_without_a_plan_every_tool_answers_in_text() -> None:
    notebook = PlanNotebook()
    await _refused(notebook, "view_subtasks", NO_PLAN, subtask_idx=[0])
    await _refused(notebook, "update_subtask_state", NO_PLAN, subtask_idx=0, state="todo")
    await _refused(notebook, "finish_subtask", NO_PLAN, subtask_idx=0, subtask_outcome="x")
    await _refused(
        notebook, "revise_current_plan", NO_PLAN, subtask_idx=0, action="delete", subtask=None
    )
    await _refused(
        notebook, "finish_plan", "There is no plan to finish.", state="done", outcome="x"
    )
    await _refused(notebook, "view_historical_plans", "")
    await _refused(
        notebook, "recover_historical_plan", "Cannot find the plan with ID 'nope'.", plan_id="nope"
    )


# -- create_plan -------------------------------------------------------------------------------


async def test_create_plan_accepts_dicts_and_subtasks() -> None:
    notebook = PlanNotebook()
    res = await notebook.create_plan(
        "Trip", "A weekend.", "Booked.", [subtask_dict("Train"), subtask("Hotel")]
    )
    assert text_of(res) == "Plan 'Trip' created successfully."
    plan = notebook.current_plan
    assert plan is not None
    assert [s.name for s in plan.subtasks] == ["Train", "Hotel"]
    assert all(isinstance(s, SubTask) for s in plan.subtasks)
    assert (plan.state, states(plan)) == ("todo", ["todo", "todo"])


async def test_a_second_plan_is_refused_while_one_is_current() -> None:
    notebook = await notebook_with("A", "B")
    await notebook.finish_subtask(0, "a")
    await _refused(
        notebook,
        "create_plan",
        "Error: There is already a current plan named 'Report' (1 of 2 subtasks done or "
        "abandoned), so no new plan was created. Finish it first by calling 'finish_plan' "
        "(with state 'done', or 'abandoned' after confirming with the user), or change it by "
        "calling 'revise_current_plan'.",
        name="Other",
        description="d",
        expected_outcome="e",
        subtasks=[subtask_dict("X")],
    )
    # The way forward the error names works, and the old plan is kept in the history.
    await notebook.finish_plan("abandoned", "The user wants another plan.")
    res = await notebook.create_plan("Other", "d", "e", [subtask_dict("X")])
    assert text_of(res) == "Plan 'Other' created successfully."
    (old,) = await notebook.storage.get_plans()
    assert (old.name, old.state, old.outcome) == (
        "Report",
        "abandoned",
        "The user wants another plan.",
    )


async def test_create_plan_checks_its_subtasks() -> None:
    notebook = PlanNotebook(max_subtasks=2)
    for subtasks, expected in [
        (
            [],
            "Error: A plan needs a non-empty list of subtasks; call create_plan again with at least one subtask.",
        ),
        (
            "A, B",
            "Error: A plan needs a non-empty list of subtasks; call create_plan again with at least one subtask.",
        ),
        (
            [subtask_dict("A"), subtask_dict("B"), subtask_dict("C")],
            "Error: The plan has 3 subtasks, more than the 2 allowed (max_subtasks=2). Merge some subtasks and call create_plan again.",
        ),
        (
            [subtask_dict("A"), {"name": "B", "description": 5, "expected_outcome": "x"}],
            "Error: Invalid plan: subtasks[1].description: expected a string, got int.",
        ),
        (
            [subtask_dict("A"), {"name": "B"}],
            "Error: Invalid plan: subtasks[1].description: required field missing; subtasks[1].expected_outcome: required field missing.",
        ),
        (
            [subtask_dict("A", state="paused")],
            "Error: Invalid plan: subtasks[0].state: expected one of 'todo', 'in_progress', 'done', 'abandoned', got 'paused'.",
        ),
        (
            [subtask_dict("A"), subtask_dict("B", state="in_progress")],
            "Error: Invalid plan: the subtask at index 0 ('A') would be 'todo' before the subtask at index 1 ('B'), which is 'in_progress', but every subtask before the one in progress must be done or abandoned.",
        ),
        (
            [subtask_dict("A", state="in_progress"), subtask_dict("B", state="in_progress")],
            "Error: Invalid plan: subtasks at index 0 ('A') and 1 ('B') would both be 'in_progress', but only one subtask can be 'in_progress' at a time.",
        ),
    ]:
        await _refused(
            notebook,
            "create_plan",
            expected,
            name="P",
            description="d",
            expected_outcome="e",
            subtasks=subtasks,
        )
    await _refused(
        notebook,
        "create_plan",
        "Error: Invalid plan: name: expected a string, got int.",
        name=7,
        description="d",
        expected_outcome="e",
        subtasks=[subtask_dict("A")],
    )
    assert notebook.current_plan is None


async def test_a_plan_created_with_a_subtask_in_progress_is_in_progress() -> None:
    notebook = PlanNotebook()
    await notebook.create_plan(
        "P",
        "d",
        "e",
        [subtask_dict("A", state="done", outcome="a"), subtask_dict("B", state="in_progress")],
    )
    assert notebook.current_plan is not None and notebook.current_plan.state == "in_progress"


# -- update_subtask_state ----------------------------------------------------------------------


async def test_update_subtask_state_texts() -> None:
    notebook = await notebook_with("A", "B", "C")
    res = await notebook.update_subtask_state(0, "in_progress")
    assert text_of(res) == (
        "Subtask at index 0, named 'A' is marked as 'in_progress' successfully. "
        "The plan state has been updated to 'in_progress'."
    )
    res = await notebook.update_subtask_state(2, "abandoned")
    assert text_of(res) == "Subtask at index 2, named 'C' is marked as 'abandoned' successfully. "
    res = await notebook.update_subtask_state("0", "todo")  # type: ignore[arg-type]
    assert text_of(res) == (
        "Subtask at index 0, named 'A' is marked as 'todo' successfully. "
        "The plan state has been updated to 'todo'."
    )
    assert states(notebook.current_plan) == ["todo", "todo", "abandoned"]


async def test_update_subtask_state_refusals() -> None:
    notebook = await notebook_with("A", "B", "C")
    await notebook.update_subtask_state(0, "in_progress")
    for args, expected in [
        ({"subtask_idx": 3, "state": "todo"}, "Invalid subtask_idx '3'. Must be between 0 and 2."),
        (
            {"subtask_idx": -1, "state": "abandoned"},
            "Invalid subtask_idx '-1'. Must be between 0 and 2.",
        ),
        (
            {"subtask_idx": "two", "state": "todo"},
            "Invalid type for argument 'subtask_idx'. Expected 'int', but got '<class 'str'>'.",
        ),
        (
            {"subtask_idx": True, "state": "todo"},
            "Invalid type for argument 'subtask_idx'. Expected 'int', but got '<class 'bool'>'.",
        ),
        (
            {"subtask_idx": 1, "state": "done"},
            "Invalid state 'done'. Must be one of 'todo', 'in_progress', 'abandoned'.",
        ),
        (
            {"subtask_idx": 1, "state": "paused"},
            "Invalid state 'paused'. Must be one of 'todo', 'in_progress', 'abandoned'.",
        ),
        (
            {"subtask_idx": 2, "state": "in_progress"},
            "Subtask (at index 0) named 'A' is not done yet. You should finish the previous subtasks first.",
        ),
        (
            {"subtask_idx": 0, "state": "in_progress"},
            "Subtask (at index 0) named 'A' is already 'in_progress'. You should finish it first before starting another subtask.",
        ),
    ]:
        await _refused(notebook, "update_subtask_state", expected, **args)
    await notebook.finish_subtask(0, "a")  # B is now in progress
    await _refused(
        notebook,
        "update_subtask_state",
        "Error: Cannot mark the subtask at index 0 as 'todo' while the subtask at index 1 named "
        "'B' after it is 'in_progress'. Mark that subtask as 'todo' first.",
        subtask_idx=0,
        state="todo",
    )
    await _refused(
        notebook,
        "update_subtask_state",
        "Subtask (at index 1) named 'B' is not done yet. You should finish the previous "
        "subtasks first.",
        subtask_idx=2,
        state="in_progress",
    )


# -- finish_subtask ----------------------------------------------------------------------------


async def test_finish_subtask_activates_the_next_subtask_to_do() -> None:
    notebook = await notebook_with("A", "B", "C", "D")
    await notebook.update_subtask_state(1, "abandoned")
    res = await notebook.finish_subtask(0, "a")
    assert text_of(res) == (
        "Subtask (at index 0) named 'A' is marked as done successfully. The next subtask named "
        "'C' is activated. The plan state has been updated to 'in_progress'."
    )
    # AgentScope would have set the abandoned B in progress (subtask 0 + 1, whatever it is).
    assert states(notebook.current_plan) == ["done", "abandoned", "in_progress", "todo"]
    await notebook.update_subtask_state(3, "abandoned")
    res = await notebook.finish_subtask(2, "c")
    assert text_of(res) == "Subtask (at index 2) named 'C' is marked as done successfully. "
    assert states(notebook.current_plan) == ["done", "abandoned", "done", "abandoned"]
    assert notebook.current_plan is not None
    subtask_c = notebook.current_plan.subtasks[2]
    assert subtask_c.outcome == "c" and subtask_c.finished_at is not None


async def test_finish_subtask_refusals() -> None:
    notebook = await notebook_with("A", "B", "C")
    for args, expected in [
        (
            {"subtask_idx": 3, "subtask_outcome": "x"},
            "Invalid subtask_idx '3'. Must be between 0 and 2.",
        ),
        (
            {"subtask_idx": -1, "subtask_outcome": "x"},
            "Invalid subtask_idx '-1'. Must be between 0 and 2.",
        ),
        (
            {"subtask_idx": 1.5, "subtask_outcome": "x"},
            "Invalid type for argument 'subtask_idx'. Expected 'int', but got '<class 'float'>'.",
        ),
        (
            {"subtask_idx": 0, "subtask_outcome": None},
            "Error: Invalid type for argument 'subtask_outcome'. Expected 'str', but got '<class 'NoneType'>'.",
        ),
        (
            {"subtask_idx": 2, "subtask_outcome": "x"},
            "Cannot finish subtask at index 2 because the previous subtask (at index 0) named 'A' is not done yet. You should finish the previous subtasks first.",
        ),
    ]:
        await _refused(notebook, "finish_subtask", expected, **args)
    await notebook.finish_subtask(0, "a")
    await _refused(
        notebook,
        "finish_subtask",
        "Error: Subtask (at index 0) named 'A' is already done. Go on with the next subtask.",
        subtask_idx=0,
        subtask_outcome="again",
    )


async def test_an_abandoned_subtask_can_still_be_finished() -> None:
    notebook = await notebook_with("A", "B")
    await notebook.update_subtask_state(0, "abandoned")
    await notebook.update_subtask_state(1, "in_progress")
    res = await notebook.finish_subtask(0, "done after all")
    assert text_of(res) == "Subtask (at index 0) named 'A' is marked as done successfully. "
    assert states(notebook.current_plan) == ["done", "in_progress"]


# -- revise_current_plan -----------------------------------------------------------------------


async def test_revise_add_revise_delete() -> None:
    notebook = await notebook_with("A", "C")
    res = await notebook.revise_current_plan(1, "add", subtask_dict("B"))
    assert text_of(res) == "New subtask is added successfully at index 1."
    res = await notebook.revise_current_plan(3, "add", subtask("D"))
    assert text_of(res) == "New subtask is added successfully at index 3."
    await notebook.update_subtask_state(0, "in_progress")
    plan = notebook.current_plan
    assert plan is not None
    created = plan.subtasks[0].created_at
    res = await notebook.revise_current_plan(
        0, "revise", {"name": "A2", "description": "new", "expected_outcome": "a2"}
    )  # type: ignore[arg-type]
    assert text_of(res) == "Subtask at index 0 is revised successfully."
    # A dict revision keeps what it does not restate: the subtask is still in progress.
    assert (plan.subtasks[0].name, plan.subtasks[0].state, plan.subtasks[0].created_at) == (
        "A2",
        "in_progress",
        created,
    )
    res = await notebook.revise_current_plan(3, "delete")
    assert text_of(res) == "Subtask (named 'D') at index 3 is deleted successfully."
    assert [s.name for s in plan.subtasks] == ["A2", "B", "C"]
    res = await notebook.revise_current_plan(0, "revise", subtask_dict("A3", state="todo"))  # type: ignore[arg-type]
    assert text_of(res) == "Subtask at index 0 is revised successfully."
    assert states(plan) == ["todo", "todo", "todo"]


async def test_revise_refusals() -> None:
    notebook = await notebook_with("A", "B", max_subtasks=3)
    for args, expected in [
        (
            {"subtask_idx": 0, "action": "rename"},
            "Error: Invalid action 'rename'. Must be one of 'add', 'revise', 'delete'.",
        ),
        (
            {"subtask_idx": 0, "action": "revise"},
            "Error: The subtask must be provided when action is 'revise', but got None.",
        ),
        (
            {"subtask_idx": 0, "action": "add"},
            "Error: The subtask must be provided when action is 'add', but got None.",
        ),
        (
            {"subtask_idx": 2, "action": "delete"},
            "Error: Invalid subtask_idx '2' for action 'delete'. Must be between 0 and 1.",
        ),
        (
            {"subtask_idx": -1, "action": "delete"},
            "Error: Invalid subtask_idx '-1' for action 'delete'. Must be between 0 and 1.",
        ),
        (
            {"subtask_idx": 3, "action": "add", "subtask": subtask_dict("X")},
            "Error: Invalid subtask_idx '3' for action 'add'. Must be between 0 and 2.",
        ),
        (
            {"subtask_idx": "x", "action": "delete"},
            "Error: Invalid type for argument 'subtask_idx'. Expected 'int', but got '<class 'str'>'.",
        ),
        (
            {"subtask_idx": 0, "action": "revise", "subtask": {"name": 3}},
            "Error: Invalid subtask: name: expected a string, got int.",
        ),
        (
            {"subtask_idx": 0, "action": "add", "subtask": "B2"},
            "Error: Invalid subtask: expected a subtask object, got str.",
        ),
    ]:
        await _refused(notebook, "revise_current_plan", expected, **args)
    await notebook.revise_current_plan(2, "add", subtask_dict("C"))
    await _refused(
        notebook,
        "revise_current_plan",
        "Error: The plan already has 3 subtasks, the most allowed (max_subtasks=3). Revise or "
        "delete a subtask instead.",
        subtask_idx=0,
        action="add",
        subtask=subtask_dict("X"),
    )
    await notebook.finish_subtask(0, "a")  # B in progress
    await notebook.revise_current_plan(2, "delete")
    await _refused(
        notebook,
        "revise_current_plan",
        "Error: Cannot add the subtask at index 1: the subtask at index 1 ('X') would be 'todo' "
        "before the subtask at index 2 ('B'), which is 'in_progress', but every subtask before "
        "the one in progress must be done or abandoned. Change the subtask states with "
        "'update_subtask_state' first.",
        subtask_idx=1,
        action="add",
        subtask=subtask_dict("X"),
    )
    await _refused(
        notebook,
        "revise_current_plan",
        "Error: Cannot revise the subtask at index 0: the subtask at index 0 ('A') would be "
        "'todo' before the subtask at index 1 ('B'), which is 'in_progress', but every subtask "
        "before the one in progress must be done or abandoned. Change the subtask states with "
        "'update_subtask_state' first.",
        subtask_idx=0,
        action="revise",
        subtask=subtask("A"),
    )


async def test_the_last_subtask_cannot_be_deleted() -> None:
    notebook = await notebook_with("A")
    await _refused(
        notebook,
        "revise_current_plan",
        "Error: Cannot delete the only subtask of the plan. Add the subtask that replaces it "
        "first, or finish the plan by calling 'finish_plan'.",
        subtask_idx=0,
        action="delete",
    )


# -- view_subtasks -----------------------------------------------------------------------------


async def test_view_subtasks() -> None:
    notebook = await notebook_with("A", "B")
    plan = notebook.current_plan
    assert plan is not None
    res = await notebook.view_subtasks([1, 5, -1])
    assert text_of(res) == (
        f"Subtask at index 1:\n```\n{plan.subtasks[1].to_markdown(detailed=True)}\n```\n\n"
        "Invalid subtask_idx '[5, -1]'. Must be between 0 and 1."
    )
    res = await notebook.view_subtasks(0)  # type: ignore[arg-type]
    assert (
        text_of(res)
        == f"Subtask at index 0:\n```\n{plan.subtasks[0].to_markdown(detailed=True)}\n```\n"
    )
    assert text_of(await notebook.view_subtasks([])) == ""


# -- finish_plan, history, recovery ------------------------------------------------------------


async def test_finish_plan() -> None:
    notebook = await notebook_with("A", "B")
    await notebook.finish_subtask(0, "a")
    for args, expected in [
        (
            {"state": "finished", "outcome": "x"},
            "Error: Invalid state 'finished'. Must be one of 'done', 'abandoned'.",
        ),
        (
            {"state": "done", "outcome": 3},
            "Error: Invalid type for argument 'outcome'. Expected 'str', but got '<class 'int'>'.",
        ),
        (
            {"state": "done", "outcome": "x"},
            "Error: Cannot finish the plan as 'done' because the subtask at index 1 named 'B' is 'in_progress'. Finish it by calling 'finish_subtask' or abandon it by calling 'update_subtask_state' first, or finish the plan as 'abandoned'.",
        ),
    ]:
        await _refused(notebook, "finish_plan", expected, **args)
    await notebook.finish_subtask(1, "b")
    plan = notebook.current_plan
    res = await notebook.finish_plan("done", "All written.")
    assert text_of(res) == "The current plan is finished successfully as 'done'."
    assert notebook.current_plan is None
    (stored,) = await notebook.storage.get_plans()
    assert plan is not None and stored.id == plan.id
    assert (stored.state, stored.outcome) == ("done", "All written.")
    assert stored.finished_at is not None


async def test_a_storage_that_fails_loses_nothing() -> None:
    from agentscope_rt.plan import InMemoryPlanStorage, Plan

    class Broken(InMemoryPlanStorage):
        async def add_plan(self, plan: Plan, override: bool = True) -> None:
            raise OSError("disk full")

    notebook = await notebook_with("A", storage=Broken())
    before = json.dumps(notebook.state_dict())
    with pytest.raises(OSError, match="disk full"):
        await notebook.finish_plan("abandoned", "stop")
    assert json.dumps(notebook.state_dict()) == before


async def test_view_and_recover_historical_plans() -> None:
    notebook = await notebook_with("A", "B")
    first = notebook.current_plan
    assert first is not None
    await notebook.finish_subtask(0, "a")
    await notebook.finish_plan("abandoned", "later")
    res = await notebook.view_historical_plans()
    assert text_of(res) == (
        f"Plan named 'Report':\n- ID: {first.id}\n- Created at: {first.created_at}\n"
        "- Description: Write a report.\n- State: abandoned\n"
    )
    await notebook.create_plan("Second", "d", "e", [subtask_dict("X")])
    second = notebook.current_plan
    assert second is not None
    res = await notebook.recover_historical_plan(first.id)
    assert text_of(res) == (
        f"The current plan named 'Second' is replaced by the historical plan named 'Report' "
        f"with ID '{first.id}'."
    )
    current = notebook.current_plan
    assert current is not None and current.id == first.id
    # Reopened where it stopped: B is still in progress, the plan is in progress again.
    assert (current.state, current.outcome, current.finished_at) == ("in_progress", None, None)
    assert states(current) == ["done", "in_progress"]
    stored_second = await notebook.storage.get_plan(second.id)
    assert stored_second is not None and stored_second.state == "abandoned"
    assert stored_second.outcome == (
        f"The plan execution is interrupted by a new plan with ID '{first.id}'."
    )
    # The stored record is not the plan being worked on.
    await notebook.finish_subtask(1, "b")
    stored_first = await notebook.storage.get_plan(first.id)
    assert stored_first is not None and stored_first.state == "abandoned"
    assert states(stored_first) == ["done", "in_progress"]
    await _refused(
        notebook,
        "recover_historical_plan",
        f"Error: The plan with ID '{first.id}' is already the current plan.",
        plan_id=first.id,
    )
    await notebook.finish_plan("done", "ok")
    res = await notebook.recover_historical_plan(second.id)
    assert text_of(res) == (
        f"Historical plan named 'Second' with ID '{second.id}' is recovered successfully."
    )


def test_constructor_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="max_subtasks"):
        PlanNotebook(max_subtasks=0)
    with pytest.raises(ValueError, match="max_subtasks"):
        PlanNotebook(max_subtasks=True)
    with pytest.raises(TypeError, match="plan_to_hint"):
        PlanNotebook(plan_to_hint="hint")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="storage"):
        PlanNotebook(storage={})  # type: ignore[arg-type]
    notebook = PlanNotebook(max_subtasks=4)
    assert notebook.max_subtasks == notebook.max_tasks == 4


def test_list_tools_order() -> None:
    assert [tool.__name__ for tool in PlanNotebook().list_tools()] == PLAN_TOOLS


async def test_the_plan_owns_its_subtasks() -> None:
    shared = subtask("A")
    notebook = PlanNotebook()
    await notebook.create_plan("P", "d", "e", [shared, shared])
    await notebook.revise_current_plan(2, "add", shared)
    await notebook.update_subtask_state(0, "in_progress")
    assert states(notebook.current_plan) == ["in_progress", "todo", "todo"]
    assert shared.state == "todo"
