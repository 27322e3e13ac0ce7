"""Shared helpers for the plan tests."""

from __future__ import annotations

import re
from typing import Any

from agentscope_rt.plan import Plan, PlanNotebook, SubTask
from agentscope_rt.tool import ToolResponse

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$")

PLAN_TOOLS = [
    "view_subtasks",
    "update_subtask_state",
    "finish_subtask",
    "create_plan",
    "revise_current_plan",
    "finish_plan",
    "view_historical_plans",
    "recover_historical_plan",
]
"""The plan notebook's tools, in the order ``list_tools`` gives them (AgentScope's)."""


def subtask_dict(name: str, **extra: Any) -> dict[str, Any]:
    """A subtask as a model sends it."""
    return {
        "name": name,
        "description": f"Do {name.lower()} carefully.",
        "expected_outcome": f"{name} is complete.",
        **extra,
    }


def subtask(name: str, **extra: Any) -> SubTask:
    return SubTask(**subtask_dict(name, **extra))


def text_of(res: ToolResponse) -> str:
    """The one text a plan tool returns (the tools always answer with one text block)."""
    assert len(res.content) == 1
    block = res.content[0]
    assert block.type == "text"
    return block.text  # type: ignore[union-attr]


async def notebook_with(*names: str, **kwargs: Any) -> PlanNotebook:
    """A notebook whose current plan has subtasks *names* (all todo)."""
    notebook = PlanNotebook(**kwargs)
    res = await notebook.create_plan(
        "Report", "Write a report.", "report.md", [subtask_dict(n) for n in names]
    )
    assert text_of(res) == "Plan 'Report' created successfully."
    return notebook


def states(plan: Plan | None) -> list[str]:
    assert plan is not None
    return [s.state for s in plan.subtasks]


def invariant_problems(notebook: PlanNotebook) -> list[str]:
    """What breaks the plan's rules: at most one subtask in progress, everything before it
    done or abandoned, the plan in progress while a subtask is, a current plan never
    finished, every state known."""
    plan = notebook.current_plan
    if plan is None:
        return []
    problems = []
    known = {"todo", "in_progress", "done", "abandoned"}
    if plan.state not in known or any(s.state not in known for s in plan.subtasks):
        problems.append("unknown state")
    in_progress = [i for i, s in enumerate(plan.subtasks) if s.state == "in_progress"]
    if len(in_progress) > 1:
        problems.append(f"several subtasks in progress: {in_progress}")
    if in_progress:
        for s in plan.subtasks[: in_progress[0]]:
            if s.state not in ("done", "abandoned"):
                problems.append(f"{s.name} is {s.state} before the subtask in progress")
        if plan.state != "in_progress":
            problems.append(f"plan is {plan.state} while a subtask is in progress")
    if plan.state in ("done", "abandoned"):
        problems.append(f"the current plan is {plan.state}")
    if not plan.subtasks:
        problems.append("the plan has no subtasks")
    return problems
