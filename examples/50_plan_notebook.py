"""A plan-driven ReAct agent: it creates a three-subtask plan and works through it.

The agent is given a :class:`~agentscope_rt.plan.PlanNotebook`: the notebook's eight tools are
registered with the agent, and before every reasoning step the agent shows the model a hint
chosen from the plan's state (no plan yet, at the beginning, a subtask in progress, all done).
A plan change hook prints the plan each time it changes.

The model is scripted (:class:`~agentscope_rt.model.ScriptedChatModel`), so the run is offline
and deterministic; it also makes one mistake on purpose (finishing a subtask out of order),
which the notebook answers with a readable error while the plan stays as it was.

Run: ``python examples/50_plan_notebook.py`` (asyncio) or
``python examples/50_plan_notebook.py trio``.

What to look for: the agent's console output (each plan tool call and what the notebook
answered) interleaved with the ``[plan]`` blocks the change hook prints; the out-of-order
``finish_subtask`` is answered with an error sentence and the plan does not change. After the
reply: the hint the model read before each call (it follows the plan's state), the final
answer's notes, the plan in the history, and no hints left in memory.
"""

from __future__ import annotations

import re
import sys

import anyio

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import ScriptedChatModel, reply, tool_call
from agentscope_rt.plan import Plan, PlanNotebook
from agentscope_rt.tool import Toolkit, ToolResponse

NOTES: dict[str, str] = {}


def save_note(key: str, text: str) -> ToolResponse:
    """Save a note for later steps.

    Args:
        key: the note's name.
        text: what to write down.
    """
    NOTES[key] = text
    return ToolResponse(content=[TextBlock(text=f"Saved note '{key}'.")])


def step(n: int, title: str, detail: str) -> dict[str, str]:
    return {"name": title, "description": detail, "expected_outcome": f"Note {n} saved."}


SCRIPT = [
    reply(
        "This needs several steps: I will plan first.",
        tool_call(
            "create_plan",
            {
                "name": "Weekend guide to Lyon",
                "description": "A one-page weekend guide to Lyon for a first-time visitor.",
                "expected_outcome": "A guide in the note 'guide'.",
                "subtasks": [
                    step(1, "Pick the area", "Choose where to stay."),
                    step(2, "List three sights", "Three sights within walking distance."),
                    step(3, "Write the guide", "Combine area and sights into a short guide."),
                ],
            },
        ),
    ),
    reply(tool_call("update_subtask_state", {"subtask_idx": 0, "state": "in_progress"})),
    reply(
        tool_call("save_note", {"key": "area", "text": "Vieux Lyon, by the Saone"}),
        tool_call("finish_subtask", {"subtask_idx": 0, "subtask_outcome": "Area: Vieux Lyon."}),
    ),
    # A slip: the guide cannot be finished before the sights are listed.
    reply(tool_call("finish_subtask", {"subtask_idx": 2, "subtask_outcome": "guide"})),
    reply(
        tool_call(
            "save_note",
            {"key": "sights", "text": "Fourviere basilica; traboules; Musee des Confluences"},
        ),
        tool_call(
            "finish_subtask",
            {"subtask_idx": 1, "subtask_outcome": "Fourviere, traboules, Confluences."},
        ),
    ),
    reply(
        tool_call(
            "save_note",
            {
                "key": "guide",
                "text": "Stay in Vieux Lyon; walk up to Fourviere, explore the traboules, "
                "end at the Musee des Confluences.",
            },
        ),
        tool_call("finish_subtask", {"subtask_idx": 2, "subtask_outcome": "Note 'guide'."}),
    ),
    reply(tool_call("finish_plan", {"state": "done", "outcome": "The guide is in 'guide'."})),
    reply("Your weekend guide to Lyon is ready: stay in Vieux Lyon and walk to the sights."),
]


def print_plan(notebook: PlanNotebook, plan: Plan | None) -> None:
    """The plan change hook: show the plan as it is now."""
    if plan is None:
        print("  [plan] finished and stored in the history\n")
        return
    print(f"  [plan] {plan.name} ({plan.state})")
    for subtask in plan.subtasks:
        print(f"         {subtask.to_markdown()}")
    print()


def hint_kind(hint: str) -> str:
    """Which of the five hints *hint* is, in a few words."""
    if "create a plan first" in hint:
        return "no plan: plan first if the query is complex"
    if "Mark the first subtask" in hint:
        return "at the beginning: start subtask 0"
    found = re.search(r"Now the subtask at index (\d+), named '([^']+)'", hint)
    if found:
        return f"subtask {found[1]} ({found[2]}) in progress: do it, then finish_subtask"
    if "All the subtasks are done" in hint:
        return "at the end: finish_plan and summarise"
    return "no subtask in progress: start the next one"


async def main() -> None:
    notebook = PlanNotebook(max_subtasks=5)
    notebook.register_plan_change_hook("print", print_plan)
    toolkit = Toolkit()
    toolkit.register_tool_function(save_note)
    model = ScriptedChatModel(list(SCRIPT))
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are a travel writer who plans before writing.",
        model=model,
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
        plan_notebook=notebook,
    )
    answer = await agent(Msg("user", "Write me a weekend guide to Lyon.", "user"))

    print("\nThe hint the model read before each call:")
    for number, call in enumerate(model.calls, start=1):
        content = call.messages[-1]["content"]
        hint = content if isinstance(content, str) else content[0]["text"]
        print(f"  {number}. {hint_kind(hint)}")

    print(f"\nAnswer: {answer.get_text_content()}")
    print(f"Notes: {NOTES}")
    print("History:")
    print((await notebook.view_historical_plans()).get_text())
    print(
        "Hints left in memory:",
        sum("<system-hint>" in str(m.content) for m in await agent.memory.get_memory()),
    )


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
