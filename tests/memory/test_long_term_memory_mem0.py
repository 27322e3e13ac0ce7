"""Mem0LongTermMemory offline: mem0 (installed from PyPI) runs on the local embedding model and
a scripted chat model that answers mem0's fact-extraction prompt with JSON, on both backends.
mem0's folder, vector store and history database live in temporary folders."""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

# mem0 creates its folder when imported: keep it out of the home directory.
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-tests-"))

from agentscope_rt.embedding import LocalTextEmbedding
from agentscope_rt.memory import Mem0LongTermMemory
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import FunctionChatModel, ScriptedChatModel
from tests._cancellation import used_then_cancelled
from tests.react._support import make_agent, prompt_text, response, text, user

RETRIEVED = "<long_term_memory>The content below are retrieved from long-term memory"


@pytest.fixture(scope="module")
def embedding() -> Iterator[LocalTextEmbedding]:
    yield LocalTextEmbedding()


def _new_messages(prompt: str) -> list[str]:
    """The lines of the "New Messages" section of mem0's extraction prompt, without roles."""
    section = prompt.split("## New Messages", 1)[1].split("\n## ", 1)[0]
    lines = [line.split(": ", 1)[-1].strip() for line in section.strip().splitlines()]
    return [line for line in lines if line]


class Extractor:
    """Answers mem0's extraction prompt as an LLM would: every statement (not a question) of
    the new messages, in the third person, as one memory."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, messages: list[dict[str, Any]], tools: Any) -> str:
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        facts = []
        for line in _new_messages(prompt):
            for sentence in re.split(r"(?<=[.!?])\s+", line):
                if sentence and not sentence.endswith("?") and sentence.startswith("I "):
                    facts.append({"text": "User " + sentence[2:]})
        return json.dumps({"memory": facts})


def _config(tmp_path: Path, folder: str = "qdrant") -> dict[str, Any]:
    return {
        "history_db_path": str(tmp_path / "history.db"),
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "path": str(tmp_path / folder),
                "embedding_model_dims": 384,
                "on_disk": True,
            },
        },
    }


async def test_facts_are_extracted_recorded_and_retrieved_per_user(
    embedding: LocalTextEmbedding, tmp_path: Path
) -> None:
    extractor = Extractor()
    memory = Mem0LongTermMemory(
        user_name="ada",
        model=FunctionChatModel(extractor),
        embedding_model=embedding,
        mem0_config=_config(tmp_path),
    )
    async with memory:
        result = await memory.record(
            [Msg("user", "I am vegetarian. I live in Paris. What should I cook?", "user"), None]
        )
        assert sorted(r["memory"] for r in result["results"]) == [
            "User am vegetarian.",
            "User live in Paris.",
        ]
        # mem0 got the text of the messages, once, as AgentScope sends it.
        assert "I am vegetarian. I live in Paris. What should I cook?" in extractor.prompts[0]
        recalled = await memory.retrieve(Msg("user", "Suggest a recipe without meat", "user"))
        assert recalled.split("\n")[0] == "User am vegetarian."
        found = await memory.retrieve_from_memory(["city"], limit=1)
        assert found.content[0] == TextBlock(text="User live in Paris.")
    # Another user's memory on the same folder sees none of it.
    other = Mem0LongTermMemory(
        user_name="bob",
        model=FunctionChatModel(Extractor()),
        embedding_model=embedding,
        mem0_config=_config(tmp_path),
    )
    async with other:
        assert await other.retrieve(Msg("user", "Suggest a recipe without meat", "user")) == ""
        # ... and Ada's facts are still there after the restart.
    again = Mem0LongTermMemory(
        user_name="ada",
        model=ScriptedChatModel([]),
        embedding_model=embedding,
        mem0_config=_config(tmp_path),
    )
    async with again:
        assert "User live in Paris." in await again.retrieve(Msg("user", "Which city?", "user"))


async def test_memories_built_from_one_config_object_keep_their_own_models(
    embedding: LocalTextEmbedding, tmp_path: Path
) -> None:
    # One MemoryConfig for every user: each memory runs on the models it was given, and the
    # config object is left as it was.
    from mem0.configs.base import MemoryConfig

    config = MemoryConfig(**_config(tmp_path))
    llm_before = config.llm
    ada_model, bob_model = Extractor(), Extractor()
    ada = Mem0LongTermMemory(
        user_name="ada",
        model=FunctionChatModel(ada_model),
        embedding_model=embedding,
        mem0_config=config,
    )
    bob = Mem0LongTermMemory(
        user_name="bob",
        model=FunctionChatModel(bob_model),
        embedding_model=embedding,
        mem0_config=config,
    )
    assert config.llm is llm_before
    async with ada:
        await ada.record([Msg("user", "I live in Paris.", "user")])
    async with bob:
        await bob.record([Msg("user", "I live in Rome.", "user")])
    assert len(ada_model.prompts) == 1 and "Paris" in ada_model.prompts[0]
    assert len(bob_model.prompts) == 1 and "Rome" in bob_model.prompts[0]


async def test_record_to_memory_falls_back_to_storing_the_text_as_given(
    embedding: LocalTextEmbedding, tmp_path: Path
) -> None:
    nothing = FunctionChatModel(lambda messages, tools: json.dumps({"memory": []}))
    async with Mem0LongTermMemory(
        agent_name="Friday", model=nothing, embedding_model=embedding, mem0_config=_config(tmp_path)
    ) as memory:
        answer = await memory.record_to_memory("Worth keeping.", ["Ada's flight is on May 3."])
        block = answer.content[0]
        assert isinstance(block, TextBlock)
        assert block.text.startswith("Successfully recorded content to memory")
        # As the user's words, then as the assistant's (both extracted nothing), then as is.
        assert len(nothing.calls) == 2
        assert "user: Worth keeping." in nothing.calls[0].messages[-1]["content"]
        assert "assistant: Worth keeping." in nothing.calls[1].messages[-1]["content"]
        assert "Worth keeping.\nAda's flight is on May 3." in block.text.replace("\\n", "\n")
        found = await memory.retrieve_from_memory(["flight date"])
        assert "Ada's flight is on May 3." in found.content[0].text  # type: ignore[union-attr]
        # Extra arguments go to mem0's add, as in AgentScope (here a custom extraction prompt).
        await memory.record_to_memory("", ["Ada likes jazz."], prompt="EXTRACT ONLY MUSIC.")
        assert any(
            "EXTRACT ONLY MUSIC." in str(message.get("content"))
            for message in nothing.calls[2].messages
        )


async def test_a_streaming_model_and_errors_reach_the_tools_as_text(
    embedding: LocalTextEmbedding, tmp_path: Path
) -> None:
    streaming = FunctionChatModel(Extractor(), stream=True)
    async with Mem0LongTermMemory(
        run_name="r1", model=streaming, embedding_model=embedding, mem0_config=_config(tmp_path)
    ) as memory:
        answer = await memory.record_to_memory("", ["I play the piano."])
        assert "User play the piano." in answer.content[0].text  # type: ignore[union-attr]

    def broken(messages: list[dict[str, Any]], tools: Any) -> str:
        raise ConnectionError("the provider is down")

    async with Mem0LongTermMemory(
        run_name="r2",
        model=FunctionChatModel(broken),
        embedding_model=embedding,
        mem0_config=_config(tmp_path, "other"),
    ) as memory:
        answer = await memory.record_to_memory("", ["I play the piano."])
        message = answer.content[0].text  # type: ignore[union-attr]
        assert message.startswith("Error recording memory: ")
        assert "the provider is down" in message


async def test_an_agent_remembers_across_conversations_through_mem0(
    embedding: LocalTextEmbedding, tmp_path: Path
) -> None:
    async with Mem0LongTermMemory(
        user_name="ada",
        model=FunctionChatModel(Extractor()),
        embedding_model=embedding,
        mem0_config=_config(tmp_path),
    ) as memory:
        first = ScriptedChatModel([response(text("Noted."))])
        agent = make_agent(first, long_term_memory=memory)
        await agent(user("I prefer window seats on flights."))
        second = ScriptedChatModel([response(text("A window seat, then."))])
        agent = make_agent(second, long_term_memory=memory)
        await agent(user("Book me a flight to Rome."))
        prompt = prompt_text(second.calls[0])
        assert RETRIEVED in prompt
        assert "User prefer window seats on flights." in prompt
        assert set(second.calls[0].tool_names) == {"record_to_memory", "retrieve_from_memory"}


def test_construction_checks_and_state(embedding: LocalTextEmbedding, monkeypatch: Any) -> None:
    monkeypatch.delenv("MEM0_TELEMETRY", raising=False)
    with pytest.raises(ValueError, match="at least one of agent_name, user_name, and run_name"):
        Mem0LongTermMemory(model=ScriptedChatModel([]), embedding_model=embedding)
    with pytest.raises(ValueError, match="model and embedding_model are required"):
        Mem0LongTermMemory(user_name="ada", embedding_model=embedding)
    with pytest.raises(TypeError, match="on_disk"):
        Mem0LongTermMemory(
            user_name="ada", model=ScriptedChatModel([]), embedding_model=embedding, disk=True
        )
    with pytest.raises(TypeError, match="model must be a ChatModelBase"):
        Mem0LongTermMemory(user_name="ada", model="gpt-4o", embedding_model=embedding)  # type: ignore[arg-type]
    memory = Mem0LongTermMemory(
        user_name="ada", model=ScriptedChatModel([]), embedding_model=embedding, on_disk=False
    )
    # Nothing is opened before the first call; the default store is sized to the model.
    assert memory.long_term_working_memory is None
    store = memory._config.vector_store
    assert store.provider == "qdrant"
    assert store.config.embedding_model_dims == 384 and store.config.on_disk is False
    # No state, as AgentScope's: an agent saved by AgentScope holds "long_term_memory": {},
    # which loads here, and loading a session never changes whose memories these are.
    assert memory.state_dict() == {}
    memory.load_state_dict({})
    assert memory.user_id == "ada"
    # mem0's telemetry (PostHog) and remote notices are off unless the user asks for them.
    assert sys.modules["mem0.memory.telemetry"].MEM0_TELEMETRY is False
    assert os.environ["MEM0_TELEMETRY"] == "False"


def test_one_memory_serves_asyncio_then_trio(embedding: LocalTextEmbedding, tmp_path: Path) -> None:
    memory = Mem0LongTermMemory(
        user_name="ada",
        model=FunctionChatModel(Extractor()),
        embedding_model=embedding,
        mem0_config=_config(tmp_path),
    )

    async def remember() -> None:
        await memory.record([Msg("user", "I play the piano.", "user")])

    async def recall() -> str:
        try:
            return await memory.retrieve(Msg("user", "What instrument do I play?", "user"))
        finally:
            await memory.close()

    anyio.run(remember)
    assert anyio.run(recall, backend="trio") == "User play the piano."


async def test_cancelling_a_call_cancels_the_model_call_and_leaves_the_memory_usable(
    embedding: LocalTextEmbedding, tmp_path: Path
) -> None:
    entered = anyio.Event()
    cancelled: list[str] = []
    extractor = Extractor()

    async def slow_extractor(messages: list[dict[str, Any]], tools: Any) -> str:
        if not entered.is_set():
            entered.set()
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                cancelled.append("model call")
                raise
        return extractor(messages, tools)

    async with Mem0LongTermMemory(
        user_name="ada",
        model=FunctionChatModel(slow_extractor),
        embedding_model=embedding,
        mem0_config=_config(tmp_path),
    ) as memory:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:

                async def cancel_when_mem0_waits() -> None:
                    await entered.wait()
                    scope.cancel()

                tg.start_soon(cancel_when_mem0_waits)
                await memory.record([Msg("user", "I play the piano.", "user")])
        # The model call mem0's thread was waiting on was cancelled with the caller, mem0
        # stopped, and only then was the cancellation delivered.
        assert scope.cancelled_caught and cancelled == ["model call"]
        assert await memory.retrieve(Msg("user", "What instrument do I play?", "user")) == ""
        # The memory is free for the next call.
        await memory.record([Msg("user", "I play the piano.", "user")])
        question = Msg("user", "What instrument do I play?", "user")
        assert await memory.retrieve(question) == "User play the piano."


async def test_a_memory_cancelled_mid_use_still_releases_its_store(
    embedding: LocalTextEmbedding, tmp_path: Path
) -> None:
    # The close of ``async with`` runs in the cancelled scope: it must still close mem0's
    # on-disk vector store, or the next memory on the same folder cannot open it.
    def memory() -> Mem0LongTermMemory:
        return Mem0LongTermMemory(
            user_name="ada",
            model=FunctionChatModel(Extractor()),
            embedding_model=embedding,
            mem0_config=_config(tmp_path),
        )

    first = memory()  # still referenced: no collector closes it
    await used_then_cancelled(first, lambda m: m.record([Msg("user", "I live in Paris.", "user")]))
    assert first.long_term_working_memory is None
    async with memory() as again:
        assert "User live in Paris." in await again.retrieve(Msg("user", "Which city?", "user"))
