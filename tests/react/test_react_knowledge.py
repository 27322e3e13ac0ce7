"""ReActAgent with knowledge bases: the prompts a model receives, checked against AgentScope's.

``fixtures/agentscope_knowledge_prompts.json`` was recorded from AgentScope 1.0.21 by
``fixtures/_record_agentscope_knowledge.py``: the same conversation in memory, the same new
message and two knowledge bases returning the same documents. The formatted messages of the
query-rewrite call and of the first reasoning call, the memory afterwards and the queries the
knowledge bases receive must be the same here.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from agentscope_rt.embedding import EmbeddingModelBase, EmbeddingResponse
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import ChatResponse, ScriptedChatModel
from agentscope_rt.rag import DocMetadata, Document, QdrantStore, SimpleKnowledge
from agentscope_rt.tool import Toolkit

from ._support import FixedKnowledge, call, history, make_agent, response, text, texts_of, user

FIXTURE = json.loads(
    (Path(__file__).parent / "fixtures" / "agentscope_knowledge_prompts.json").read_text("utf-8")
)


class StreamRecordingModel(ScriptedChatModel):
    """A scripted model that also records whether each call streamed."""

    def __init__(self, script: list[Any], stream: bool) -> None:
        super().__init__(script, stream=stream)
        self.streamed: list[bool] = []

    async def __call__(self, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
        self.streamed.append(self.stream)
        return await super().__call__(messages, *args, **kwargs)


def _without_titles(schema: Any) -> Any:
    """A pydantic schema as AgentScope sends it to a provider (its ``title`` keys removed)."""
    if isinstance(schema, dict):
        return {k: _without_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_without_titles(v) for v in schema]
    return schema


def _memory_shape(msgs: list[Msg]) -> list[dict[str, Any]]:
    out = []
    for m in msgs:
        data = m.to_dict()
        out.append({"name": data["name"], "role": data["role"], "content": data["content"]})
    return out


async def _run_scenario(rewrite: bool, stream: bool) -> tuple[Any, Any, list[FixedKnowledge]]:
    script: list[Any] = []
    if rewrite:
        script.append(
            ChatResponse(content=[text("")], metadata={"rewritten_query": "weather in Lyon"})
        )
    script.append(response(text("It is mild, with some rain.")))
    model = StreamRecordingModel(script, stream=stream)
    kbs = [FixedKnowledge(FIXTURE["kb_a"]), FixedKnowledge(FIXTURE["kb_b"])]
    agent = make_agent(model, knowledge=kbs, enable_rewrite_query=rewrite)
    for name, role, content in FIXTURE["conversation"]:
        await agent.memory.add(Msg(name, content, role))
    await agent(user(FIXTURE["question"]))
    return agent, model, kbs


@pytest.mark.parametrize("index", [0, 1], ids=["rewrite-streaming", "no-rewrite"])
async def test_prompts_memory_and_queries_match_agentscope(index: int) -> None:
    expected = FIXTURE["scenarios"][index]
    agent, model, kbs = await _run_scenario(expected["rewrite"], expected["stream"])

    assert len(model.calls) == len(expected["calls"])
    for ours, theirs, streamed in zip(model.calls, expected["calls"], model.streamed, strict=True):
        assert ours.messages == theirs["messages"]
        assert streamed == theirs["stream"]
        if theirs["structured_schema"] is not None:
            # The rewrite call: no tools, the rewritten_query schema, not streamed.
            assert not ours.tools
            assert ours.structured_model == _without_titles(theirs["structured_schema"])
        else:
            assert ours.structured_model is None
            assert (ours.tools or []) == theirs["tools"]
    assert _memory_shape(await history(agent.memory)) == expected["memory"]
    assert [kb.queries for kb in kbs] == expected["queries"]
    assert model.stream == expected["stream_after"]


async def test_retrieved_knowledge_stays_in_memory_without_a_mark() -> None:
    model = ScriptedChatModel([response(text("first")), response(text("second"))])
    kb = FixedKnowledge([["Lyon is in France.", 0.5]])
    agent = make_agent(model, knowledge=kb, enable_rewrite_query=False)
    await agent(user("Where is Lyon?"))
    await agent(user("And Paris?"))
    msgs = await history(agent.memory)
    retrieved = [m for m in msgs if "<retrieved_knowledge>" in texts_of(m)]
    assert len(retrieved) == 2  # one per reply, both kept
    for m in retrieved:
        assert (m.name, m.role) == ("user", "user")
        assert await agent.memory.get_memory(mark="hint") == []
    # The second reply's prompt still shows the first retrieval.
    first_retrieval = [m for m in model.calls[1].messages if "<retrieved_knowledge>" in str(m)]
    assert len(first_retrieval) == 2


async def test_query_joins_the_texts_of_several_input_messages() -> None:
    kb = FixedKnowledge([])
    agent = make_agent(
        ScriptedChatModel([response(text("ok"))]), knowledge=kb, enable_rewrite_query=False
    )
    await agent([user("first part"), Msg("user", [], "user"), user("second part")])
    assert kb.queries == ["first part\nsecond part"]
    # Nothing retrieved: no retrieval message.
    assert all("<retrieved_knowledge>" not in texts_of(m) for m in await history(agent.memory))


async def test_no_input_or_no_text_skips_retrieval_and_rewriting() -> None:
    kb = FixedKnowledge([["x", 1.0]])
    model = ScriptedChatModel([response(text("a")), response(text("b")), response(text("c"))])
    agent = make_agent(model, knowledge=kb)
    await agent(None)
    await agent(Msg("user", [], "user"))
    await agent(Msg("user", "  \n ", "user"))
    assert kb.queries == []
    assert all(call.structured_model is None for call in model.calls)


async def test_failed_rewrite_logs_a_warning_and_uses_the_original_query(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class FailsToRewrite(ScriptedChatModel):
        async def __call__(self, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("structured_model") is not None:
                raise RuntimeError("provider down")
            return await super().__call__(messages, *args, **kwargs)

    kb = FixedKnowledge([["fact", 0.3]])
    model = FailsToRewrite([response(text("answer"))], stream=True)
    agent = make_agent(model, knowledge=kb)
    with caplog.at_level(logging.WARNING):
        reply = await agent(user("original question"))
    assert reply.get_text_content() == "answer"
    assert kb.queries == ["original question"]
    assert any(
        r.levelno == logging.WARNING and "provider down" in r.getMessage() for r in caplog.records
    )
    assert model.stream is True  # restored after the failed call


@pytest.mark.parametrize(
    "metadata", [None, {}, {"rewritten_query": ""}, {"rewritten_query": "  "}, {"other": "x"}]
)
async def test_empty_rewrite_keeps_the_original_query(metadata: dict[str, Any] | None) -> None:
    kb = FixedKnowledge([])
    model = ScriptedChatModel(
        [ChatResponse(content=[text("")], metadata=metadata), response(text("ok"))]
    )
    agent = make_agent(model, knowledge=kb)
    await agent(user("the question"))
    assert kb.queries == ["the question"]


async def test_rewrite_restores_streaming_and_reads_a_stream_if_one_comes_back() -> None:
    class StreamingAnyway(ScriptedChatModel):
        """A model that streams whatever its flag says (as a task sharing it might cause)."""

        async def __call__(self, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
            self.stream = True
            return await super().__call__(messages, *args, **kwargs)

    kb = FixedKnowledge([])
    model = StreamingAnyway(
        [
            ChatResponse(content=[text("")], metadata={"rewritten_query": "rewritten"}),
            response(text("ok")),
        ],
        stream=True,
    )
    agent = make_agent(model, knowledge=kb)
    reply = await agent(user("q"))
    assert kb.queries == ["rewritten"]
    assert reply.get_text_content() == "ok"
    assert model.stream is True


async def test_print_hint_msg_prints_the_retrieved_knowledge() -> None:
    kb = FixedKnowledge([["Lyon is in France.", 0.5]])
    agent = make_agent(
        ScriptedChatModel([response(text("ok"))]),
        knowledge=kb,
        enable_rewrite_query=False,
        print_hint_msg=True,
    )
    printed: list[Msg] = []

    async def capture(self: Any, kwargs: dict[str, Any]) -> None:
        printed.append(kwargs["msg"])

    agent.register_instance_hook("pre_print", "capture", capture)
    await agent(user("Where is Lyon?"))
    assert any("Lyon is in France." in texts_of(m) for m in printed)

    quiet = make_agent(
        ScriptedChatModel([response(text("ok"))]), knowledge=kb, enable_rewrite_query=False
    )
    printed_quiet: list[Msg] = []

    async def capture_quiet(self: Any, kwargs: dict[str, Any]) -> None:
        printed_quiet.append(kwargs["msg"])

    quiet.register_instance_hook("pre_print", "capture", capture_quiet)
    await quiet(user("Where is Lyon?"))
    assert all("<retrieved_knowledge>" not in texts_of(m) for m in printed_quiet)


class KeywordEmbedding(EmbeddingModelBase):
    """Counts keywords: a deterministic embedding for a tool-loop test."""

    KEYWORDS = ("lyon", "rain", "paris", "capital", "agent", "tool")

    def __init__(self) -> None:
        super().__init__("keywords", len(self.KEYWORDS))

    async def __call__(self, text: list[Any], **kwargs: Any) -> EmbeddingResponse:
        vectors = []
        for item in text:
            words = str(item["text"] if not isinstance(item, str) else item).lower()
            vectors.append([float(words.count(k)) + 0.01 for k in self.KEYWORDS])
        return EmbeddingResponse(embeddings=vectors)


async def test_the_model_searches_with_the_retrieve_knowledge_tool() -> None:
    async with QdrantStore(":memory:", "kb", dimensions=len(KeywordEmbedding.KEYWORDS)) as store:
        kb = SimpleKnowledge(embedding_store=store, embedding_model=KeywordEmbedding())
        texts = ["In Lyon it rains a lot.", "Paris is the capital.", "An agent calls a tool."]
        await kb.add_documents(
            [
                Document(DocMetadata(TextBlock(text=t), doc_id="d", chunk_id=i, total_chunks=3))
                for i, t in enumerate(texts)
            ]
        )
        toolkit = Toolkit()
        toolkit.register_tool_function(kb.retrieve_knowledge)
        model = ScriptedChatModel(
            [
                response(call("retrieve_knowledge", "c1", query="rain in Lyon", limit=1)),
                response(text("It rains a lot in Lyon.")),
            ]
        )
        agent = make_agent(model, toolkit)
        reply = await agent(user("Does it rain in Lyon?"))
    assert reply.get_text_content() == "It rains a lot in Lyon."
    schema = model.calls[0].tools[0]["function"]  # type: ignore[index]
    assert schema["name"] == "retrieve_knowledge"
    assert set(schema["parameters"]["properties"]) == {"query", "limit", "score_threshold"}
    assert schema["parameters"]["required"] == ["query"]
    result = texts_of((await history(agent.memory))[2])
    assert result.startswith("Score: ")
    assert result.endswith("Content: In Lyon it rains a lot.")
    assert "Paris" not in result
    # The tool's result reaches the next prompt.
    assert "In Lyon it rains a lot." in json.dumps(model.calls[1].messages)


async def test_any_object_with_an_async_retrieve_is_a_knowledge_source() -> None:
    # The agent checks for the protocol (it does not import the rag package): a plain class
    # with retrieve() works, a list of it too; anything else is refused with what to pass.
    class Notes:
        def __init__(self) -> None:
            self.queries: list[str] = []

        async def retrieve(
            self, query: str, limit: int = 5, score_threshold: float | None = None, **kw: Any
        ) -> list[Document]:
            self.queries.append(query)
            meta = DocMetadata(TextBlock(text="Lyon is mild."), "n", 0, 1)
            return [Document(meta, score=0.9)]

    notes = Notes()
    model = ScriptedChatModel([response(text("Mild."))])
    agent = make_agent(model, knowledge=notes, enable_rewrite_query=False)
    await agent(user("weather in Lyon?"))
    assert notes.queries == ["weather in Lyon?"]
    assert any("Lyon is mild." in texts_of(m) for m in await agent.memory.get_memory())

    for bad in (object(), [notes, "not a knowledge base"]):
        with pytest.raises(TypeError, match="must be a KnowledgeBase"):
            make_agent(ScriptedChatModel([]), knowledge=bad)
    with pytest.raises(TypeError, match="plan_notebook must be a PlanNotebook or None"):
        make_agent(ScriptedChatModel([]), plan_notebook=notes)


def test_a_retriever_with_a_synchronous_retrieve_is_refused_when_the_agent_is_built() -> None:
    # A retriever of another library (LlamaIndex's has a synchronous retrieve(str)) fits the
    # protocol by name only: refused at once, not at the first reply with "can't be used in
    # 'await' expression".
    class SyncRetriever:
        def retrieve(self, query: str) -> list[Any]:
            return []

    for bad in (SyncRetriever(), [SyncRetriever()]):
        with pytest.raises(TypeError, match="async retrieve"):
            make_agent(ScriptedChatModel([]), knowledge=bad)


def test_a_plan_notebook_with_a_synchronous_hint_is_refused_when_the_agent_is_built() -> None:
    from agentscope_rt.plan import PlanNotebook

    class SyncHints:
        description = "plans"

        def list_tools(self) -> list[Any]:
            return []

        def get_current_hint(self) -> Msg | None:
            return None

    with pytest.raises(TypeError, match="synchronous"):
        make_agent(ScriptedChatModel([]), plan_notebook=SyncHints())
    assert make_agent(ScriptedChatModel([]), plan_notebook=PlanNotebook()).plan_notebook
