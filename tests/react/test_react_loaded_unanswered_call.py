"""A session saved while a tool call ran, loaded into a new agent and continued (not durable).

The saved memory holds the call without its result (for a database memory, the database
does, when the process died before the result). Providers reject a prompt holding such a
call, so the next reply must first answer it as an interrupt does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.memory import AsyncSQLAlchemyMemory, InMemoryMemory, MemoryBase
from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.session import JSONSession
from agentscope_rt.tool import INTERRUPTED_TEXT, Toolkit, ToolResponse

from ._support import call, history, make_agent, response, text, tool_pair_problems


def _memory(kind: str, path: Path) -> MemoryBase:
    if kind == "in_memory":
        return InMemoryMemory()
    return AsyncSQLAlchemyMemory(f"sqlite:///{path}", "s1", "u1")


def _unanswered_in_prompt(messages: list[dict[str, Any]]) -> list[str]:
    called = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    return [c for c in called if c not in answered]


@pytest.mark.parametrize("follow_up", ["And in Rome?", None])
@pytest.mark.parametrize("kind", ["in_memory", "sqlite"])
async def test_a_session_saved_while_a_tool_ran_is_continued_with_every_call_answered(
    kind: str, follow_up: str | None, tmp_path: Path
) -> None:
    started = anyio.Event()

    async def lookup(city: str) -> ToolResponse:
        """Look a city up.

        Args:
            city: The city.
        """
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    toolkit = Toolkit()
    toolkit.register_tool_function(lookup)
    first = make_agent(
        ScriptedChatModel([response(call("lookup", "a", city="Oslo"))]),
        toolkit,
        memory=_memory(kind, tmp_path / "first.db"),
    )
    session = JSONSession(tmp_path / "sessions")
    # What the storage holds when the process dies while the tool runs.
    left = _memory(kind, tmp_path / "left.db")
    async with anyio.create_task_group() as tg:
        tg.start_soon(first, Msg("user", "Weather in Oslo?", "user"))
        await started.wait()
        await session.save_session_state("chat", agent=first)
        await left.add(await first.memory.get_memory())
        tg.cancel_scope.cancel()
    assert [c.id for m in await left.get_memory() for c in m.get_content_blocks("tool_use")]

    model = ScriptedChatModel([response(text("Sunny."))])
    second = make_agent(model, Toolkit(), memory=left)
    await session.load_session_state("chat", agent=second)
    answer = await second(None if follow_up is None else Msg("user", follow_up, "user"))
    assert answer.get_text_content() == "Sunny."
    assert _unanswered_in_prompt(model.calls[0].messages) == []
    memory = await history(second.memory)
    assert tool_pair_problems(memory) == []
    results = [b for m in memory for b in m.get_content_blocks("tool_result")]
    assert [(r.id, r.output[0].text) for r in results] == [("a", INTERRUPTED_TEXT)]  # type: ignore[index,union-attr]


async def test_calls_held_by_a_stop_request_are_left_to_run() -> None:
    # A loaded agent whose reply then stopped before acting: its held calls run on the next
    # call without a message, as without a load.
    ran: list[str] = []

    async def lookup(city: str) -> ToolResponse:
        """Look a city up.

        Args:
            city: The city.
        """
        ran.append(city)
        return ToolResponse(content=[text(f"{city}: sunny")])

    toolkit = Toolkit()
    toolkit.register_tool_function(lookup)
    model = ScriptedChatModel([response(call("lookup", "b", city="Rome")), response(text("Done."))])
    agent = make_agent(model, toolkit)
    agent.load_state_dict(make_agent(ScriptedChatModel([])).state_dict())

    async def stop(agent: Any, kwargs: Any, output: Any) -> None:
        agent.request_stop()

    agent.register_instance_hook("post_reasoning", "stop", stop)
    await agent(Msg("user", "Weather in Rome?", "user"))
    agent.remove_instance_hook("post_reasoning", "stop")
    agent.load_state_dict(agent.state_dict())
    assert (await agent()).get_text_content() == "Done."
    assert ran == ["Rome"]
    assert tool_pair_problems(await history(agent.memory)) == []
