"""Against AgentScope 1.0.21 itself: tool texts, hints and markdown over a whole session, saved
state in both directions, and the tool schemas (fixtures made by ``make_fixtures.py``)."""

from __future__ import annotations

import copy
import json
import pathlib
import re
from typing import Any

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.plan import Plan, PlanNotebook
from agentscope_rt.tool import Toolkit
from agentscope_rt.tool._function_schema import normalize_parameters_schema

DATA = pathlib.Path(__file__).parent / "data"
TS = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}")


def _load(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def _normalise(text: str | None, ids: dict[str, str]) -> str | None:
    if text is None:
        return None
    text = TS.sub("{TS}", text)
    for plan_id, name in ids.items():
        text = text.replace(plan_id, f"{{ID:{name}}}")
    return text


def _reopened(entry: dict[str, Any]) -> dict[str, Any]:
    """AgentScope's entry as agentscope-rt gives it once a finished plan is recovered: the
    recovered plan is reopened (state "todo" again) instead of staying "done"."""
    entry = dict(entry)
    for key in ("hint", "markdown", "detailed"):
        if entry[key] is not None:
            entry[key] = entry[key].replace("**State**: done", "**State**: todo")
    if entry["plan_state"] == "done":
        entry["plan_state"] = "todo"
    return entry


async def test_a_whole_session_gives_agentscope_texts_hints_and_markdown() -> None:
    transcript = _load("agentscope_transcript.json")
    notebook = PlanNotebook()
    tools = {tool.__name__: tool for tool in notebook.list_tools()}
    ids: dict[str, str] = {}
    recovered = False
    for step, expected in enumerate(transcript):
        args = {
            key: next((i for i, n in ids.items() if value == f"{{ID:{n}}}"), value)
            if isinstance(value, str)
            else value
            for key, value in expected["args"].items()
        }
        res = await tools[expected["tool"]](**args)
        plan = notebook.current_plan
        if plan is not None:
            ids[plan.id] = plan.name
        for stored in await notebook.storage.get_plans():
            ids[stored.id] = stored.name
        hint = await notebook.get_current_hint()
        got = {
            "tool": expected["tool"],
            "args": expected["args"],
            "result": _normalise(res.get_text(), ids),
            "hint": _normalise(hint.get_text_content() if hint else None, ids),
            "markdown": _normalise(plan.to_markdown() if plan else None, ids),
            "detailed": _normalise(plan.to_markdown(detailed=True) if plan else None, ids),
            "plan_state": plan.state if plan else None,
        }
        recovered = recovered or (
            expected["tool"] == "recover_historical_plan" and plan is not None
        )
        assert got == (_reopened(expected) if recovered else expected), f"step {step}"
    assert recovered


def test_agentscope_notebook_state_loads_and_saves_unchanged() -> None:
    state = _load("agentscope_notebook_state.json")
    notebook = PlanNotebook()
    notebook.load_state_dict(copy.deepcopy(state))
    assert json.dumps(notebook.state_dict()) == json.dumps(state)  # same keys, same order
    plan = notebook.current_plan
    assert isinstance(plan, Plan)
    assert [s.state for s in plan.subtasks] == ["done", "in_progress", "todo", "abandoned"]
    assert [p["name"] for p in state["storage"]["plans"].values()] == [
        "Old plan",
        "Dropped plan",
    ]


async def test_an_agentscope_notebook_goes_on_working_here() -> None:
    notebook = PlanNotebook()
    notebook.load_state_dict(_load("agentscope_notebook_state.json"))
    res = await notebook.finish_subtask(1, "The second outcome.")
    assert res.get_text() == (
        "Subtask (at index 1) named 'Second' is marked as done successfully. The next subtask "
        "named 'Third' is activated."
    )
    listing = (await notebook.view_historical_plans()).get_text()
    assert "Plan named 'Old plan'" in listing and "- State: abandoned" in listing


async def test_agentscope_loads_what_agentscope_rt_saves() -> None:
    # rt_notebook_state.json was saved by this project; AgentScope loaded it and saved it again
    # (agentscope_loaded_rt_state.json): nothing was lost or changed on the way.
    ours = _load("rt_notebook_state.json")
    theirs = _load("agentscope_loaded_rt_state.json")
    assert json.dumps(theirs["state"]) == json.dumps(ours)
    # And this project still saves that format: load it, save it, same JSON.
    notebook = PlanNotebook()
    notebook.load_state_dict(copy.deepcopy(ours))
    assert json.dumps(notebook.state_dict()) == json.dumps(ours)
    # AgentScope showed the model the same hint and markdown as this project does.
    hint = await notebook.get_current_hint()
    assert hint is not None and hint.get_text_content() == theirs["hint"]
    assert notebook.current_plan is not None
    assert notebook.current_plan.to_markdown(detailed=True) == theirs["detailed"]


async def test_a_fresh_notebook_saves_the_same_shape_as_agentscope() -> None:
    from .make_fixtures import notebook_state

    ours = await notebook_state(PlanNotebook)
    theirs = _load("agentscope_notebook_state.json")

    def shape(value: Any) -> Any:
        if isinstance(value, dict):
            return [
                (k if not TS.fullmatch(k) and len(k) != 22 else "<id>", shape(v))
                for k, v in value.items()
            ]
        if isinstance(value, list):
            return [shape(v) for v in value]
        if isinstance(value, str):
            return "<ts>" if TS.fullmatch(value) else "<id>" if len(value) == 22 else value
        return value

    assert shape(ours) == shape(theirs)


def test_agent_state_has_the_plan_notebook() -> None:
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You plan.",
        model=ScriptedChatModel([]),
        formatter=OpenAIChatFormatter(),
        plan_notebook=PlanNotebook(),
    )
    state = agent.state_dict()
    assert state["plan_notebook"] == {"storage": {"plans": {}}, "current_plan": None}
    state["plan_notebook"] = _load("agentscope_notebook_state.json")
    agent.load_state_dict(state)
    assert agent.plan_notebook is not None and agent.plan_notebook.current_plan is not None
    assert agent.plan_notebook.current_plan.name == "Current plan"


def _collapse(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _collapse(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_collapse(v) for v in value]
    if isinstance(value, str):
        return " ".join(value.split())
    return value


def test_tool_schemas_are_agentscope_s_with_its_two_slips_fixed() -> None:
    toolkit = Toolkit()
    for tool in PlanNotebook().list_tools():
        toolkit.register_tool_function(tool)
    ours = {s["function"]["name"]: s for s in toolkit.get_json_schemas()}
    theirs = {s["function"]["name"]: s for s in _load("agentscope_tool_schemas.json")}
    assert list(ours) == list(theirs)
    for name, schema in theirs.items():
        schema = copy.deepcopy(schema)
        function = schema["function"]
        # Inlined as this project's toolkit does for every schema (no $ref left).
        function["parameters"] = normalize_parameters_schema(function["parameters"])
        if name == "finish_subtask":
            # AgentScope's docstring has a real newline inside an argument's text, so its
            # parser leaves both arguments undescribed and pours them into the description.
            assert "description" not in function["parameters"]["properties"]["subtask_idx"]
            function["description"] = function["description"].split("\nArgs:")[0]
            function["parameters"]["properties"]["subtask_idx"]["description"] = (
                "The index of the sub-task to be marked as done, starting from 0."
            )
            function["parameters"]["properties"]["subtask_outcome"]["description"] = ours[name][
                "function"
            ]["parameters"]["properties"]["subtask_outcome"]["description"]
        text = json.dumps(schema).replace("notexceed", "not exceed")  # a typo in AgentScope
        assert _collapse(ours[name]) == _collapse(json.loads(text)), name
    outcome = ours["finish_subtask"]["function"]["parameters"]["properties"]["subtask_outcome"]
    assert outcome["description"].startswith("The specific outcome of the sub-task")
    assert outcome["description"].endswith('they are\\n- xxx\\n- xxx\\n..."')
