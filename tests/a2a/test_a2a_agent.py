"""A2AAgent and the card resolvers without a server: construction, AgentScope's state layout,
observe, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from a2a.compat.v0_3 import types as types_v03
from a2a.types import AgentCard

from agentscope_rt.a2a import (
    A2AAgent,
    FileAgentCardResolver,
    WellKnownAgentCardResolver,
    build_agent_card,
    to_agent_card,
)
from agentscope_rt.exception import A2AError, StateError
from agentscope_rt.message import Msg
from tests._servers import free_port

# AgentScope's documented card file (FileAgentCardResolver's docstring), protocol 0.3.
AGENTSCOPE_CARD = {
    "name": "RemoteAgent",
    "url": "http://localhost:8000",
    "description": "A remote A2A agent",
    "version": "1.0.0",
    "capabilities": {},
    "default_input_modes": ["text/plain"],
    "default_output_modes": ["text/plain"],
    "skills": [],
}


async def test_agentscope_s_card_file_is_read_as_a_protocol_0_3_card(tmp_path: Path) -> None:
    path = tmp_path / "card.json"
    path.write_text(json.dumps(AGENTSCOPE_CARD))
    card = await FileAgentCardResolver(str(path)).get_agent_card()
    assert card.name == "RemoteAgent"
    assert list(card.default_input_modes) == ["text/plain"]
    (interface,) = card.supported_interfaces
    assert (interface.url, interface.protocol_version) == ("http://localhost:8000", "0.3.0")


async def test_the_file_resolver_says_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        await FileAgentCardResolver(str(tmp_path / "missing.json")).get_agent_card()
    with pytest.raises(ValueError, match="not a file"):
        await FileAgentCardResolver(str(tmp_path)).get_agent_card()
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(A2AError, match="not JSON"):
        await FileAgentCardResolver(str(tmp_path / "bad.json")).get_agent_card()
    (tmp_path / "nourl.json").write_text(json.dumps({"name": "x"}))
    with pytest.raises(A2AError, match="no URL"):
        await FileAgentCardResolver(str(tmp_path / "nourl.json")).get_agent_card()


async def test_the_well_known_resolver_says_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="Invalid URL"):
        await WellKnownAgentCardResolver("localhost").get_agent_card()
    # Nothing listens there: an A2AError, which is also AgentScope's RuntimeError.
    with pytest.raises(RuntimeError, match="Failed to resolve AgentCard"):
        await WellKnownAgentCardResolver(f"http://127.0.0.1:{free_port()}").get_agent_card()


async def test_card_errors_name_the_url_without_its_credentials() -> None:
    port = free_port()
    with pytest.raises(RuntimeError, match="Failed to resolve AgentCard") as failed:
        await WellKnownAgentCardResolver(
            f"http://bob:pa55word@127.0.0.1:{port}/?k=s3cret"
        ).get_agent_card()
    with pytest.raises(ValueError, match="http") as refused:
        build_agent_card("x", "ftp://bob:pa55word@host/?k=s3cret")
    for error in (failed.value, refused.value):
        assert "pa55word" not in str(error) and "s3cret" not in str(error)


def test_cards_of_either_protocol_are_accepted() -> None:
    legacy = types_v03.AgentCard(
        name="Old",
        url="http://127.0.0.1:9/",
        description="d",
        version="1",
        capabilities=types_v03.AgentCapabilities(),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[],
    )
    agent = A2AAgent(legacy)
    assert agent.name == "Old"
    assert isinstance(agent.agent_card, AgentCard)
    assert agent.agent_card.supported_interfaces[0].protocol_version.startswith("0.3")
    card = build_agent_card("New", "http://127.0.0.1:9/")
    assert to_agent_card(card) is card
    assert A2AAgent(card).name == "New"


def test_what_is_not_a_card_is_refused() -> None:
    with pytest.raises(TypeError, match="agent_card must be"):
        A2AAgent("http://127.0.0.1:9/")
    with pytest.raises(A2AError, match="not a valid A2A agent card"):
        A2AAgent({"name": "x", "version": [1], "url": "http://h/"})
    with pytest.raises(TypeError, match="consumers"):
        A2AAgent(build_agent_card("a", "http://h/"), consumers=[3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="absolute"):
        build_agent_card("a", "localhost:80")


async def test_state_is_agentscope_s_layout() -> None:
    agent = A2AAgent(build_agent_card("a", "http://127.0.0.1:9/"))
    await agent.observe(Msg("u", "first", "user"))
    await agent.observe([Msg("u", "second", "user"), Msg("u", "third", "user")])
    await agent.observe(None)
    state = agent.state_dict()
    assert list(state) == ["_observed_msgs"]
    assert [m["content"] for m in state["_observed_msgs"]] == ["first", "second", "third"]
    other = A2AAgent(build_agent_card("a", "http://127.0.0.1:9/"))
    other.load_state_dict(json.loads(json.dumps(state)))
    assert [m.get_text_content() for m in other._observed_msgs] == ["first", "second", "third"]
    with pytest.raises(StateError):
        other.load_state_dict({**state, "extra": 1})


async def test_observe_and_reply_refuse_what_they_cannot_take() -> None:
    agent = A2AAgent(build_agent_card("a", "http://127.0.0.1:9/"))
    with pytest.raises(TypeError):
        await agent.observe("text")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="structured_model is not supported"):
        await agent(Msg("u", "x", "user"), structured_model=dict)
    assert agent._observed_msgs == []
