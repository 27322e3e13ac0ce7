"""A whole ReActAgent (memory, toolkit, name, system prompt) saves and loads as one tree."""

from __future__ import annotations

import json

import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.exception import StateError
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.tool import Toolkit


def make_agent(name: str, groups_active: bool) -> ReActAgent:
    toolkit = Toolkit()
    toolkit.create_tool_group("web", "Web search tools", active=groups_active)
    return ReActAgent(
        name=name,
        sys_prompt=f"You are {name}.",
        model=ScriptedChatModel(["Hello there."]),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
    )


async def test_agent_state_round_trips_through_json() -> None:
    source = make_agent("Friday", groups_active=True)
    await source(Msg("user", "Hi", "user"))
    state = json.loads(json.dumps(source.state_dict()))
    assert set(state) >= {"memory", "toolkit", "name", "_sys_prompt"}

    target = make_agent("Other", groups_active=False)
    target.load_state_dict(state)
    assert target.name == "Friday"
    assert target.toolkit.groups["web"].active
    assert target.state_dict() == state
    remembered = await target.memory.get_memory()
    assert [m.get_text_content() for m in remembered] == ["Hi", "Hello there."]


def test_bad_agent_state_changes_nothing() -> None:
    agent = make_agent("Friday", groups_active=False)
    state = agent.state_dict()
    state["toolkit"] = {"active_groups": "web"}
    state["name"] = "Changed"
    with pytest.raises(StateError):
        agent.load_state_dict(state)
    assert agent.name == "Friday"
