"""Long-term memory, knowledge and plan notebook, called through their interfaces."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from agentscope_rt.memory import LongTermMemoryBase, MemoryBase
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import ChatResponse, ScriptedChatModel
from agentscope_rt.plan import PlanNotebook
from agentscope_rt.tool import ToolResponse

from ._support import (
    FixedKnowledge,
    call,
    history,
    make_agent,
    prompt_text,
    response,
    text,
    texts_of,
    user,
)


class NotesMemory(LongTermMemoryBase):
    """A long-term memory keeping texts in a list."""

    def __init__(self, notes: list[str]) -> None:
        super().__init__()
        self.notes = notes
        self.recorded: list[list[Msg | None]] = []

    async def record(self, msgs: list[Msg | None], **kwargs: Any) -> None:
        self.recorded.append(msgs)

    async def retrieve(self, msg: Msg | list[Msg] | None, limit: int = 5, **kwargs: Any) -> str:
        return "\n".join(self.notes)

    async def record_to_memory(
        self, thinking: str, content: list[str], **kwargs: Any
    ) -> ToolResponse:
        """Record important information.

        Args:
            thinking: why.
            content: what to remember.
        """
        self.notes.extend(content)
        return ToolResponse(content=[TextBlock(text="Recorded.")])

    async def retrieve_from_memory(
        self, keywords: list[str], limit: int = 5, **kwargs: Any
    ) -> ToolResponse:
        """Retrieve memories.

        Args:
            keywords: what to look for.
            limit: how many per keyword.
        """
        found = [n for n in self.notes if any(k in n for k in keywords)]
        return ToolResponse(content=[TextBlock(text="\n".join(found) or "nothing")])


class Checklist(PlanNotebook):
    """A notebook whose own tool and hints stand in for the plan: the agent sees only the
    notebook's public methods."""

    def __init__(self) -> None:
        super().__init__()
        self.hints = 0

    def list_tools(self) -> list[Callable[..., Any]]:
        return [self.finish_subtask]

    async def finish_subtask(self, subtask_idx: int) -> ToolResponse:
        """Mark a subtask as done.

        Args:
            subtask_idx: which subtask.
        """
        return ToolResponse(content=[TextBlock(text=f"subtask {subtask_idx} done")])

    async def get_current_hint(self) -> Msg | None:
        self.hints += 1
        return Msg("user", f"<system-hint>plan step {self.hints}</system-hint>", "user")


async def test_static_long_term_memory_is_retrieved_and_recorded() -> None:
    ltm = NotesMemory(["The user's name is Ada."])
    model = ScriptedChatModel([response(text("Hi Ada!"))])
    agent = make_agent(model, long_term_memory=ltm, long_term_memory_mode="static_control")
    await agent(user("Who am I?"))
    assert "The user's name is Ada." in prompt_text(model.calls[0])
    assert "<long_term_memory>" in prompt_text(model.calls[0])
    assert [m.get_text_content() for m in ltm.recorded[0] if m][-1] == "Hi Ada!"
    assert "record_to_memory" not in agent.toolkit.tools


async def test_agent_controlled_long_term_memory_tools() -> None:
    ltm = NotesMemory([])
    model = ScriptedChatModel(
        [
            response(call("record_to_memory", "c1", thinking="useful", content=["likes tea"])),
            response(text("Noted.")),
        ]
    )
    agent = make_agent(model, long_term_memory=ltm, long_term_memory_mode="agent_control")
    await agent(user("I like tea"))
    assert set(model.calls[0].tool_names) == {"record_to_memory", "retrieve_from_memory"}
    assert ltm.notes == ["likes tea"]
    assert ltm.recorded == []


async def test_knowledge_is_retrieved_with_a_rewritten_query_and_sorted_by_score() -> None:
    kb = FixedKnowledge([("low relevance", 0.1), ("Paris is the capital of France.", 0.9)])
    model = ScriptedChatModel(
        [
            ChatResponse(content=[], metadata={"rewritten_query": "capital of France"}),
            response(text("Paris.")),
        ]
    )
    agent = make_agent(model, knowledge=kb)
    reply = await agent(user("What is its capital?"))
    assert reply.get_text_content() == "Paris."
    assert kb.queries == ["capital of France"]
    assert model.calls[0].structured_model is not None
    assert "rewrite the above user query" in prompt_text(model.calls[0])
    msgs = await history(agent.memory)
    retrieved = texts_of(msgs[1])
    assert retrieved.index("Paris is the capital") < retrieved.index("low relevance")
    assert "<retrieved_knowledge>" in retrieved


async def test_knowledge_without_rewriting() -> None:
    kb = FixedKnowledge([("fact", 0.5)])
    model = ScriptedChatModel([response(text("ok"))])
    agent = make_agent(model, knowledge=[kb], enable_rewrite_query=False)
    await agent(user("query text"))
    assert kb.queries == ["query text"]
    assert len(model.calls) == 1


async def test_plan_notebook_tools_and_hints() -> None:
    notebook = Checklist()
    model = ScriptedChatModel(
        [response(call("finish_subtask", "c1", subtask_idx=0)), response(text("Done."))]
    )
    agent = make_agent(model, plan_notebook=notebook)
    await agent(user("work"))
    assert model.calls[0].tool_names == ["finish_subtask"]
    assert "plan step 1" in prompt_text(model.calls[0])
    assert "plan step 2" in prompt_text(model.calls[1])
    assert "plan step 1" not in prompt_text(model.calls[1])  # hints live for one step
    assert all("plan step" not in texts_of(m) for m in await history(agent.memory))


async def test_plan_tools_go_to_their_own_group_with_the_meta_tool() -> None:
    agent = make_agent(ScriptedChatModel([]), plan_notebook=Checklist(), enable_meta_tool=True)
    assert agent.toolkit.tools["finish_subtask"].group == "plan_related"
    assert agent.toolkit.groups["plan_related"].description == Checklist.description
    assert not agent.toolkit.groups["plan_related"].active


class ListMemory(MemoryBase):
    """The smallest memory: a list of (Msg, marks), copies stored."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[tuple[Msg, list[str]]] = []

    async def add(
        self,
        memories: Msg | list[Msg] | None,
        marks: str | list[str] | None = None,
        allow_duplicates: bool = False,
        **kwargs: Any,
    ) -> None:
        if memories is None:
            return
        for msg in [memories] if isinstance(memories, Msg) else memories:
            if allow_duplicates or all(m.id != msg.id for m, _ in self.items):
                self.items.append(
                    (msg.copy(), [marks] if isinstance(marks, str) else list(marks or []))
                )

    async def delete(self, msg_ids: list[str], **kwargs: Any) -> int:
        before = len(self.items)
        self.items = [(m, k) for m, k in self.items if m.id not in msg_ids]
        return before - len(self.items)

    async def get_memory(
        self,
        mark: str | None = None,
        exclude_mark: str | None = None,
        prepend_summary: bool = True,
        **kwargs: Any,
    ) -> list[Msg]:
        msgs = [
            m
            for m, k in self.items
            if (mark is None or mark in k) and (exclude_mark is None or exclude_mark not in k)
        ]
        if prepend_summary and self._compressed_summary:
            msgs.insert(0, Msg("user", self._compressed_summary, "user"))
        return msgs

    async def update_messages_mark(
        self, new_mark: str | None, old_mark: str | None = None, msg_ids: list[str] | None = None
    ) -> int:
        count = 0
        for m, k in self.items:
            if (msg_ids is None or m.id in msg_ids) and new_mark and new_mark not in k:
                k.append(new_mark)
                count += 1
        return count

    async def size(self) -> int:
        return len(self.items)

    async def clear(self) -> None:
        self.items = []


async def test_any_memory_implementation_works_and_the_reply_is_not_shared_with_memory() -> None:
    memory = ListMemory()
    model = ScriptedChatModel(
        [response(call("finish_subtask", "c1", subtask_idx=1)), response(text("Done."))]
    )
    agent = make_agent(model, memory=memory, plan_notebook=Checklist(), print_hint_msg=True)
    send, receive = anyio.create_memory_object_stream[Any](100)
    agent.set_msg_queue_enabled(True, send)
    reply = await agent(user("work"))
    send.close()
    printed = [m.get_text_content() or "" async for m, _, _ in receive]
    assert "<system-hint>plan step 1</system-hint>" in printed  # print_hint_msg shows hints
    msgs = await history(memory)
    assert [m.role for m in msgs] == ["user", "assistant", "system", "assistant"]
    assert texts_of(msgs[2]) == "subtask 1 done"
    # The caller owns its reply: changing it does not change memory.
    reply.content[0].text = "changed"  # type: ignore[union-attr]
    assert msgs[-1].get_text_content() == "Done."
    # The default memory behaves the same way.
    agent = make_agent(ScriptedChatModel([response(text("Hi."))]))
    reply = await agent(user("hello"))
    reply.content[0].text = "changed"  # type: ignore[union-attr]
    assert (await history(agent.memory))[-1].get_text_content() == "Hi."
