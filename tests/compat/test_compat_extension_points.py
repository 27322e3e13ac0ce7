"""Extension points get what AgentScope gives them.

Each class here is written the way AgentScope 1.x's own tests and examples write it (only
the imports renamed), then used with this package's components: what such a class relies on
(dict blocks for an embedding model, a memory base without ``update_messages_mark``, a
session without ``user_id``, ...) must hold here too.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
from collections.abc import AsyncGenerator
from copy import deepcopy
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.agent import AgentBase, ReActAgent
from agentscope_rt.embedding import EmbeddingModelBase, EmbeddingResponse
from agentscope_rt.formatter import AnthropicChatFormatter, FormatterBase, OpenAIChatFormatter
from agentscope_rt.memory import InMemoryMemory, LongTermMemoryBase, MemoryBase
from agentscope_rt.message import ImageBlock, Msg, TextBlock, ToolUseBlock, URLSource
from agentscope_rt.model import ChatModelBase, ChatResponse, ScriptedChatModel
from agentscope_rt.module import StateModule
from agentscope_rt.pipeline import MsgHub, sequential_pipeline
from agentscope_rt.plan import Plan, PlanNotebook, PlanStorageBase, SubTask
from agentscope_rt.rag import (
    DocMetadata,
    Document,
    KnowledgeBase,
    QdrantStore,
    ReaderBase,
    SimpleKnowledge,
    VDBStoreBase,
)
from agentscope_rt.session import JSONSession, SessionBase
from agentscope_rt.token import CharTokenCounter, TokenCounterBase
from agentscope_rt.tool import ToolResponse

from ..react._support import make_agent, toolkit_of

# -- embedding models ---------------------------------------------------------------------


class TestTextEmbedding(EmbeddingModelBase):
    """AgentScope's tests/rag_knowledge_test.py mock, as written there."""

    __test__ = False  # not a pytest class, despite its (AgentScope's) name

    supported_modalities: list[str] = ["text"]  # noqa: RUF012 - as AgentScope writes it
    """This class only supports text input."""

    def __init__(self) -> None:
        """The constructor for the mock text embedding model."""
        super().__init__(model_name="mock-model", dimensions=3)

    async def __call__(
        self,
        text: list[TextBlock | str],
        **kwargs: Any,
    ) -> EmbeddingResponse:
        """Return a fixed embedding for testing."""
        embeddings = []
        for t in text:
            if isinstance(t, dict):
                t = t.get("text")
            if t == "This is an apple":
                embeddings.append([0.1, 0.2, 0.3])
            elif t == "This is a banana":
                embeddings.append([0.9, 0.1, 0.4])
            elif t == "apple":
                embeddings.append([0.15, 0.25, 0.35])

        return EmbeddingResponse(
            embeddings=embeddings,
        )


def text_doc(text: str, chunk_id: int) -> Document:
    return Document(
        metadata=DocMetadata(
            content=TextBlock(type="text", text=text),
            doc_id="doc1",
            chunk_id=chunk_id,
            total_chunks=2,
        ),
    )


async def test_an_agentscope_embedding_model_gets_dict_blocks_from_simple_knowledge() -> None:
    knowledge = SimpleKnowledge(
        embedding_model=TestTextEmbedding(),
        embedding_store=QdrantStore(location=":memory:", collection_name="test", dimensions=3),
    )
    await knowledge.add_documents(
        [text_doc("This is an apple", 1), text_doc("This is a banana", 2)]
    )
    res = await knowledge.retrieve(query="apple", limit=3, score_threshold=0.7)
    assert len(res) == 1
    assert res[0].metadata.content["text"] == "This is an apple"
    assert res[0].score is not None and math.isclose(res[0].score, 0.9974, abs_tol=1e-4)


class ImageAndTextEmbedding(EmbeddingModelBase):
    """A multimodal model in AgentScope's style: blocks are dicts, sources too."""

    supported_modalities: list[str] = ["text", "image"]  # noqa: RUF012

    def __init__(self) -> None:
        super().__init__(model_name="mock-multimodal", dimensions=2)
        self.seen: list[Any] = []

    async def __call__(self, text: list[Any], **kwargs: Any) -> EmbeddingResponse:
        embeddings = []
        for item in text:
            self.seen.append(item)
            assert isinstance(item, dict), f"got a {type(item).__name__}"
            if item["type"] == "image":
                source = item["source"]
                assert isinstance(source, dict) and source["type"] == "url"
                json.dumps(item)  # AgentScope's blocks are JSON data as they are
                embeddings.append([1.0, 0.0])
            else:
                embeddings.append([0.0, 1.0])
        return EmbeddingResponse(embeddings=embeddings)


async def test_an_agentscope_multimodal_model_gets_dict_blocks_with_dict_sources() -> None:
    model = ImageAndTextEmbedding()
    async with QdrantStore(":memory:", "mm", dimensions=2) as store:
        knowledge = SimpleKnowledge(embedding_store=store, embedding_model=model)
        image = ImageBlock(type="image", source=URLSource(type="url", url="https://e.x/a.png"))
        await knowledge.add_documents(
            [
                Document(
                    metadata=DocMetadata(content=image, doc_id="d", chunk_id=0, total_chunks=2)
                ),
                text_doc("a caption", 1),
            ]
        )
        found = await knowledge.retrieve("a caption", limit=1)
    assert found[0].metadata.content["text"] == "a caption"
    assert model.seen[0] == {"type": "image", "source": {"type": "url", "url": "https://e.x/a.png"}}
    assert model.seen[-1] == {"type": "text", "text": "a caption"}
    # The package's own blocks are untouched: the store kept real blocks.
    assert isinstance(found[0].metadata.content, TextBlock)


# -- short-term memory --------------------------------------------------------------------


class AgentScopeListMemory(MemoryBase):
    """AgentScope 1.0.21's ``InMemoryMemory``, written as a user's own memory (docstrings cut)."""

    def __init__(self) -> None:
        super().__init__()
        self.content: list[tuple[Msg, list[str]]] = []
        self.register_state("content")

    async def get_memory(
        self,
        mark: str | None = None,
        exclude_mark: str | None = None,
        prepend_summary: bool = True,
        **kwargs: Any,
    ) -> list[Msg]:
        filtered_content = [
            (msg, marks) for msg, marks in self.content if mark is None or mark in marks
        ]
        if exclude_mark is not None:
            filtered_content = [
                (msg, marks) for msg, marks in filtered_content if exclude_mark not in marks
            ]
        if prepend_summary and self._compressed_summary:
            return [
                Msg("user", self._compressed_summary, "user"),
                *[msg for msg, _ in filtered_content],
            ]
        return [msg for msg, _ in filtered_content]

    async def add(
        self,
        memories: Msg | list[Msg] | None,
        marks: str | list[str] | None = None,
        allow_duplicates: bool = False,
        **kwargs: Any,
    ) -> None:
        if memories is None:
            return
        if isinstance(memories, Msg):
            memories = [memories]
        if marks is None:
            marks = []
        elif isinstance(marks, str):
            marks = [marks]
        if not allow_duplicates:
            existing_ids = {msg.id for msg, _ in self.content}
            memories = [msg for msg in memories if msg.id not in existing_ids]
        for msg in memories:
            self.content.append((deepcopy(msg), deepcopy(marks)))

    async def delete(self, msg_ids: list[str], **kwargs: Any) -> int:
        initial_size = len(self.content)
        self.content = [(msg, marks) for msg, marks in self.content if msg.id not in msg_ids]
        return initial_size - len(self.content)

    async def delete_by_mark(self, mark: str | list[str], **kwargs: Any) -> int:
        if isinstance(mark, str):
            mark = [mark]
        initial_size = len(self.content)
        for m in mark:
            self.content = [(msg, marks) for msg, marks in self.content if m not in marks]
        return initial_size - len(self.content)

    async def clear(self) -> None:
        self.content.clear()

    async def size(self) -> int:
        return len(self.content)

    def state_dict(self) -> dict:
        return {
            **super().state_dict(),
            "content": [[msg.to_dict(), marks] for msg, marks in self.content],
        }

    def load_state_dict(self, state_dict: dict, strict: bool = True) -> None:
        self._compressed_summary = state_dict.get("_compressed_summary", "")
        self.content = []
        for msg_dict, marks in state_dict.get("content", []):
            self.content.append((Msg.from_dict(msg_dict), marks))


class AgentScopeMarkingMemory(AgentScopeListMemory):
    """The same memory with AgentScope's ``update_messages_mark`` (needed for compression)."""

    async def update_messages_mark(
        self,
        new_mark: str | None,
        old_mark: str | None = None,
        msg_ids: list[str] | None = None,
    ) -> int:
        updated_count = 0
        for idx, (msg, marks) in enumerate(self.content):
            if msg_ids is not None and msg.id not in msg_ids:
                continue
            if old_mark is not None and old_mark not in marks:
                continue
            if new_mark is None:
                if old_mark in marks:
                    marks.remove(old_mark)
                    updated_count += 1
            else:
                if old_mark is not None and old_mark in marks:
                    marks.remove(old_mark)
                if new_mark not in marks:
                    marks.append(new_mark)
                    updated_count += 1
            self.content[idx] = (msg, marks)
        return updated_count


def get_weather(city: str) -> ToolResponse:
    """Get the weather.

    Args:
        city: the city.
    """
    return ToolResponse(content=[TextBlock(type="text", text=f"sunny in {city}")])


def quiet_agent(model: Any, **kwargs: Any) -> ReActAgent:
    return make_agent(model, toolkit_of(get_weather), **kwargs)


def tool_call(call_id: str, city: str) -> ToolUseBlock:
    return ToolUseBlock(type="tool_use", id=call_id, name="get_weather", input={"city": city})


def answer(*blocks: Any) -> ChatResponse:
    return ChatResponse(content=list(blocks))


async def test_an_agentscope_memory_without_update_messages_mark_runs_a_react_agent(
    tmp_path: Path,
) -> None:
    memory = AgentScopeListMemory()  # AgentScope's MemoryBase needs no update_messages_mark
    model = ScriptedChatModel(
        [answer(tool_call("c1", "Paris")), answer(TextBlock(type="text", text="Sunny."))]
    )
    agent = quiet_agent(model, memory=memory)
    reply = await agent(Msg("user", "Weather in Paris?", "user"))
    assert reply.get_text_content() == "Sunny."
    msgs = await memory.get_memory()
    assert [m.role for m in msgs] == ["user", "assistant", "system", "assistant"]
    assert await memory.size() == 4
    with pytest.raises(NotImplementedError, match="AgentScopeListMemory"):
        await memory.update_messages_mark("x")
    # Saved and loaded through a session, into a fresh agent with a fresh memory.
    session = JSONSession(save_dir=str(tmp_path))
    await session.save_session_state("s1", friday=agent)
    again = AgentScopeListMemory()
    other = quiet_agent(ScriptedChatModel([]), memory=again)
    await session.load_session_state("s1", friday=other)
    assert [m.to_dict() for m in await again.get_memory()] == [m.to_dict() for m in msgs]


async def test_an_agentscope_memory_is_compressed_by_the_react_agent() -> None:
    memory = AgentScopeMarkingMemory()
    summary = {
        "task_overview": "Weather in Paris.",
        "current_state": "Sunny.",
        "important_discoveries": "None.",
        "next_steps": "None.",
        "context_to_preserve": "None.",
    }
    model = ScriptedChatModel(
        [
            answer(tool_call("c1", "Paris")),
            ChatResponse(content=[], metadata=summary),
            answer(TextBlock(type="text", text="Sunny.")),
        ]
    )
    agent = quiet_agent(
        model,
        memory=memory,
        compression_config=ReActAgent.CompressionConfig(
            enable=True,
            agent_token_counter=CharTokenCounter(),
            trigger_threshold=10,
            keep_recent=2,
        ),
    )
    reply = await agent(Msg("user", "Weather in Paris?", "user"))
    assert reply.get_text_content() == "Sunny."
    assert "Weather in Paris." in memory._compressed_summary
    assert any("compressed" in marks for _, marks in memory.content)


def test_compression_refuses_a_memory_without_update_messages_mark_when_built() -> None:
    config = ReActAgent.CompressionConfig(
        enable=True, agent_token_counter=CharTokenCounter(), trigger_threshold=10
    )
    with pytest.raises(TypeError, match=r"AgentScopeListMemory does not implement"):
        quiet_agent(ScriptedChatModel([]), memory=AgentScopeListMemory(), compression_config=config)
    quiet_agent(ScriptedChatModel([]), memory=AgentScopeMarkingMemory(), compression_config=config)


# -- sessions -----------------------------------------------------------------------------


class SqliteSession(SessionBase):
    """AgentScope's examples/functionality/session_with_sqlite/sqlite_session.py (logging cut)."""

    def __init__(self, sqlite_path: str) -> None:
        self.sqlite_path = sqlite_path

    async def save_session_state(
        self,
        session_id: str,
        **state_modules_mapping: StateModule,
    ) -> None:
        with sqlite3.connect(self.sqlite_path) as conn:
            cursor = conn.cursor()
            session_data = {
                name: module.state_dict() for name, module in state_modules_mapping.items()
            }
            json_data = json.dumps(session_data)
            cursor.execute(
                """
                CREATE TABLE IF NOT EXISTS as_session (
                    session_id TEXT,
                    session_data JSON,
                    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                    PRIMARY KEY (session_id)
                )
                """,
            )
            cursor.execute(
                """
                INSERT INTO as_session (session_id, session_data, updated_at)
                VALUES (?, json(?), CURRENT_TIMESTAMP)
                ON CONFLICT(session_id) DO UPDATE SET
                    session_data = excluded.session_data,
                    updated_at = excluded.updated_at
                """,
                (session_id, json_data),
            )
            conn.commit()
            cursor.close()

    async def load_session_state(
        self,
        session_id: str,
        allow_not_exist: bool = True,
        **state_modules_mapping: StateModule,
    ) -> None:
        if not os.path.exists(self.sqlite_path):  # noqa: ASYNC240 - as AgentScope writes it
            if allow_not_exist:
                return
            raise ValueError(f"{self.sqlite_path} does not exist.")
        with sqlite3.connect(self.sqlite_path) as conn:
            cursor = conn.cursor()
            try:
                cursor.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' AND name='as_session';"
                )
                if cursor.fetchone() is None:
                    if allow_not_exist:
                        return
                    raise ValueError("no session table")
                cursor.execute(
                    "SELECT session_data FROM as_session WHERE session_id = ?",
                    (session_id,),
                )
                row = cursor.fetchone()
                if row is None:
                    if allow_not_exist:
                        return
                    raise ValueError(f"session {session_id} does not exist.")
                session_data = json.loads(row[0])
                for name, module in state_modules_mapping.items():
                    if name in session_data:
                        module.load_state_dict(session_data[name])
                    else:
                        raise ValueError(f"State module '{name}' not found in session data.")
            finally:
                cursor.close()


async def test_the_agentscope_sqlite_session_example_saves_and_loads_an_agent(
    tmp_path: Path,
) -> None:
    session = SqliteSession(str(tmp_path / "session.db"))
    agent = quiet_agent(ScriptedChatModel([answer(TextBlock(type="text", text="Washington."))]))
    await session.load_session_state(session_id="alice", friday_of_user=agent)
    await agent(Msg("user", "What's the capital of America?", "user"))
    await session.save_session_state(session_id="alice", friday_of_user=agent)
    again = quiet_agent(ScriptedChatModel([]))
    await session.load_session_state(session_id="alice", friday_of_user=again)
    texts = [m.get_text_content() for m in await again.memory.get_memory()]
    assert texts == ["What's the capital of America?", "Washington."]


async def test_durable_replies_work_with_a_session_without_user_id(tmp_path: Path) -> None:
    session = SqliteSession(str(tmp_path / "session.db"))
    agent = quiet_agent(
        ScriptedChatModel(
            [answer(tool_call("c1", "Paris")), answer(TextBlock(type="text", text="Sunny."))]
        )
    )
    agent.checkpoint_to(session, "alice")
    reply = await agent(Msg("user", "Weather in Paris?", "user"))
    assert reply.get_text_content() == "Sunny."
    # A new process's agent picks the conversation up from the session.
    again = quiet_agent(ScriptedChatModel([answer(TextBlock(type="text", text="Yes."))]))
    again.checkpoint_to(session, "alice")
    await again(Msg("user", "Still sunny?", "user"))
    texts = [m.get_text_content() for m in await again.memory.get_memory()]
    assert texts[0] == "Weather in Paris?" and texts[-2:] == ["Still sunny?", "Yes."]


# -- plan storage -------------------------------------------------------------------------


class JSONFilePlanStorage(PlanStorageBase):
    """A plan storage in AgentScope's style: pydantic's model_dump / model_validate."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def _read(self) -> dict[str, Any]:
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    async def add_plan(self, plan: Plan, override: bool = True) -> None:
        plans = self._read()
        plans[plan.id] = plan.model_dump()
        self.path.write_text(json.dumps(plans))

    async def delete_plan(self, plan_id: str) -> None:
        plans = self._read()
        plans.pop(plan_id, None)
        self.path.write_text(json.dumps(plans))

    async def get_plans(self) -> list[Plan]:
        return [Plan.model_validate(p) for p in self._read().values()]

    async def get_plan(self, plan_id: str) -> Plan | None:
        data = self._read().get(plan_id)
        return Plan.model_validate(data) if data else None


async def test_an_agentscope_plan_storage_keeps_the_notebooks_history(tmp_path: Path) -> None:
    storage = JSONFilePlanStorage(tmp_path / "plans.json")
    notebook = PlanNotebook(storage=storage)
    subtask = SubTask(name="look", description="look it up", expected_outcome="found")
    await notebook.create_plan("Trip", "plan a trip", "a plan", [subtask])
    plan_id = notebook.current_plan.id
    await notebook.finish_subtask(subtask_idx=0, subtask_outcome="found")
    await notebook.finish_plan(state="done", outcome="planned")
    listed = await notebook.view_historical_plans()
    assert plan_id in listed.content[0]["text"]
    recovered = await notebook.recover_historical_plan(plan_id)
    assert notebook.current_plan is not None and notebook.current_plan.name == "Trip", recovered
    json.dumps(notebook.state_dict())


# -- long-term memory ---------------------------------------------------------------------


class ListLongTermMemory(LongTermMemoryBase):
    """A long-term memory in AgentScope's style: texts from msgs, ToolResponses from tools."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[str] = []

    async def record(self, msgs: list[Msg | None], **kwargs: Any) -> None:
        for msg in msgs:
            if msg is not None:
                self.records.append(msg.get_text_content() or "")

    async def retrieve(self, msg: Msg | list[Msg] | None, limit: int = 5, **kwargs: Any) -> str:
        if isinstance(msg, Msg):
            msg = [msg]
        words = {w for m in msg or [] for w in (m.get_text_content() or "").lower().split()}
        return "\n".join(r for r in self.records if words & set(r.lower().split()))

    async def record_to_memory(
        self, thinking: str, content: list[str], **kwargs: Any
    ) -> ToolResponse:
        self.records.extend(content)
        return ToolResponse(content=[TextBlock(type="text", text="Success")])

    async def retrieve_from_memory(
        self, keywords: list[str], limit: int = 5, **kwargs: Any
    ) -> ToolResponse:
        found = [r for r in self.records if any(k in r for k in keywords)]
        return ToolResponse(content=[TextBlock(type="text", text="\n".join(found))])


async def test_an_agentscope_long_term_memory_in_both_modes() -> None:
    ltm = ListLongTermMemory()
    ltm.records.append("paris is rainy in november")
    record = ToolUseBlock(
        type="tool_use",
        id="r1",
        name="record_to_memory",
        input={"thinking": "keep it", "content": ["the user likes paris"]},
    )
    model = ScriptedChatModel([answer(record), answer(TextBlock(type="text", text="Noted."))])
    agent = quiet_agent(model, long_term_memory=ltm, long_term_memory_mode="both")
    reply = await agent(Msg("user", "Weather in paris?", "user"))
    assert reply.get_text_content() == "Noted."
    assert "the user likes paris" in ltm.records
    assert "Weather in paris?" in ltm.records  # recorded at the end of the reply
    texts = [m.get_text_content() or "" for m in await agent.memory.get_memory()]
    assert any("paris is rainy in november" in t for t in texts)


# -- readers, stores and knowledge bases --------------------------------------------------


class LineReader(ReaderBase):
    """A reader in AgentScope's style: one chunk per line."""

    async def __call__(self, text: str) -> list[Document]:
        lines = [line for line in text.splitlines() if line.strip()]
        doc_id = self.get_doc_id(text)
        return [
            Document(
                metadata=DocMetadata(
                    content=TextBlock(type="text", text=line),
                    doc_id=doc_id,
                    chunk_id=i,
                    total_chunks=len(lines),
                ),
            )
            for i, line in enumerate(lines)
        ]

    def get_doc_id(self, text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


class ListStore(VDBStoreBase):
    """A store in AgentScope's style: no ``super().__init__()`` (AgentScope's base has none),
    payloads built from the metadata's fields, documents rebuilt with ``DocMetadata(**payload)``."""

    def __init__(self) -> None:
        self.rows: list[tuple[list[float], dict[str, Any]]] = []

    async def add(self, documents: list[Document], **kwargs: Any) -> None:
        for doc in documents:
            payload = {
                "doc_id": doc.metadata.doc_id,
                "chunk_id": doc.metadata.chunk_id,
                "total_chunks": doc.metadata.total_chunks,
                "content": doc.metadata.content,
            }
            assert doc.embedding is not None
            self.rows.append((list(doc.embedding), payload))

    async def delete(self, *args: Any, **kwargs: Any) -> None:
        self.rows.clear()

    async def search(
        self,
        query_embedding: list[float],
        limit: int,
        score_threshold: float | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        scored = sorted(
            ((cosine(query_embedding, vector), payload) for vector, payload in self.rows),
            key=lambda pair: pair[0],
            reverse=True,
        )
        return [
            Document(metadata=DocMetadata(**payload), score=score)
            for score, payload in scored[:limit]
            if score_threshold is None or score >= score_threshold
        ]


async def test_an_agentscope_reader_and_store_with_simple_knowledge_and_an_agent() -> None:
    docs = await LineReader()("This is an apple\nThis is a banana\n")
    knowledge = SimpleKnowledge(embedding_store=ListStore(), embedding_model=TestTextEmbedding())
    await knowledge.add_documents(docs)
    found = await knowledge.retrieve("apple", limit=1)
    assert found[0].metadata.content["text"] == "This is an apple"
    tool = await knowledge.retrieve_knowledge("apple", limit=1)
    assert "This is an apple" in tool.content[0]["text"]
    model = ScriptedChatModel([answer(TextBlock(type="text", text="An apple."))])
    agent = quiet_agent(model, knowledge=knowledge, enable_rewrite_query=False)
    await agent(Msg("user", "apple", "user"))
    assert "This is an apple" in json.dumps(model.calls[0].messages)


class KeywordKnowledge(KnowledgeBase):
    """A knowledge base in AgentScope's style, with no store or model."""

    def __init__(self, texts: list[str]) -> None:
        super().__init__(embedding_store=None, embedding_model=None)  # type: ignore[arg-type]
        self.texts = texts

    async def retrieve(
        self,
        query: str,
        limit: int = 5,
        score_threshold: float | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        return [
            Document(
                metadata=DocMetadata(
                    content=TextBlock(type="text", text=text),
                    doc_id="kw",
                    chunk_id=i,
                    total_chunks=len(self.texts),
                ),
                score=1.0,
            )
            for i, text in enumerate(self.texts)
            if query.lower() in text.lower()
        ][:limit]

    async def add_documents(self, documents: list[Document], **kwargs: Any) -> None:
        self.texts.extend(doc.metadata.content["text"] for doc in documents)


async def test_an_agentscope_knowledge_base_feeds_the_agent() -> None:
    kb = KeywordKnowledge(["Lyon sits on the Rhone."])
    model = ScriptedChatModel([answer(TextBlock(type="text", text="On the Rhone."))])
    agent = quiet_agent(model, knowledge=kb, enable_rewrite_query=False)
    await agent(Msg("user", "lyon", "user"))
    assert "Lyon sits on the Rhone." in json.dumps(model.calls[0].messages)


# -- chat models, formatters, token counters ----------------------------------------------


class DictBlockModel(ChatModelBase):
    """A chat model in AgentScope's style, whose blocks are dicts (AgentScope's ``TextBlock``
    is a ``TypedDict``), streaming or not."""

    def __init__(self, replies: list[list[dict[str, Any]]], stream: bool = False) -> None:
        super().__init__("dict-model", stream=stream)
        self.replies = replies
        self.prompts: list[list[dict[str, Any]]] = []

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict] | None = None,
        tool_choice: str | None = None,
        structured_model: Any = None,
        **kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        json.dumps(messages)  # AgentScope's formatters give JSON data
        self.prompts.append(messages)
        content = self.replies.pop(0)
        if not self.stream:
            return ChatResponse(content=content)

        async def generator() -> AsyncGenerator[ChatResponse, None]:
            for end in range(1, len(content) + 1):
                yield ChatResponse(content=content[:end])

        return generator()


class JSONLengthCounter(TokenCounterBase):
    """A token counter in AgentScope's style: it reads the formatted dicts as JSON."""

    async def count(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None, **kwargs: Any
    ) -> int:
        return len(json.dumps(messages)) + len(json.dumps(tools or []))


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_a_chat_model_returning_dict_blocks_drives_the_react_loop(stream: bool) -> None:
    call = {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}}
    model = DictBlockModel(
        [
            [{"type": "text", "text": "Let me look."}, call],
            [{"type": "text", "text": "Sunny."}],
        ],
        stream=stream,
    )
    agent = quiet_agent(
        model, formatter=OpenAIChatFormatter(token_counter=JSONLengthCounter(), max_tokens=100_000)
    )
    reply = await agent(Msg("user", "Weather in Paris?", "user"))
    assert reply.get_text_content() == "Sunny."
    msgs = await agent.memory.get_memory()
    assert [type(b).__name__ for m in msgs for b in m.get_content_blocks()] == [
        "TextBlock",
        "TextBlock",
        "ToolUseBlock",
        "ToolResultBlock",
        "TextBlock",
    ]
    assert "sunny in Paris" in json.dumps(model.prompts[1])


async def test_a_dict_block_that_is_no_block_is_a_clear_error_and_nothing_is_recorded() -> None:
    model = DictBlockModel([[{"type": "text"}]])
    agent = quiet_agent(model)
    with pytest.raises(ValueError, match=r"content\[0\]\.text"):
        await agent(Msg("user", "hi", "user"))
    assert [m.role for m in await agent.memory.get_memory()] == ["user"]


# -- agents -------------------------------------------------------------------------------


class EchoAgent(AgentBase):
    """An agent in AgentScope's style: its own memory, reply / observe / handle_interrupt."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.memory = InMemoryMemory()
        self.stalled: anyio.Event | None = None

    async def reply(self, msg: Msg | list[Msg] | None = None) -> Msg:
        await self.memory.add(msg)
        if self.stalled is not None:
            self.stalled.set()
            await anyio.sleep_forever()
        text = msg.get_text_content() if isinstance(msg, Msg) else ""
        out = Msg(self.name, f"echo: {text}", "assistant")
        await self.print(out)
        await self.memory.add(out)
        return out

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        await self.memory.add(msg)

    async def handle_interrupt(self, *args: Any, **kwargs: Any) -> Msg:
        out = Msg(self.name, "I was interrupted.", "assistant")
        await self.print(out)
        await self.memory.add(out)
        return out


async def test_an_agentscope_agent_replies_observes_and_is_interrupted() -> None:
    echo = EchoAgent("Echo")
    echo.set_console_output_enabled(False)
    friday = quiet_agent(ScriptedChatModel([answer(TextBlock(type="text", text="Hello."))]))
    async with MsgHub(participants=[echo, friday]):
        await sequential_pipeline([echo, friday], Msg("user", "hi", "user"))
    assert [m.get_text_content() for m in await echo.memory.get_memory()] == [
        "hi",
        "echo: hi",
        "Hello.",
    ]
    json.dumps(echo.state_dict())
    echo.stalled = anyio.Event()
    replies: list[Msg] = []

    async def ask() -> None:
        replies.append(await echo(Msg("user", "wait", "user")))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            await echo.stalled.wait()
            await echo.interrupt()
    assert replies[0].get_text_content() == "I was interrupted."


class JSONRowStore(VDBStoreBase):
    """A store written as AgentScope's own stores are (MongoDB, OceanBase, MySQL): the row id
    is ``json.dumps`` of the doc id, chunk id and content, the content goes into the row as
    it is, and the driver encodes the row (here ``json.dumps``, as a JSON column or BSON)."""

    def __init__(self) -> None:
        self.rows: dict[str, str] = {}

    async def add(self, documents: list[Document], **kwargs: Any) -> None:
        for doc in documents:
            unique_string = json.dumps(
                {
                    "doc_id": doc.metadata.doc_id,
                    "chunk_id": doc.metadata.chunk_id,
                    "content": doc.metadata.content,
                },
                ensure_ascii=False,
            )
            row_id = hashlib.md5(unique_string.encode()).hexdigest()
            self.rows[row_id] = json.dumps(
                {
                    "vector": doc.embedding,
                    "payload": {
                        "doc_id": doc.metadata.doc_id,
                        "chunk_id": doc.metadata.chunk_id,
                        "total_chunks": doc.metadata.total_chunks,
                        "content": doc.metadata.content,
                    },
                }
            )

    async def delete(self, *args: Any, **kwargs: Any) -> None:
        self.rows.clear()

    async def search(
        self,
        query_embedding: list[float],
        limit: int,
        score_threshold: float | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        results = []
        for row_id, row in self.rows.items():
            data = json.loads(row)
            score = cosine(query_embedding, data["vector"])
            if score_threshold is None or score >= score_threshold:
                doc = Document(metadata=DocMetadata(**data["payload"]), id=row_id, score=score)
                results.append(doc)
        return sorted(results, key=lambda d: d.score or 0.0, reverse=True)[:limit]


async def test_a_store_written_like_agentscopes_gets_json_ready_documents() -> None:
    store = JSONRowStore()
    knowledge = SimpleKnowledge(embedding_store=store, embedding_model=TestTextEmbedding())
    docs = [text_doc("This is an apple", 1), text_doc("This is a banana", 2)]
    await knowledge.add_documents(docs)
    assert len(store.rows) == 2
    found = await knowledge.retrieve("apple", limit=1)
    assert isinstance(found[0].metadata.content, TextBlock)
    assert found[0].metadata.content.text == "This is an apple"
    # The caller's documents keep their blocks, and get their embeddings.
    assert isinstance(docs[0].metadata.content, TextBlock) and docs[0].embedding is not None


class PlainTextFormatter(FormatterBase):
    """A formatter in AgentScope's style: blocks read with ``block.get("type")`` and
    ``block["..."]``, one text message per Msg."""

    async def format(self, msgs: list[Msg], **kwargs: Any) -> list[dict[str, Any]]:
        self.assert_list_of_msgs(msgs)
        messages = []
        for msg in msgs:
            parts = []
            for block in msg.get_content_blocks():
                typ = block.get("type")
                if typ == "text":
                    parts.append(block["text"])
                elif typ == "tool_use":
                    parts.append(f"call {block['name']}({json.dumps(block['input'])})")
                elif typ == "tool_result":
                    output = block["output"]
                    if not isinstance(output, str):
                        output = "".join(b["text"] for b in output if b["type"] == "text")
                    parts.append(f"result of {block['name']}: {output}")
            messages.append({"role": msg.role, "content": "\n".join(parts)})
        return messages


async def test_an_agentscope_formatter_reads_the_agents_messages() -> None:
    model = ScriptedChatModel(
        [answer(tool_call("c1", "Paris")), answer(TextBlock(type="text", text="Sunny."))]
    )
    agent = quiet_agent(model, formatter=PlainTextFormatter())
    await agent(Msg("user", "Weather in Paris?", "user"))
    assert model.calls[1].messages[-2:] == [
        {"role": "assistant", "content": 'call get_weather({"city": "Paris"})'},
        {"role": "system", "content": "result of get_weather: sunny in Paris"},
    ]


# -- tool functions -----------------------------------------------------------------------


def dict_weather(city: str) -> ToolResponse:
    """Get the weather, answering with AgentScope's dict blocks.

    Args:
        city: the city.
    """
    return ToolResponse(content=[{"type": "text", "text": f"sunny in {city}"}])


async def dict_weather_stream(city: str) -> AsyncGenerator[ToolResponse, None]:
    """Get the weather in two chunks of dict blocks.

    Args:
        city: the city.
    """
    yield ToolResponse(content=[{"type": "text", "text": "sunny"}])
    yield ToolResponse(content=[{"type": "text", "text": f"sunny in {city}"}], is_last=True)


def broken_block() -> ToolResponse:
    """Answer with a dict that is no block."""
    return ToolResponse(content=[{"type": "text"}])


@pytest.mark.parametrize("tool", [dict_weather, dict_weather_stream], ids=["whole", "stream"])
async def test_a_tool_answering_with_dict_blocks_records_blocks(tool: Any) -> None:
    toolkit = toolkit_of(tool)
    use = ToolUseBlock(type="tool_use", id="c1", name=tool.__name__, input={"city": "Paris"})
    model = ScriptedChatModel([answer(use), answer(TextBlock(type="text", text="Sunny."))])
    agent = make_agent(
        model, toolkit, formatter=AnthropicChatFormatter()
    )  # reads tool outputs as blocks
    reply = await agent(Msg("user", "Weather in Paris?", "user"))
    assert reply.get_text_content() == "Sunny."
    (result,) = (await agent.memory.get_memory())[2].get_content_blocks("tool_result")
    assert result["output"] == [TextBlock(text="sunny in Paris")]
    assert isinstance(result["output"][0], TextBlock)
    assert "sunny in Paris" in json.dumps(model.calls[1].messages)


async def test_a_tool_answering_with_a_dict_that_is_no_block_tells_the_model() -> None:
    toolkit = toolkit_of(broken_block)
    use = ToolUseBlock(type="tool_use", id="c1", name="broken_block", input={})
    model = ScriptedChatModel([answer(use), answer(TextBlock(type="text", text="Sorry."))])
    agent = make_agent(model, toolkit, formatter=AnthropicChatFormatter())
    assert (await agent(Msg("user", "go", "user"))).get_text_content() == "Sorry."
    (result,) = (await agent.memory.get_memory())[2].get_content_blocks("tool_result")
    (text,) = result["output"]
    assert isinstance(text, TextBlock) and text.text.startswith("Error:")
    assert "output[0].text: required field missing" in text.text
