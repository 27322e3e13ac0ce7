"""Generate the plan fixtures in ``tests/plan/data/``, with agentscope-rt and AgentScope 1.0.21.

Run it twice from the repository root: first with this project's Python, then with a Python
that has ``agentscope==1.0.21`` installed::

    .nox/tests/bin/python tests/plan/make_fixtures.py
    /path/to/agentscope-venv/bin/python tests/plan/make_fixtures.py

The first run writes ``rt_notebook_state.json``: the ``state_dict()`` of an agentscope-rt
notebook (a current plan with subtasks in every state, and two historical plans). The second
run loads that file into AgentScope's ``PlanNotebook`` and writes back what AgentScope makes of
it (``agentscope_loaded_rt_state.json``: its ``state_dict()``, hint and markdown), then writes:

- ``agentscope_notebook_state.json``: ``PlanNotebook.state_dict()`` of a notebook holding a
  current plan whose subtasks are done, in progress, todo and abandoned, and two historical
  plans (one done, one abandoned);
- ``agentscope_tool_schemas.json``: the JSON schemas AgentScope's ``Toolkit`` builds for the
  notebook's tools;
- ``agentscope_transcript.json``: a sequence of tool calls (the arguments a model would send)
  with, after each call, AgentScope's result text, the hint ``get_current_hint()`` gives, and
  the plan's markdown (plain and detailed). Timestamps are written as ``{TS}`` and plan ids as
  ``{ID:<plan name>}``; an argument ``{ID:<plan name>}`` stands for that plan's id.

Only calls whose outcome agentscope-rt keeps are in the transcript; the calls where it
deliberately differs are tested separately (see ``docs/plan.md``).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
TS = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}")


def subtask(name: str) -> dict[str, str]:
    return {
        "name": name,
        "description": f"Do {name.lower()} carefully.",
        "expected_outcome": f"{name} is complete.",
    }


STEPS: list[tuple[str, dict[str, Any]]] = [
    ("view_historical_plans", {}),
    ("finish_plan", {"state": "done", "outcome": "nothing"}),
    ("recover_historical_plan", {"plan_id": "no-such-plan"}),
    (
        "create_plan",
        {
            "name": "Write a report",
            "description": "Research and write a short report on solar power.",
            "expected_outcome": "A two-page report in report.md.",
            "subtasks": [subtask("Collect sources"), subtask("Draft"), subtask("Proofread")],
        },
    ),
    ("view_subtasks", {"subtask_idx": [0, 2, 7]}),
    ("update_subtask_state", {"subtask_idx": 5, "state": "in_progress"}),
    ("update_subtask_state", {"subtask_idx": 1, "state": "in_progress"}),
    ("update_subtask_state", {"subtask_idx": 0, "state": "in_progress"}),
    ("update_subtask_state", {"subtask_idx": 0, "state": "in_progress"}),
    ("finish_subtask", {"subtask_idx": 1, "subtask_outcome": "too early"}),
    ("finish_subtask", {"subtask_idx": 3, "subtask_outcome": "out of range"}),
    ("finish_subtask", {"subtask_idx": 0, "subtask_outcome": "Five sources in sources.md."}),
    ("revise_current_plan", {"subtask_idx": 3, "action": "add", "subtask": subtask("Publish")}),
    ("revise_current_plan", {"subtask_idx": 9, "action": "delete"}),
    ("revise_current_plan", {"subtask_idx": 9, "action": "add", "subtask": subtask("Late")}),
    ("revise_current_plan", {"subtask_idx": 0, "action": "revise"}),
    ("revise_current_plan", {"subtask_idx": 0, "action": "rename"}),
    ("finish_subtask", {"subtask_idx": 1, "subtask_outcome": "A draft in report.md."}),
    ("update_subtask_state", {"subtask_idx": 2, "state": "todo"}),
    ("update_subtask_state", {"subtask_idx": 2, "state": "done"}),
    ("update_subtask_state", {"subtask_idx": 2, "state": "abandoned"}),
    ("revise_current_plan", {"subtask_idx": 3, "action": "delete"}),
    ("view_subtasks", {"subtask_idx": [0, 1, 2]}),
    ("finish_plan", {"state": "done", "outcome": "report.md, two pages."}),
    ("view_historical_plans", {}),
    (
        "create_plan",
        {
            "name": "Plan a trip",
            "description": "A weekend in Lyon.",
            "expected_outcome": "Tickets and a hotel booked.",
            "subtasks": [subtask("Book train"), subtask("Book hotel")],
        },
    ),
    ("update_subtask_state", {"subtask_idx": 0, "state": "in_progress"}),
    ("recover_historical_plan", {"plan_id": "{ID:Write a report}"}),
    ("view_historical_plans", {}),
]


def normalise(text: str | None, ids: dict[str, str]) -> str | None:
    if text is None:
        return None
    text = TS.sub("{TS}", text)
    for plan_id, name in ids.items():
        text = text.replace(plan_id, f"{{ID:{name}}}")
    return text


async def transcript() -> list[dict[str, Any]]:
    from agentscope.plan import PlanNotebook

    notebook = PlanNotebook()
    tools = {tool.__name__: tool for tool in notebook.list_tools()}
    ids: dict[str, str] = {}
    entries: list[dict[str, Any]] = []
    for name, args in STEPS:
        resolved = {
            key: next((i for i, n in ids.items() if value == f"{{ID:{n}}}"), value)
            if isinstance(value, str)
            else value
            for key, value in args.items()
        }
        result = await tools[name](**resolved)
        plan = notebook.current_plan
        if plan is not None:
            ids[plan.id] = plan.name
        for stored in await notebook.storage.get_plans():
            ids[stored.id] = stored.name
        hint = await notebook.get_current_hint()
        entries.append(
            {
                "tool": name,
                "args": args,
                "result": normalise(result.content[0]["text"], ids),
                "hint": normalise(hint.get_text_content() if hint else None, ids),
                "markdown": normalise(plan.to_markdown() if plan else None, ids),
                "detailed": normalise(plan.to_markdown(detailed=True) if plan else None, ids),
                "plan_state": plan.state if plan else None,
            }
        )
    return entries


async def notebook_state(PlanNotebook: Any) -> dict[str, Any]:
    """The same history and plan, built through either library's tools."""
    notebook = PlanNotebook(max_subtasks=8)
    await notebook.create_plan(
        "Old plan", "An earlier plan.", "Done before.", [subtask("Only step")]
    )
    await notebook.finish_subtask(0, "Finished the only step.")
    await notebook.finish_plan("done", "All good.")
    await notebook.create_plan(
        "Dropped plan", "A plan the user gave up.", "Never reached.", [subtask("Start")]
    )
    await notebook.finish_plan("abandoned", "The user changed their mind.")
    await notebook.create_plan(
        "Current plan",
        "A plan in several states.",
        "All four subtasks handled.",
        [subtask("First"), subtask("Second"), subtask("Third"), subtask("Fourth")],
    )
    await notebook.update_subtask_state(0, "in_progress")
    await notebook.finish_subtask(0, "The first outcome.")  # activates "Second"
    await notebook.update_subtask_state(3, "abandoned")
    return notebook.state_dict()


def write(name: str, data: Any) -> None:
    (DATA / name).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


async def main_rt() -> None:
    from agentscope_rt.plan import PlanNotebook

    write("rt_notebook_state.json", await notebook_state(PlanNotebook))


async def main_agentscope() -> None:
    from agentscope.plan import PlanNotebook
    from agentscope.tool import Toolkit

    notebook = PlanNotebook()
    toolkit = Toolkit()
    for tool in notebook.list_tools():
        toolkit.register_tool_function(tool)
    write("agentscope_tool_schemas.json", toolkit.get_json_schemas())
    write("agentscope_transcript.json", await transcript())
    write("agentscope_notebook_state.json", await notebook_state(PlanNotebook))

    loaded = PlanNotebook()
    loaded.load_state_dict(json.loads((DATA / "rt_notebook_state.json").read_text()))
    hint = await loaded.get_current_hint()
    assert loaded.current_plan is not None and hint is not None
    write(
        "agentscope_loaded_rt_state.json",
        {
            "state": loaded.state_dict(),
            "hint": hint.get_text_content(),
            "detailed": loaded.current_plan.to_markdown(detailed=True),
        },
    )


async def main() -> None:
    DATA.mkdir(exist_ok=True)
    try:
        import agentscope  # noqa: F401
    except ImportError:
        await main_rt()
    else:
        await main_agentscope()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
