"""Extension points get what AgentScope gives them.

Each class here is written the way AgentScope 1.x's own tests and examples write it (only
the imports renamed), then used with this package's components: what such a class relies on
(dict blocks for an embedding model, a memory base without ``update_messages_mark``, a
session without ``user_id``, ...) must hold here too.
"""

from __future__ import annotations

import json
import math
from copy import deepcopy
from pathlib import Path
from typing import Any

import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.embedding import EmbeddingModelBase, EmbeddingResponse
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.memory import MemoryBase
from agentscope_rt.message import ImageBlock, Msg, TextBlock, ToolUseBlock, URLSource
from agentscope_rt.model import ChatResponse, ScriptedChatModel
from agentscope_rt.rag import DocMetadata, Document, QdrantStore, SimpleKnowledge
from agentscope_rt.session import JSONSession
from agentscope_rt.token import CharTokenCounter
from agentscope_rt.tool import Toolkit, ToolResponse

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
    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are a helpful assistant.",
        model=model,
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
        **kwargs,
    )
    agent.set_console_output_enabled(False)
    return agent


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
