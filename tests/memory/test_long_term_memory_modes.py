"""How ReActAgent uses a long-term memory in each ``long_term_memory_mode``, as AgentScope does:
which tools are offered, what is retrieved into the prompt (and where), what is recorded after
the loop, nothing recorded after an interrupt, and the construction-time check of the methods
a mode needs."""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.memory import LongTermMemoryBase, VectorLongTermMemory
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.rag import DocMetadata, Document, KnowledgeBase
from agentscope_rt.tool import ToolResponse
from tests.react._support import call, history, make_agent, prompt_text, response, text, user

RETRIEVED_TEXT = (
    "<long_term_memory>The content below are retrieved from long-term memory, which maybe "
    "useful:\n{}</long_term_memory>"
)
RECORD_DESCRIPTION = (
    "Use this function to record important information that you may\nneed later. The target "
    "content should be specific and concise, e.g.\nwho, when, where, do what, why, how, etc."
)


class RecordingMemory(LongTermMemoryBase):
    """A long-term memory that answers *answer* and keeps every call it gets."""

    def __init__(self, answer: str = "The user's name is Ada.") -> None:
        super().__init__()
        self.answer = answer
        self.retrieved: list[Msg | list[Msg] | None] = []
        self.recorded: list[list[Msg | None]] = []
        self.tool_records: list[list[str]] = []

    async def record(self, msgs: list[Msg | None], **kwargs: Any) -> None:
        self.recorded.append(list(msgs))

    async def retrieve(self, msg: Msg | list[Msg] | None, limit: int = 5, **kwargs: Any) -> str:
        self.retrieved.append(msg)
        return self.answer

    async def record_to_memory(
        self, thinking: str, content: list[str], **kwargs: Any
    ) -> ToolResponse:
        self.tool_records.append(content)
        return ToolResponse(content=[TextBlock(text="Recorded.")])

    async def retrieve_from_memory(
        self, keywords: list[str], limit: int = 5, **kwargs: Any
    ) -> ToolResponse:
        return ToolResponse(content=[TextBlock(text=self.answer)])


class ToolsOnly(LongTermMemoryBase):
    async def record_to_memory(
        self, thinking: str, content: list[str], **kwargs: Any
    ) -> ToolResponse:
        return ToolResponse(content=[TextBlock(text="Recorded.")])

    async def retrieve_from_memory(
        self, keywords: list[str], limit: int = 5, **kwargs: Any
    ) -> ToolResponse:
        return ToolResponse(content=[TextBlock(text="")])


class StaticOnly(LongTermMemoryBase):
    async def record(self, msgs: list[Msg | None], **kwargs: Any) -> None:
        return None

    async def retrieve(self, msg: Msg | list[Msg] | None, limit: int = 5, **kwargs: Any) -> str:
        return ""


class OneDoc(KnowledgeBase):
    async def retrieve(
        self, query: str, limit: int = 5, score_threshold: float | None = None, **kwargs: Any
    ) -> list[Document]:
        meta = DocMetadata(TextBlock(text="Paris is in France."), "d", 0, 1)
        return [Document(meta, score=0.9)]

    async def add_documents(self, documents: list[Document], **kwargs: Any) -> None:
        raise AssertionError("not used")


def _tool_names(model: ScriptedChatModel, index: int = 0) -> set[str]:
    return set(model.calls[index].tool_names)


async def test_agent_control_offers_the_two_tools_and_neither_retrieves_nor_records() -> None:
    ltm = RecordingMemory()
    model = ScriptedChatModel(
        [
            response(call("record_to_memory", "c1", thinking="a fact", content=["likes tea"])),
            response(text("Noted.")),
        ]
    )
    agent = make_agent(model, long_term_memory=ltm, long_term_memory_mode="agent_control")
    await agent(user("I like tea"))
    assert _tool_names(model) == {"record_to_memory", "retrieve_from_memory"}
    assert ltm.tool_records == [["likes tea"]]
    assert ltm.retrieved == [] and ltm.recorded == []
    assert "<long_term_memory>" not in prompt_text(model.calls[0])
    # The tools sit in the always-on "basic" group, as AgentScope registers them.
    assert agent.toolkit.tools["record_to_memory"].group == "basic"
    assert agent.toolkit.tools["retrieve_from_memory"].group == "basic"


async def test_the_tool_schemas_carry_agentscopes_descriptions() -> None:
    agent = make_agent(ScriptedChatModel([]), long_term_memory=RecordingMemory())
    schemas = {s["function"]["name"]: s["function"] for s in agent.toolkit.get_json_schemas()}
    record = schemas["record_to_memory"]
    assert record["description"] == RECORD_DESCRIPTION
    assert set(record["parameters"]["properties"]) == {"thinking", "content"}
    assert record["parameters"]["properties"]["content"]["type"] == "array"
    assert sorted(record["parameters"]["required"]) == ["content", "thinking"]
    retrieve = schemas["retrieve_from_memory"]
    assert retrieve["description"] == "Retrieve the memory based on the given keywords."
    assert set(retrieve["parameters"]["properties"]) == {"keywords", "limit"}
    assert retrieve["parameters"]["required"] == ["keywords"]


async def test_static_control_retrieves_before_knowledge_and_records_after_the_loop() -> None:
    ltm = RecordingMemory()
    model = ScriptedChatModel([response(text("Hi Ada!"))])
    agent = make_agent(
        model,
        long_term_memory=ltm,
        long_term_memory_mode="static_control",
        knowledge=OneDoc(),
        enable_rewrite_query=False,
    )
    question = user("Who am I?")
    await agent(question)

    assert _tool_names(model) == set()
    assert len(ltm.retrieved) == 1
    retrieved_with = ltm.retrieved[0]
    assert isinstance(retrieved_with, Msg) and retrieved_with.content == "Who am I?"
    msgs = await history(agent.memory)
    # input, long-term memory, knowledge, answer
    assert [m.name for m in msgs] == ["user", "long_term_memory", "user", "Friday"]
    recalled = msgs[1]
    assert recalled.role == "user"
    assert recalled.content == RETRIEVED_TEXT.format("The user's name is Ada.")
    assert await agent.memory.get_memory(mark="hint") == []
    # The recall stays in memory (no mark), so later turns still see it.
    assert recalled.id in {m.id for m in await agent.memory.get_memory(exclude_mark="hint")}
    assert "<retrieved_knowledge>" in msgs[2].get_text_content()  # type: ignore[operator]
    assert RETRIEVED_TEXT.format("The user's name is Ada.") in prompt_text(model.calls[0])
    # Recorded once, after the loop, with the whole memory.
    assert len(ltm.recorded) == 1
    assert [m.id for m in ltm.recorded[0] if m] == [m.id for m in msgs]


async def test_both_is_the_default_and_does_both() -> None:
    ltm = RecordingMemory()
    model = ScriptedChatModel([response(text("Hello."))])
    agent = make_agent(model, long_term_memory=ltm)
    await agent(user("Hi"))
    assert _tool_names(model) == {"record_to_memory", "retrieve_from_memory"}
    assert len(ltm.retrieved) == 1 and len(ltm.recorded) == 1
    assert "<long_term_memory>" in prompt_text(model.calls[0])


async def test_an_empty_recall_adds_nothing_and_no_input_retrieves_nothing() -> None:
    ltm = RecordingMemory(answer="")
    model = ScriptedChatModel([response(text("one")), response(text("two")), response(text("3"))])
    agent = make_agent(model, long_term_memory=ltm, long_term_memory_mode="static_control")
    await agent(user("Hi"))
    assert [m.name for m in await history(agent.memory)] == ["user", "Friday"]
    await agent(None)
    await agent([])
    assert len(ltm.retrieved) == 1
    # Still recorded after every loop.
    assert len(ltm.recorded) == 3


async def test_compressed_messages_are_not_recorded() -> None:
    ltm = RecordingMemory(answer="")
    model = ScriptedChatModel([response(text("ok"))])
    agent = make_agent(model, long_term_memory=ltm, long_term_memory_mode="static_control")
    old = Msg("user", "an old turn, already summarised", "user")
    await agent.memory.add(old, marks="compressed")
    await agent(user("Hi"))
    recorded_ids = [m.id for m in ltm.recorded[0] if m]
    assert old.id not in recorded_ids
    assert len(recorded_ids) == 2


async def test_nothing_is_recorded_after_an_interrupt() -> None:
    ltm = RecordingMemory()
    model = ScriptedChatModel([response(text("about to answer")), response(text("again"))])
    agent = make_agent(model, long_term_memory=ltm)

    def stop(self: ReActAgent, kwargs: dict[str, Any], output: Msg) -> None:
        self.interrupt()

    agent.register_instance_hook("post_reasoning", "stop", stop)
    reply = await agent(user("Hi"))
    assert reply.metadata == {"_is_interrupted": True}
    assert len(ltm.retrieved) == 1
    assert ltm.recorded == []
    agent.remove_instance_hook("post_reasoning", "stop")
    await agent(user("Hi again"))
    assert len(ltm.recorded) == 1


@pytest.mark.parametrize(
    ("memory", "mode", "missing", "hint"),
    [
        (ToolsOnly(), "both", "record, retrieve", "long_term_memory_mode='agent_control'"),
        (ToolsOnly(), "static_control", "record, retrieve", None),
        (
            StaticOnly(),
            "both",
            "record_to_memory, retrieve_from_memory",
            "long_term_memory_mode='static_control'",
        ),
        (StaticOnly(), "agent_control", "record_to_memory, retrieve_from_memory", None),
        (LongTermMemoryBase(), "both", "record, retrieve, record_to_memory", None),
    ],
)
def test_a_memory_lacking_what_its_mode_calls_fails_at_construction(
    memory: LongTermMemoryBase, mode: str, missing: str, hint: str | None
) -> None:
    with pytest.raises(TypeError) as info:
        ReActAgent(
            "a",
            "p",
            ScriptedChatModel([]),
            make_agent(ScriptedChatModel([])).formatter,
            long_term_memory=memory,
            long_term_memory_mode=mode,  # type: ignore[arg-type]
        )
    message = str(info.value)
    assert missing in message and f"long_term_memory_mode={mode!r}" in message
    assert type(memory).__name__ in message
    if hint:
        assert hint in message


async def test_a_memory_with_only_what_its_mode_calls_works() -> None:
    model = ScriptedChatModel([response(text("a")), response(text("b"))])
    tools_agent = make_agent(
        model, long_term_memory=ToolsOnly(), long_term_memory_mode="agent_control"
    )
    await tools_agent(user("Hi"))
    static_agent = make_agent(
        model, long_term_memory=StaticOnly(), long_term_memory_mode="static_control"
    )
    await static_agent(user("Hi"))
    assert _tool_names(model, 0) == {"record_to_memory", "retrieve_from_memory"}
    assert _tool_names(model, 1) == set()


async def test_the_base_methods_raise_not_implemented() -> None:
    base = LongTermMemoryBase()
    with pytest.raises(NotImplementedError, match="record"):
        await base.record([])
    with pytest.raises(NotImplementedError, match="retrieve"):
        await base.retrieve(None)
    with pytest.raises(NotImplementedError, match="record_to_memory"):
        await base.record_to_memory("t", ["c"])
    with pytest.raises(NotImplementedError, match="retrieve_from_memory"):
        await base.retrieve_from_memory(["k"])


# -- with the built-in memory ----------------------------------------------------------------


async def test_a_preference_told_in_one_conversation_is_recalled_in_the_next() -> None:
    async with VectorLongTermMemory(user_id="ada") as ltm:
        first = ScriptedChatModel([response(text("Noted, no meat for you."))])
        agent = make_agent(first, long_term_memory=ltm, long_term_memory_mode="static_control")
        await agent(user("I am vegetarian."))
        # A fresh agent, a fresh short-term memory, the same long-term memory.
        second = ScriptedChatModel([response(text("How about a mushroom risotto?"))])
        agent = make_agent(second, long_term_memory=ltm, long_term_memory_mode="static_control")
        await agent(user("Suggest a recipe for dinner without meat."))
        prompt = prompt_text(second.calls[0])
        assert RETRIEVED_TEXT.format("I am vegetarian.") in prompt
        # Only the user's words are facts: not the answers, not the recall itself.
        found = await ltm.search(
            ["mushroom risotto", "no meat for you", "retrieved from long-term memory"], limit=10
        )
        assert {fact for fact, _ in found} == {
            "I am vegetarian.",
            "Suggest a recipe for dinner without meat.",
        }


async def test_the_model_records_and_retrieves_through_the_tools() -> None:
    async with VectorLongTermMemory(user_id="ada") as ltm:
        model = ScriptedChatModel(
            [
                response(
                    call(
                        "record_to_memory",
                        "c1",
                        thinking="A lasting preference.",
                        content=["Ada prefers window seats on flights."],
                    )
                ),
                response(text("Noted.")),
                response(call("retrieve_from_memory", "c2", keywords=["seat preference"])),
                response(text("A window seat, as you like.")),
            ]
        )
        agent = make_agent(model, long_term_memory=ltm, long_term_memory_mode="agent_control")
        await agent(user("Remember that I like window seats."))
        await agent(user("Book me a flight to Rome."))
        msgs = await history(agent.memory)
        results = [
            b.output for m in msgs for b in m.get_content_blocks() if b.type == "tool_result"
        ]
        assert "Successfully recorded content to memory" in results[0][0].text
        assert results[1][0].text == "Ada prefers window seats on flights."


async def test_saving_the_agent_saves_the_memorys_settings_not_its_facts() -> None:
    async with VectorLongTermMemory(user_id="ada", agent_name="Friday") as ltm:
        await ltm.add_facts(["I am vegetarian."])
        agent = make_agent(ScriptedChatModel([]), long_term_memory=ltm)
        state = agent.state_dict()["long_term_memory"]
        assert state == {
            "user_id": "ada",
            "agent_name": "Friday",
            "score_threshold": 0.25,
            "dedup_threshold": 0.9,
            "record_roles": ["user"],
        }
        assert "vegetarian" not in repr(agent.state_dict())
