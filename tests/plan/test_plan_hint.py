"""DefaultPlanToHint: which of AgentScope's five texts is chosen, and get_current_hint."""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_rt.plan import DefaultPlanToHint, Plan, PlanNotebook

from ._support import notebook_with, subtask

HINT = DefaultPlanToHint()


def _plan(*states: str) -> Plan:
    return Plan(
        name="P",
        description="d",
        expected_outcome="e",
        subtasks=[subtask(f"S{i}", state=s) for i, s in enumerate(states)],
    )


def _wrapped(text: str) -> str:
    return f"<system-hint>{text}</system-hint>"


def test_no_plan() -> None:
    assert HINT(None) == _wrapped(
        "If the user's query is complex (e.g. programming a website, game or app), or requires "
        "a long chain of steps to complete (e.g. conduct research on a certain topic from "
        "different sources), you NEED to create a plan first by calling 'create_plan'. "
        "Otherwise, you can directly execute the user's query without planning."
    )


@pytest.mark.parametrize(
    "states",
    [("todo", "todo"), ("abandoned", "todo"), ("abandoned", "abandoned"), ()],
)
def test_at_the_beginning(states: tuple[str, ...]) -> None:
    plan = _plan(*states)
    assert HINT(plan) == _wrapped(
        "The current plan:\n```\n"
        f"{plan.to_markdown()}\n"
        "```\n"
        "Your options include:\n"
        "- Mark the first subtask as 'in_progress' by calling 'update_subtask_state' with "
        "subtask_idx=0 and state='in_progress', and start executing it.\n"
        "- If the first subtask is not executable, analyze why and what you can do to advance "
        "the plan, e.g. ask user for more information, revise the plan by calling "
        "'revise_current_plan'.\n"
        "- If the user asks you to do something unrelated to the plan, prioritize the "
        "completion of user's query first, and then return to the plan afterward.\n"
        "- If the user no longer wants to perform the current plan, confirm with the user and "
        "call the 'finish_plan' function.\n"
    )


def test_when_a_subtask_in_progress() -> None:
    plan = _plan("done", "in_progress", "todo")
    assert HINT(plan) == _wrapped(
        "The current plan:\n```\n"
        f"{plan.to_markdown()}\n"
        "```\n"
        "Now the subtask at index 1, named 'S1', is 'in_progress'. Its details are as follows:\n"
        "```\n"
        f"{plan.subtasks[1].to_markdown(detailed=True)}\n"
        "```\n"
        "Your options include:\n"
        "- Go on execute the subtask and get the outcome.\n"
        "- Call 'finish_subtask' with the specific outcome if the subtask is finished.\n"
        "- Ask the user for more information if you need.\n"
        "- Revise the plan by calling 'revise_current_plan' if necessary.\n"
        "- If the user asks you to do something unrelated to the plan, prioritize the "
        "completion of user's query first, and then return to the plan afterward."
    )
    assert "[WIP]S1\n\t- Created At:" in (HINT(plan) or "")


def test_when_no_subtask_in_progress() -> None:
    plan = _plan("done", "abandoned", "done", "todo")
    assert HINT(plan) == _wrapped(
        "The current plan:\n```\n"
        f"{plan.to_markdown()}\n"
        "```\n"
        "The first 2 subtasks are done, and there is no subtask 'in_progress'. Now Your options "
        "include:\n"
        "- Mark the next subtask as 'in_progress' by calling 'update_subtask_state', and start "
        "executing it.\n"
        "- Ask the user for more information if you need.\n"
        "- Revise the plan by calling 'revise_current_plan' if necessary.\n"
        "- If the user asks you to do something unrelated to the plan, prioritize the "
        "completion of user's query first, and then return to the plan afterward."
    )


@pytest.mark.parametrize("states", [("done", "done"), ("done", "abandoned")])
def test_at_the_end(states: tuple[str, ...]) -> None:
    plan = _plan(*states)
    assert HINT(plan) == _wrapped(
        "The current plan:\n```\n"
        f"{plan.to_markdown()}\n"
        "```\n"
        "All the subtasks are done. Now your options are:\n"
        "- Finish the plan by calling 'finish_plan' with the specific outcome, and summarize "
        "the whole process and outcome to the user.\n"
        "- Revise the plan by calling 'revise_current_plan' if necessary.\n"
        "- If the user asks you to do something unrelated to the plan, prioritize the "
        "completion of user's query first, and then return to the plan afterward."
    )


def test_texts_can_be_replaced() -> None:
    class Terse(DefaultPlanToHint):
        no_plan = "Plan if needed."

    assert Terse()(None) == "<system-hint>Plan if needed.</system-hint>"
    custom = DefaultPlanToHint(hint_prefix="[", hint_suffix="]", at_the_end="Finish {plan}")
    plan = _plan("done")
    assert custom(plan) == f"[Finish {plan.to_markdown()}]"
    assert DefaultPlanToHint(no_plan="")(None) is None
    with pytest.raises(TypeError, match="no_plan"):
        DefaultPlanToHint(no_plan=3)  # type: ignore[arg-type]


async def test_get_current_hint_follows_the_plan() -> None:
    notebook = PlanNotebook()
    msg = await notebook.get_current_hint()
    assert msg is not None
    assert (msg.name, msg.role, msg.get_text_content()) == ("user", "user", HINT(None))
    notebook = await notebook_with("A", "B")
    seen = []
    for step in (
        lambda: notebook.update_subtask_state(0, "in_progress"),
        lambda: notebook.finish_subtask(0, "a"),
        lambda: notebook.update_subtask_state(1, "todo"),
        lambda: notebook.update_subtask_state(1, "abandoned"),
    ):
        await step()
        hint = await notebook.get_current_hint()
        assert hint is not None and hint.get_text_content() == HINT(notebook.current_plan)
        seen.append((hint.get_text_content() or "").split("```\n")[-1][:25])
    assert seen == [
        "Your options include:\n- G",
        "Your options include:\n- G",
        "The first 1 subtasks are ",
        "All the subtasks are done",
    ]


async def test_plan_to_hint_may_be_any_function_sync_or_async() -> None:
    calls: list[Any] = []

    def quiet(plan: Plan | None) -> str | None:
        calls.append(plan)
        return None

    notebook = PlanNotebook(plan_to_hint=quiet)
    assert await notebook.get_current_hint() is None
    assert calls == [None]

    async def named(plan: Plan | None) -> str | None:
        return f"plan: {plan.name if plan else '-'}"

    notebook = PlanNotebook(plan_to_hint=named)  # type: ignore[arg-type]
    hint = await notebook.get_current_hint()
    assert hint is not None and hint.get_text_content() == "plan: -"
