"""A model's tool arguments reach a tool function only when the tool's schema names them.

Tool functions that declare ``**kwargs`` in Python (the long-term memory tools, a knowledge
base's ``retrieve_knowledge``, the coding tools) hide it from the schema, and hand what it
collects to a library: mem0's ``Memory.add``, Qdrant's ``query_points``. A prompt-injected
model that adds ``user_id`` or ``query_filter`` to its call must get an argument error it can
read, and the library must never see the key.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

# mem0 creates its folder when imported: keep it out of the home directory.
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-tests-"))

from agentscope_rt.embedding import LocalTextEmbedding
from agentscope_rt.memory import Mem0LongTermMemory, VectorLongTermMemory
from agentscope_rt.message import Msg, TextBlock, ToolUseBlock
from agentscope_rt.model import FunctionChatModel
from agentscope_rt.plan import PlanNotebook
from agentscope_rt.rag import QdrantStore, SimpleKnowledge
from agentscope_rt.tool import Toolkit, ToolResponse, execute_python_code, execute_shell_command

from ..memory.test_long_term_memory_mem0 import Extractor, _config
from ..rag.test_knowledge import DIMS, CountingEmbedding, doc
from ..react._support import toolkit_of

INVALID = "InvalidArgumentsError: "


def call(name: str, **arguments: Any) -> ToolUseBlock:
    return ToolUseBlock(id=f"call_{name}", name=name, input=arguments)


async def text_of(toolkit: Toolkit, tool_call: ToolUseBlock) -> str:
    last = None
    async for chunk in toolkit.call_tool_function(tool_call):
        last = chunk
    assert last is not None
    return "".join(b.text for b in last.content if isinstance(b, TextBlock))


@pytest.fixture(scope="module")
def embedding() -> LocalTextEmbedding:
    return LocalTextEmbedding()


async def test_mem0_record_to_memory_refuses_a_user_id_from_the_model(
    embedding: LocalTextEmbedding, tmp_path: Path
) -> None:
    # An agent's own memory, scoped by agent only: mem0 would take a user_id as given.
    memory = Mem0LongTermMemory(
        agent_name="friday",
        model=FunctionChatModel(Extractor()),
        embedding_model=embedding,
        mem0_config=_config(tmp_path),
    )
    toolkit = toolkit_of(memory.record_to_memory, memory.retrieve_from_memory)
    async with memory:
        answer = await text_of(
            toolkit,
            call(
                "record_to_memory",
                thinking="",
                content=["I am allergic to nuts."],
                user_id="bob",
            ),
        )
        assert answer.startswith(INVALID)
        assert "unexpected argument(s) ['user_id']" in answer
        found = await text_of(
            toolkit, call("retrieve_from_memory", keywords=["allergy"], filters={"x": 1})
        )
        assert found.startswith(INVALID) and "['filters']" in found
        # The same call without the extra key records for this agent, as before.
        recorded = await text_of(
            toolkit, call("record_to_memory", thinking="", content=["I am allergic to nuts."])
        )
        assert recorded.startswith("Successfully recorded content to memory")
    bob = Mem0LongTermMemory(
        user_name="bob",
        model=FunctionChatModel(Extractor()),
        embedding_model=embedding,
        mem0_config=_config(tmp_path),
    )
    async with bob:
        # Nothing reached Bob's memories.
        assert await bob.retrieve(Msg("user", "Am I allergic to anything?", "user")) == ""


async def test_retrieve_knowledge_refuses_store_arguments_from_the_model() -> None:
    async with QdrantStore(":memory:", "kb", DIMS) as store:
        kb = SimpleKnowledge(store, CountingEmbedding())
        await kb.add_documents([doc("Paris is the capital of France.", 0, "public")])
        toolkit = toolkit_of(kb.retrieve_knowledge)
        answer = await text_of(
            toolkit,
            call(
                "retrieve_knowledge",
                query="capital",
                query_filter={"must": [{"key": "doc_id", "match": {"value": "secret"}}]},
            ),
        )
        assert answer.startswith(INVALID)
        assert "['query_filter']" in answer
        assert "accepted: limit, query, score_threshold" in answer
        found = await text_of(toolkit, call("retrieve_knowledge", query="capital of France"))
        assert "Paris is the capital of France." in found


async def test_vector_memory_tools_refuse_extra_arguments() -> None:
    memory = VectorLongTermMemory(embedding_model=CountingEmbedding(), user_id="ada")
    toolkit = toolkit_of(memory.record_to_memory, memory.retrieve_from_memory)
    async with memory:
        answer = await text_of(
            toolkit,
            call("record_to_memory", thinking="", content=["I like tea."], user_id="bob"),
        )
        assert answer.startswith(INVALID) and "['user_id']" in answer
        assert await memory.search(["tea"]) == []


async def test_coding_tools_refuse_extra_arguments() -> None:
    toolkit = toolkit_of(execute_shell_command, execute_python_code)
    shell = await text_of(toolkit, call("execute_shell_command", command="true", env={"A": "1"}))
    assert shell.startswith(INVALID) and "['env']" in shell
    code = await text_of(toolkit, call("execute_python_code", code="print(1)", cwd="/"))
    assert code.startswith(INVALID) and "['cwd']" in code


async def test_plan_tools_and_the_meta_tool_refuse_extra_arguments() -> None:
    notebook = PlanNotebook()
    toolkit = Toolkit()
    toolkit.create_tool_group("g", description="a group")
    toolkit.register_tool_function(toolkit.reset_equipped_tools)
    for tool in notebook.list_tools():
        toolkit.register_tool_function(tool)
    answer = await text_of(toolkit, call("view_historical_plans", storage="x"))
    assert answer.startswith(INVALID) and "['storage']" in answer
    toolkit.get_json_schemas()  # the meta tool's schema names the groups
    meta = await text_of(toolkit, call("reset_equipped_tools", g=True, other=True))
    assert meta.startswith(INVALID) and "['other']" in meta
    assert await text_of(toolkit, call("reset_equipped_tools", g=True)) == (
        "Now tool groups 'g' are activated."
    )


async def test_a_user_function_with_kwargs_gets_only_the_arguments_its_schema_names() -> None:
    received: list[dict[str, Any]] = []

    async def search(query: str, **kwargs: Any) -> ToolResponse:
        """Search.

        Args:
            query: what to search for.
        """
        received.append(kwargs)
        return ToolResponse(content=[TextBlock(text="ok")])

    toolkit = toolkit_of(search)
    answer = await text_of(toolkit, call("search", query="q", api_base="http://evil"))
    assert answer == (
        "InvalidArgumentsError: Invalid arguments for 'search': unexpected argument(s) "
        "['api_base'] (accepted: query)"
    )
    assert received == []
    assert await text_of(toolkit, call("search", query="q")) == "ok"
    # Shown in the schema (include_var_keyword=True), the parameter itself is accepted.
    shown = Toolkit()
    shown.register_tool_function(search, include_var_keyword=True)
    assert await text_of(shown, call("search", query="q", kwargs={"a": 1})) == "ok"
    assert received[-1] == {"kwargs": {"a": 1}}
    other = await text_of(shown, call("search", query="q", api_base="x"))
    assert other.startswith(INVALID) and "['api_base']" in other


async def test_an_extended_model_decides_whether_it_takes_extra_fields() -> None:
    import pydantic

    class Strict(pydantic.BaseModel):
        answer: str

    class Open(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="allow")
        answer: str

    received: list[dict[str, Any]] = []

    def finish(**kwargs: Any) -> ToolResponse:
        """Finish."""
        received.append(kwargs)
        return ToolResponse(content=[TextBlock(text="done")])

    toolkit = toolkit_of(finish)
    toolkit.set_extended_model("finish", Strict)
    refused = await text_of(toolkit, call("finish", answer="a", note="n"))
    assert refused.startswith(INVALID) and "['note']" in refused
    assert await text_of(toolkit, call("finish", answer="a")) == "done"
    toolkit.set_extended_model("finish", Open)
    assert await text_of(toolkit, call("finish", answer="a", note="n")) == "done"
    assert received == [{"answer": "a"}, {"answer": "a", "note": "n"}]
    toolkit.set_extended_model("finish", None)
    assert (await text_of(toolkit, call("finish", answer="a"))).startswith(INVALID)
