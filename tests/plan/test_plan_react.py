"""A ReAct agent working through a plan: the tools it is given, the hint in each prompt, and
memory free of hints afterwards."""

from __future__ import annotations

from typing import Any

from agentscope_rt.agent import ReActAgent
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg
from agentscope_rt.model import ModelCall, ScriptedChatModel, reply, tool_call
from agentscope_rt.plan import DefaultPlanToHint, PlanNotebook

from ..react._support import make_agent
from ._support import PLAN_TOOLS, subtask_dict

HINT = DefaultPlanToHint()


def _agent(model: ScriptedChatModel, notebook: PlanNotebook, **kwargs: Any) -> ReActAgent:
    return make_agent(
        model, sys_prompt="You are a careful planner.", plan_notebook=notebook, **kwargs
    )


def _user(text: str) -> Msg:
    return Msg("user", text, "user")


async def _history(agent: ReActAgent) -> list[Msg]:
    """The tool result messages in the agent's memory."""
    return [m for m in await agent.memory.get_memory() if m.get_content_blocks("tool_result")]


def _last_prompt_text(model_call: ModelCall) -> str:
    """The text of the last message of a formatted prompt (OpenAI format)."""
    message = model_call.messages[-1]
    assert message["role"] == "user"
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(part["text"] for part in content if part.get("type") == "text")


def _hints_in(model_call: ModelCall) -> int:
    return sum("<system-hint>" in str(m.get("content")) for m in model_call.messages)


SCRIPT = [
    reply(
        tool_call(
            "create_plan",
            {
                "name": "Write a report",
                "description": "A short report on solar power.",
                "expected_outcome": "report.md",
                "subtasks": [subtask_dict("Research"), subtask_dict("Draft"), subtask_dict("Edit")],
            },
        )
    ),
    reply(tool_call("update_subtask_state", {"subtask_idx": 0, "state": "in_progress"})),
    reply(tool_call("finish_subtask", {"subtask_idx": 0, "subtask_outcome": "5 sources"})),
    reply(tool_call("finish_subtask", {"subtask_idx": 1, "subtask_outcome": "draft.md"})),
    reply(tool_call("finish_subtask", {"subtask_idx": 2, "subtask_outcome": "report.md"})),
    reply(tool_call("finish_plan", {"state": "done", "outcome": "report.md, 2 pages"})),
    reply("The report is in report.md."),
]


async def test_an_agent_works_through_a_three_subtask_plan() -> None:
    notebook = PlanNotebook()
    snapshots: list[str] = []
    notebook.register_plan_change_hook(
        "record", lambda nb, plan: snapshots.append(plan.to_markdown() if plan else "(none)")
    )
    model = ScriptedChatModel(list(SCRIPT))
    agent = _agent(model, notebook)
    assert [name for name, tool in agent.toolkit.tools.items() if tool.group == "basic"] == (
        PLAN_TOOLS
    )

    res = await agent(_user("Write me a report on solar power."))
    assert res.get_text_content() == "The report is in report.md."
    assert len(model.calls) == 7
    assert all(call.tool_names == PLAN_TOOLS for call in model.calls)

    # Before each step the model saw exactly one hint, as the last message of the prompt,
    # and it was the hint for the plan as it stood then.
    prompts = [_last_prompt_text(call) for call in model.calls]
    assert all(_hints_in(call) == 1 for call in model.calls)
    assert prompts[0] == HINT(None)
    assert "Mark the first subtask as 'in_progress'" in prompts[1]
    assert "**State**: todo" in prompts[1]
    for step, (index, name) in enumerate([(0, "Research"), (1, "Draft"), (2, "Edit")], start=2):
        assert (
            f"Now the subtask at index {index}, named '{name}', is 'in_progress'" in prompts[step]
        )
    assert "- [x] Research\n- [x] Draft\n- [ ] [WIP]Edit" in prompts[4]
    assert "All the subtasks are done." in prompts[5]
    assert "- [x] Research\n- [x] Draft\n- [x] Edit" in prompts[5]
    assert prompts[6] == HINT(None)  # the plan is finished: back to "no plan"

    # The tool results the model read.
    results = [m.get_content_blocks("tool_result")[0] for m in await _history(agent)]
    outputs = [r.output[0].text for r in results]  # type: ignore[index, union-attr]
    assert outputs == [
        "Plan 'Write a report' created successfully.",
        "Subtask at index 0, named 'Research' is marked as 'in_progress' successfully. "
        "The plan state has been updated to 'in_progress'.",
        "Subtask (at index 0) named 'Research' is marked as done successfully. The next "
        "subtask named 'Draft' is activated.",
        "Subtask (at index 1) named 'Draft' is marked as done successfully. The next subtask "
        "named 'Edit' is activated.",
        "Subtask (at index 2) named 'Edit' is marked as done successfully. ",
        "The current plan is finished successfully as 'done'.",
    ]

    # No hint is left in memory.
    memory = agent.memory
    assert isinstance(memory, InMemoryMemory)
    assert len(memory.content) == 14  # the input, 6 x (call, result), the answer
    for msg, marks in memory.content:
        assert "<system-hint>" not in (msg.get_text_content() or "")
        assert marks == []

    # The plan, seen by the hook as it changed, and kept in the history.
    assert len(snapshots) == 6 and snapshots[-1] == "(none)"
    assert "- [ ] [WIP]Research\n- [ ] Draft\n- [ ] Edit" in snapshots[1]
    (stored,) = await notebook.storage.get_plans()
    assert (stored.name, stored.state, stored.outcome) == (
        "Write a report",
        "done",
        "report.md, 2 pages",
    )
    assert [s.outcome for s in stored.subtasks] == ["5 sources", "draft.md", "report.md"]
    assert agent.state_dict()["plan_notebook"]["current_plan"] is None


async def test_a_refused_call_reaches_the_model_as_text_and_the_loop_goes_on() -> None:
    notebook = PlanNotebook(max_subtasks=2)
    model = ScriptedChatModel(
        [
            reply(tool_call("finish_subtask", {"subtask_idx": 0, "subtask_outcome": "x"})),
            reply(
                tool_call(
                    "create_plan",
                    {
                        "name": "Too long",
                        "description": "d",
                        "expected_outcome": "e",
                        "subtasks": [subtask_dict("A"), subtask_dict("B"), subtask_dict("C")],
                    },
                )
            ),
            reply("I will keep it short."),
        ]
    )
    agent = _agent(model, notebook)
    await agent(_user("Plan something."))
    outputs = [
        m.get_content_blocks("tool_result")[0].output[0].text  # type: ignore[index, union-attr]
        for m in await _history(agent)
    ]
    assert outputs == [
        "Error: The current plan is None, you need to create a plan by calling create_plan() "
        "first.",
        "Error: The plan has 3 subtasks, more than the 2 allowed (max_subtasks=2). Merge some "
        "subtasks and call create_plan again.",
    ]
    assert notebook.current_plan is None
    assert [_last_prompt_text(call) for call in model.calls] == [HINT(None)] * 3


async def test_with_the_meta_tool_the_plan_tools_wait_in_their_own_group() -> None:
    notebook = PlanNotebook()
    model = ScriptedChatModel(
        [
            reply(tool_call("reset_equipped_tools", {"plan_related": True})),
            reply(
                tool_call(
                    "create_plan",
                    {
                        "name": "P",
                        "description": "d",
                        "expected_outcome": "e",
                        "subtasks": [subtask_dict("A")],
                    },
                )
            ),
            reply("Planned."),
        ]
    )
    agent = _agent(model, notebook, enable_meta_tool=True)
    group = agent.toolkit.groups["plan_related"]
    assert (group.active, group.description) == (False, PlanNotebook.description)
    assert [n for n, t in agent.toolkit.tools.items() if t.group == "plan_related"] == PLAN_TOOLS
    await agent(_user("Build a website."))
    # The hint is shown even while the plan tools are inactive.
    assert model.calls[0].tool_names == ["reset_equipped_tools"]
    reset = model.calls[0].tools[0]["function"]["parameters"]["properties"]  # type: ignore[index]
    assert reset["plan_related"]["type"] == "boolean"
    assert _last_prompt_text(model.calls[0]) == HINT(None)
    assert model.calls[1].tool_names == ["reset_equipped_tools", *PLAN_TOOLS]
    assert "Mark the first subtask" in _last_prompt_text(model.calls[2])
    assert notebook.current_plan is not None and notebook.current_plan.name == "P"
