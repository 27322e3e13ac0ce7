"""A long-term memory serves the user it was built for, whatever a loaded state says.

``VectorLongTermMemory`` saves ``user_id`` and ``agent_name`` with its settings; loading a
session that names user B must not make user A's memory read and write B's facts. Mem0's
names are never state (as in AgentScope).
"""

from __future__ import annotations

import pytest

from agentscope_rt.exception import SessionError, StateError
from agentscope_rt.memory import VectorLongTermMemory
from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.rag import QdrantStore
from agentscope_rt.session import JSONSession

from ..rag.test_knowledge import DIMS, CountingEmbedding
from ..react._support import make_agent


async def test_loading_another_users_state_is_refused_and_changes_nothing() -> None:
    embedding = CountingEmbedding()
    async with QdrantStore(":memory:", "ltm", DIMS) as store:
        ada = VectorLongTermMemory(embedding, store, user_id="ada", score_threshold=-1)
        bob = VectorLongTermMemory(embedding, store, user_id="bob", score_threshold=0.5)
        await ada.add_facts(["ada drinks tea"])
        await bob.add_facts(["bob drinks coffee"])
        with pytest.raises(StateError, match=r"user_id='bob'.*user_id='ada'"):
            ada.load_state_dict(bob.state_dict())
        with pytest.raises(StateError, match="user_id"):
            ada.load_state_dict({"user_id": "bob"}, strict=False)
        assert ada.user_id == "ada" and ada.score_threshold == -1
        assert [fact for fact, _ in await ada.search(["drinks"])] == ["ada drinks tea"]
        # The scope's agent is fixed the same way.
        scoped = VectorLongTermMemory(embedding, store, user_id="ada", agent_name="friday")
        with pytest.raises(StateError, match="agent_name"):
            scoped.load_state_dict(ada.state_dict())
        # The memory's own state (or another memory of the same user) loads as before.
        again = VectorLongTermMemory(embedding, store, user_id="ada")
        again.load_state_dict(ada.state_dict())
        assert again.score_threshold == -1


async def test_a_session_naming_another_user_does_not_load_into_an_agent(tmp_path: str) -> None:
    embedding = CountingEmbedding()
    session = JSONSession(str(tmp_path))
    async with QdrantStore(":memory:", "ltm", DIMS) as store:
        bob_agent = make_agent(
            ScriptedChatModel([]),
            long_term_memory=VectorLongTermMemory(embedding, store, user_id="bob"),
            long_term_memory_mode="agent_control",
        )
        await bob_agent.memory.add(Msg("user", "hello", "user"))
        await session.save_session_state("shared", agent=bob_agent)
        ada_memory = VectorLongTermMemory(embedding, store, user_id="ada")
        ada_agent = make_agent(
            ScriptedChatModel([]),
            long_term_memory=ada_memory,
            long_term_memory_mode="agent_control",
        )
        with pytest.raises(SessionError, match="the state is of user_id='bob'"):
            await session.load_session_state("shared", agent=ada_agent)
        assert ada_memory.user_id == "ada"
        assert await ada_agent.memory.size() == 0
