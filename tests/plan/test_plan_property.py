"""Random sequences of plan tool calls, valid and not: no call raises, a refused call changes
nothing, and the plan always keeps its rules."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from agentscope_rt.plan import Plan, PlanNotebook
from agentscope_rt.tool import ToolResponse

from ._support import invariant_problems

NAMES = st.sampled_from(["A", "B", "C"])
# Mostly indexes that exist, sometimes ones that do not or are not numbers.
INDEX = st.one_of(
    st.integers(0, 1),
    st.integers(0, 1),
    st.integers(0, 3),
    st.sampled_from([-1, 6, "1", "x", None, 1.5, True]),
)
STATE = st.one_of(
    st.sampled_from(["todo", "in_progress", "abandoned"]),
    st.sampled_from(["in_progress", "done", "paused"]),
)
PLAIN_SUBTASK = st.fixed_dictionaries(
    {"name": NAMES, "description": st.just("d"), "expected_outcome": st.just("e")}
)
SUBTASK = st.one_of(
    PLAIN_SUBTASK,
    st.fixed_dictionaries(
        {
            "name": NAMES,
            "description": st.just("d"),
            "expected_outcome": st.just("e"),
            "state": STATE,
        },
        optional={"outcome": st.just("o")},
    ),
    st.sampled_from([None, "text", {"name": 3}]),
)

_create = st.tuples(
    st.just("create_plan"),
    st.fixed_dictionaries(
        {
            "name": NAMES,
            "description": st.just("d"),
            "expected_outcome": st.just("e"),
            "subtasks": st.lists(SUBTASK, min_size=1, max_size=4) | st.just([]),
        }
    ),
)
_update = st.tuples(
    st.just("update_subtask_state"),
    st.fixed_dictionaries({"subtask_idx": INDEX, "state": STATE}),
)
_finish_subtask = st.tuples(
    st.just("finish_subtask"),
    st.fixed_dictionaries({"subtask_idx": INDEX, "subtask_outcome": st.just("out")}),
)
_valid_create = st.tuples(
    st.just("create_plan"),
    st.fixed_dictionaries(
        {
            "name": NAMES,
            "description": st.just("d"),
            "expected_outcome": st.just("e"),
            "subtasks": st.lists(PLAIN_SUBTASK, min_size=1, max_size=4),
        }
    ),
)
CALLS = st.one_of(
    _valid_create,
    _create,
    _create,
    _update,
    _update,
    _finish_subtask,
    _finish_subtask,
    _finish_subtask,
    st.tuples(
        st.just("revise_current_plan"),
        st.fixed_dictionaries(
            {
                "subtask_idx": INDEX,
                "action": st.sampled_from(["add", "revise", "delete", "move"]),
                "subtask": SUBTASK,
            }
        ),
    ),
    st.tuples(
        st.just("view_subtasks"),
        st.fixed_dictionaries({"subtask_idx": st.lists(INDEX, max_size=3)}),
    ),
    st.tuples(
        st.just("finish_plan"),
        st.fixed_dictionaries(
            {"state": st.sampled_from(["done", "abandoned", "paused"]), "outcome": st.just("o")}
        ),
    ),
    st.tuples(st.just("view_historical_plans"), st.just({})),
    st.tuples(
        st.just("recover_historical_plan"),
        st.fixed_dictionaries({"plan_id": st.integers(0, 3)}),  # the n-th stored plan, or none
    ),
)

_CHANGED = ("successfully", "is replaced by the historical plan")


@given(st.lists(CALLS, min_size=15, max_size=50), st.sampled_from([None, 2, 3]))
async def test_random_tool_calls_keep_the_plan_valid(
    calls: list[tuple[str, dict[str, Any]]], max_subtasks: int | None
) -> None:
    notebook = PlanNotebook(max_subtasks=max_subtasks)
    changes: list[Plan | None] = []
    notebook.register_plan_change_hook("count", lambda nb, plan: changes.append(plan))
    for tool, args in calls:
        if tool == "recover_historical_plan":
            stored = await notebook.storage.get_plans()
            n = args["plan_id"]
            args = {"plan_id": stored[n].id if n < len(stored) else "unknown"}
        before = json.dumps(notebook.state_dict())
        hooks_before = len(changes)
        res = await getattr(notebook, tool)(**args)
        assert isinstance(res, ToolResponse) and len(res.content) == 1
        text = res.get_text()
        assert text or tool in ("view_historical_plans", "view_subtasks")
        changed = any(marker in text for marker in _CHANGED)
        event(f"{tool}: {'changed' if changed else 'refused or read'}")
        if changed:
            assert len(changes) == hooks_before + 1, text
        else:
            assert json.dumps(notebook.state_dict()) == before, text
            assert len(changes) == hooks_before, text
        assert invariant_problems(notebook) == [], (tool, args, text)
        plan = notebook.current_plan
        if plan is not None and max_subtasks is not None:
            assert len(plan.subtasks) <= max_subtasks
        # Whatever happened, the state still loads into a fresh notebook unchanged.
        state = notebook.state_dict()
        twin = PlanNotebook()
        twin.load_state_dict(state)
        assert twin.state_dict() == state
