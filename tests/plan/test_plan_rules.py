"""The plan notebook keeps its rules for loaded state and for every argument a model sends.

A loaded state may not break what the tools keep (one subtask in progress, everything before it
finished, no finished plan as the current one); an index the schema accepts (``1.0`` is an
``integer`` in JSON Schema) is taken as that index; a plan id of the wrong type is an argument
error the model reads, never a ``TypeError``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agentscope_rt.exception import StateError
from agentscope_rt.message import TextBlock, ToolUseBlock
from agentscope_rt.plan import PlanNotebook
from agentscope_rt.tool import Toolkit

from ._support import subtask_dict


def _plan_state(*states: str, plan_state: str = "in_progress") -> dict[str, Any]:
    notebook = PlanNotebook()
    subtasks = [subtask_dict(f"S{i}", state=s) for i, s in enumerate(states)]
    state = notebook.state_dict()
    state["current_plan"] = {
        "id": "P1",
        "name": "Plan",
        "description": "A plan.",
        "expected_outcome": "Done.",
        "subtasks": subtasks,
        "created_at": "2026-11-24 09:25:00.646",
        "state": plan_state,
        "finished_at": None,
        "outcome": None,
    }
    return state


@pytest.mark.parametrize(
    ("states", "plan_state", "problem"),
    [
        (("in_progress", "in_progress"), "in_progress", "only one subtask can be 'in_progress'"),
        (("todo", "in_progress"), "in_progress", "must be done or abandoned"),
        (("done", "done"), "done", "the current plan is 'done'"),
        (("done", "abandoned"), "abandoned", "the current plan is 'abandoned'"),
        ((), "todo", "no subtasks"),
    ],
)
def test_a_state_breaking_the_plan_rules_is_refused(
    states: tuple[str, ...], plan_state: str, problem: str
) -> None:
    notebook = PlanNotebook()
    before = notebook.state_dict()
    with pytest.raises(StateError, match=problem):
        notebook.load_state_dict(_plan_state(*states, plan_state=plan_state))
    assert notebook.state_dict() == before


def test_a_finished_plan_recovered_by_agentscope_is_reopened() -> None:
    # AgentScope's recover_historical_plan leaves a done plan current (and in storage).
    state = _plan_state("done", "done", plan_state="done")
    state["current_plan"]["outcome"] = "All done."
    state["current_plan"]["finished_at"] = "2026-11-24 09:30:00.000"
    state["storage"]["plans"]["P1"] = copy.deepcopy(state["current_plan"])
    notebook = PlanNotebook()
    notebook.load_state_dict(state)
    plan = notebook.current_plan
    assert plan is not None
    assert (plan.state, plan.outcome, plan.finished_at) == ("todo", None, None)
    stored = notebook.state_dict()["storage"]["plans"]["P1"]
    assert (stored["state"], stored["outcome"]) == ("done", "All done.")


def test_a_valid_state_loads() -> None:
    notebook = PlanNotebook()
    state = _plan_state("done", "abandoned", "in_progress", "todo")
    notebook.load_state_dict(state)
    assert notebook.current_plan is not None
    states = [s.state for s in notebook.current_plan.subtasks]
    assert states == ["done", "abandoned", "in_progress", "todo"]


async def _call(toolkit: Toolkit, tool: str, /, **arguments: Any) -> str:
    last = None
    async for chunk in toolkit.call_tool_function(ToolUseBlock("c", tool, arguments)):
        last = chunk
    assert last is not None
    return "".join(b.text for b in last.content if isinstance(b, TextBlock))


async def test_an_integral_float_index_is_the_index_the_schema_accepts() -> None:
    notebook = PlanNotebook()
    toolkit = Toolkit()
    for tool in notebook.list_tools():
        toolkit.register_tool_function(tool)
    subtasks = [subtask_dict("A"), subtask_dict("B"), subtask_dict("C")]
    await _call(
        toolkit, "create_plan", name="P", description="d", expected_outcome="o", subtasks=subtasks
    )
    started = await _call(toolkit, "update_subtask_state", subtask_idx=0.0, state="in_progress")
    assert started.startswith("Subtask at index 0, named 'A' is marked as 'in_progress'")
    finished = await _call(toolkit, "finish_subtask", subtask_idx=0.0, subtask_outcome="a")
    assert finished.startswith("Subtask (at index 0) named 'A' is marked as done")
    viewed = await _call(toolkit, "view_subtasks", subtask_idx=[1.0])
    assert viewed.startswith("Subtask at index 1:")
    deleted = await _call(toolkit, "revise_current_plan", subtask_idx=2.0, action="delete")
    assert deleted == "Subtask (named 'C') at index 2 is deleted successfully."
    # A fraction fails the schema: an argument error, and nothing changes.
    half = await _call(toolkit, "update_subtask_state", subtask_idx=1.5, state="todo")
    assert half.startswith("InvalidArgumentsError: ") and "'integer'" in half


async def test_a_plan_id_of_the_wrong_type_is_an_argument_error() -> None:
    notebook = PlanNotebook()
    toolkit = Toolkit()
    for tool in notebook.list_tools():
        toolkit.register_tool_function(tool)
    through = await _call(toolkit, "recover_historical_plan", plan_id=["x"])
    assert through.startswith("InvalidArgumentsError: ")
    for wrong in (["x"], {"a": 1}, 3):
        direct = await notebook.recover_historical_plan(wrong)  # type: ignore[arg-type]
        assert direct.get_text() == (
            f"Error: Invalid type for argument 'plan_id'. Expected 'str', but got '{type(wrong)}'."
        )
