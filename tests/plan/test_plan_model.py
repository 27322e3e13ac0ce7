"""SubTask and Plan: fields, ids, timestamps, markdown, state refresh and JSON."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentscope_rt.exception import MessageFormatError
from agentscope_rt.plan import Plan, SubTask
from agentscope_rt.plan._plan_model import new_plan_id

from ._support import TIMESTAMP, subtask

ALPHABET = set("23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz")


def _plan(*subtasks: SubTask) -> Plan:
    return Plan(
        name="Trip",
        description="A weekend in Lyon.",
        expected_outcome="Booked.",
        subtasks=list(subtasks),
        created_at="2025-01-02 03:04:05.678",
    )


def test_defaults_follow_agentscope() -> None:
    task = SubTask(name="a", description="b", expected_outcome="c")
    assert (task.outcome, task.state, task.finished_at) == (None, "todo", None)
    assert TIMESTAMP.match(task.created_at)
    plan = Plan(name="n", description="d", expected_outcome="e", subtasks=[task])
    assert (plan.state, plan.finished_at, plan.outcome) == ("todo", None, None)
    assert TIMESTAMP.match(plan.created_at)
    assert len(plan.id) == 22 and set(plan.id) <= ALPHABET


def test_plan_ids_are_short_uuids() -> None:
    ids = {new_plan_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(len(i) == 22 and set(i) <= ALPHABET for i in ids)
    # Decoding gives back a version-4 UUID, as shortuuid.uuid() makes.
    for plan_id in list(ids)[:50]:
        number = 0
        for char in plan_id:
            number = number * 57 + sorted(ALPHABET).index(char)
        assert (number >> 76) & 0xF == 4
        assert (number >> 62) & 0x3 == 0b10


def test_arguments_are_keyword_only_and_checked() -> None:
    with pytest.raises(TypeError):
        SubTask("a", "b", "c")  # type: ignore[misc]
    with pytest.raises(TypeError, match="name"):
        SubTask(name=5, description="b", expected_outcome="c")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="state"):
        SubTask(name="a", description="b", expected_outcome="c", state="finished")  # type: ignore[arg-type]
    task = subtask("A")
    with pytest.raises(ValueError):
        task.state = "finished"  # type: ignore[assignment]
    assert task.state == "todo"


def test_subtask_dicts_become_subtasks_and_bad_ones_name_the_field() -> None:
    plan = Plan(
        name="n",
        description="d",
        expected_outcome="e",
        subtasks=[{"name": "a", "description": "b", "expected_outcome": "c"}],  # type: ignore[list-item]
    )
    assert isinstance(plan.subtasks[0], SubTask)
    with pytest.raises(MessageFormatError, match=r"subtasks\[1\]\.state") as info:
        Plan(
            name="n",
            description="d",
            expected_outcome="e",
            subtasks=[
                subtask("A"),
                {"name": "a", "description": "b", "expected_outcome": "c", "state": "x"},
            ],  # type: ignore[list-item]
        )
    assert "expected one of 'todo', 'in_progress', 'done', 'abandoned', got 'x'" in str(info.value)


def test_subtask_markdown_in_every_state() -> None:
    task = SubTask(
        name="Draft",
        description="Write it.",
        expected_outcome="draft.md",
        created_at="2025-01-02 03:04:05.678",
    )
    expected = {
        "todo": "- [ ] Draft",
        "in_progress": "- [ ] [WIP]Draft",
        "done": "- [x] Draft",
        "abandoned": "- [ ] [Abandoned]Draft",
    }
    oneline = {
        "todo": "- [] Draft",
        "in_progress": "- [][WIP] Draft",
        "done": "- [x] Draft",
        "abandoned": "- [][Abandoned] Draft",
    }
    for state, line in expected.items():
        task.state = state  # type: ignore[assignment]
        assert task.to_markdown() == line
        assert task.to_oneline_markdown() == oneline[state]
        if state != "done":  # a done subtask adds its finish time and outcome (below)
            assert task.to_markdown(detailed=True) == (
                f"{line}\n\t- Created At: 2025-01-02 03:04:05.678\n\t- Description: Write it.\n"
                f"\t- Expected Outcome: draft.md\n\t- State: {state}"
            )
    task.finish("draft.md, 3 pages")
    assert TIMESTAMP.match(task.finished_at or "")
    assert task.to_markdown(detailed=True) == (
        "- [x] Draft\n\t- Created At: 2025-01-02 03:04:05.678\n\t- Description: Write it.\n"
        "\t- Expected Outcome: draft.md\n\t- State: done\n"
        f"\t- Finished At: {task.finished_at}\n\t- Actual Outcome: draft.md, 3 pages"
    )


def test_plan_markdown() -> None:
    plan = _plan(subtask("Book train", state="done"), subtask("Book hotel"))
    assert plan.to_markdown() == (
        "# Trip\n**Description**: A weekend in Lyon.\n**Expected Outcome**: Booked.\n"
        "**State**: todo\n**Created At**: 2025-01-02 03:04:05.678\n## Subtasks\n"
        "- [x] Book train\n- [ ] Book hotel"
    )
    detailed = plan.to_markdown(detailed=True)
    assert detailed.startswith(plan.to_markdown().split("- [x]")[0])
    assert detailed.endswith(plan.subtasks[1].to_markdown(detailed=True))


def test_refresh_plan_state_only_toggles_todo_and_in_progress() -> None:
    plan = _plan(subtask("A"), subtask("B"))
    assert plan.refresh_plan_state() == ""
    plan.subtasks[0].state = "in_progress"
    assert plan.refresh_plan_state() == "The plan state has been updated to 'in_progress'."
    assert plan.state == "in_progress"
    assert plan.refresh_plan_state() == ""
    plan.subtasks[0].state = "done"
    assert plan.refresh_plan_state() == "The plan state has been updated to 'todo'."
    assert plan.state == "todo"
    plan.finish("abandoned", "no longer needed")
    plan.subtasks[1].state = "in_progress"
    assert plan.refresh_plan_state() == ""
    assert (plan.state, plan.outcome) == ("abandoned", "no longer needed")
    assert TIMESTAMP.match(plan.finished_at or "")


def test_json_keys_and_order_are_agentscope_model_dump() -> None:
    plan = _plan(subtask("A"))
    data = plan.to_dict()
    assert list(data) == [
        "id",
        "name",
        "description",
        "expected_outcome",
        "subtasks",
        "created_at",
        "state",
        "finished_at",
        "outcome",
    ]
    assert list(data["subtasks"][0]) == [
        "name",
        "description",
        "expected_outcome",
        "outcome",
        "state",
        "created_at",
        "finished_at",
    ]
    assert plan.model_dump() == data
    assert Plan.from_dict(data) == plan
    assert Plan.model_validate(data) == plan
    assert SubTask.from_dict(data["subtasks"][0]) == plan.subtasks[0]


def test_missing_optional_fields_get_defaults_and_bad_json_names_the_path() -> None:
    plan = Plan.from_dict(
        {
            "name": "n",
            "description": "d",
            "expected_outcome": "e",
            "subtasks": [{"name": "a", "description": "b", "expected_outcome": "c"}],
        }
    )
    assert plan.state == "todo" and len(plan.id) == 22
    with pytest.raises(MessageFormatError, match=r"subtasks\[0\]\.name: expected a string"):
        Plan.from_dict(
            {"name": "n", "description": "d", "expected_outcome": "e", "subtasks": [{"name": 1}]}
        )
    with pytest.raises(MessageFormatError, match="state"):
        Plan.from_dict({**plan.to_dict(), "state": "paused"})


def test_copy_is_independent() -> None:
    plan = _plan(subtask("A"))
    twin = plan.copy()
    twin.subtasks[0].state = "done"
    twin.subtasks.append(subtask("B"))
    assert plan.subtasks == [subtask("A", created_at=plan.subtasks[0].created_at)]
    assert twin.id == plan.id


_text = st.text(max_size=20)
_subtasks = st.builds(
    SubTask,
    name=_text,
    description=_text,
    expected_outcome=_text,
    outcome=st.none() | _text,
    state=st.sampled_from(["todo", "in_progress", "done", "abandoned"]),
    created_at=_text,
    finished_at=st.none() | _text,
)


@given(
    st.builds(
        Plan,
        name=_text,
        description=_text,
        expected_outcome=_text,
        subtasks=st.lists(_subtasks, max_size=4),
        state=st.sampled_from(["todo", "in_progress", "done", "abandoned"]),
        outcome=st.none() | _text,
    )
)
def test_json_round_trip(plan: Plan) -> None:
    assert Plan.from_dict(plan.to_dict()) == plan
