"""Shared helpers for the ReAct agent tests: scripted responses and the memory invariant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import anyio.lowlevel

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import FormatterBase, OpenAIChatFormatter
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg, TextBlock, ToolUseBlock
from agentscope_rt.model import ChatResponse, ChatUsage, ModelCall
from agentscope_rt.rag import DocMetadata, Document, KnowledgeBase
from agentscope_rt.tool import Toolkit, ToolResponse


def call(tool_name: str, call_id: str, /, **arguments: Any) -> ToolUseBlock:
    """A tool-use block."""
    return ToolUseBlock(id=call_id, name=tool_name, input=arguments)


def text(value: str) -> TextBlock:
    return TextBlock(text=value)


def response(*blocks: Any, usage: tuple[int, int] | None = (10, 5)) -> ChatResponse:
    """A model response holding *blocks* (and a usage, so the reply's total can be checked)."""
    return ChatResponse(
        content=list(blocks),
        usage=ChatUsage(input_tokens=usage[0], output_tokens=usage[1], time=0.001)
        if usage
        else None,
    )


def user(content: str) -> Msg:
    return Msg("user", content, "user")


def make_agent(
    model: Any,
    toolkit: Toolkit | None = None,
    *,
    sys_prompt: str = "You are a helpful assistant.",
    formatter: FormatterBase | None = None,
    **kwargs: Any,
) -> ReActAgent:
    """A ReAct agent named Friday that prints nothing; *formatter* defaults to OpenAI's chat
    formatter, *kwargs* go to :class:`ReActAgent` as they are."""
    agent = ReActAgent(
        name="Friday",
        sys_prompt=sys_prompt,
        model=model,
        formatter=formatter or OpenAIChatFormatter(),
        toolkit=toolkit,
        **kwargs,
    )
    agent.set_console_output_enabled(False)
    return agent


def tool_pair_problems(msgs: Sequence[Msg]) -> list[str]:
    """What breaks the invariant "every tool_use has exactly one tool_result, after it" (and
    no tool_result without its tool_use before it); empty when the history is consistent."""
    problems: list[str] = []
    seen_uses: dict[str, int] = {}
    results: dict[str, int] = {}
    for index, msg in enumerate(msgs):
        for block in msg.get_content_blocks():
            if block.type == "tool_use":
                if block.id in seen_uses:
                    problems.append(f"tool_use {block.id} appears twice")
                seen_uses[block.id] = index
            elif block.type == "tool_result":
                if block.id not in seen_uses:
                    problems.append(f"tool_result {block.id} at {index} has no tool_use before it")
                results[block.id] = results.get(block.id, 0) + 1
    for use_id in seen_uses:
        count = results.get(use_id, 0)
        if count != 1:
            problems.append(f"tool_use {use_id} has {count} tool_results")
    return problems


async def history(memory: InMemoryMemory | Any) -> list[Msg]:
    return list(await memory.get_memory(prepend_summary=False))


def texts_of(msg: Msg) -> str:
    """All text of *msg*, tool result outputs included."""
    parts: list[str] = []
    for block in msg.get_content_blocks():
        if block.type == "text":
            parts.append(block.text)
        elif block.type == "tool_result":
            output = block.output
            if isinstance(output, str):
                parts.append(output)
            else:
                parts.extend(b.text for b in output if b.type == "text")
    return "\n".join(parts)


def prompt_text(model_call: ModelCall) -> str:
    """Every piece of text the model was sent in one call, joined."""
    parts: list[str] = []
    for message in model_call.messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n".join(parts)


class CheckpointingMemory(InMemoryMemory):
    """An in-memory store that yields to the event loop on every write, like a storage doing
    I/O would (so cancellation can land in the middle of recording)."""

    async def add(
        self,
        memories: Msg | list[Msg] | None,
        marks: str | list[str] | None = None,
        allow_duplicates: bool = False,
        **kwargs: Any,
    ) -> None:
        await anyio.lowlevel.checkpoint()
        await super().add(memories, marks, allow_duplicates, **kwargs)


async def fast(tag: str) -> ToolResponse:
    """Answer at once.

    Args:
        tag: a label.
    """
    return ToolResponse(content=[TextBlock(text=f"fast {tag}")])


async def slow(tag: str) -> ToolResponse:
    """Take a long time.

    Args:
        tag: a label.
    """
    await anyio.sleep(30)
    return ToolResponse(content=[TextBlock(text=f"slow {tag}")])


class FixedKnowledge(KnowledgeBase):
    """A knowledge base returning its (text, score) pairs for every query, recording the
    queries; added documents join the pairs."""

    def __init__(self, docs: Sequence[Sequence[Any]]) -> None:
        super().__init__()
        self.docs = [(str(t), float(s)) for t, s in docs]
        self.queries: list[str] = []

    async def retrieve(
        self, query: str, limit: int = 5, score_threshold: float | None = None, **kwargs: Any
    ) -> list[Document]:
        self.queries.append(query)
        return [
            Document(
                DocMetadata(
                    TextBlock(text=t), doc_id="doc", chunk_id=i, total_chunks=len(self.docs)
                ),
                score=s,
            )
            for i, (t, s) in enumerate(self.docs)
        ]

    async def add_documents(self, documents: list[Document], **kwargs: Any) -> None:
        self.docs.extend((d.metadata.content["text"], d.score or 0.0) for d in documents)


def add(a: int, b: int) -> ToolResponse:
    """Add two integers.

    Args:
        a: the first number.
        b: the second number.
    """
    return ToolResponse(content=[TextBlock(text=str(a + b))])


def toolkit_of(*funcs: Any) -> Toolkit:
    """A toolkit with each of *funcs* registered."""
    toolkit = Toolkit()
    for func in funcs:
        toolkit.register_tool_function(func)
    return toolkit


def openai_request_problems(messages: Sequence[dict[str, Any]]) -> list[str]:
    """What OpenAI's chat completions API rejects in *messages* about tool calls: an assistant
    message with ``tool_calls`` must be followed by one ``tool`` message per call id (and a
    ``tool`` message must answer a call of the assistant message before it)."""
    problems: list[str] = []
    open_calls: list[str] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                problems.append(f"messages[{index}]: tool message for unknown call {call_id!r}")
            else:
                open_calls.remove(call_id)
            continue
        if open_calls:
            problems.append(f"messages[{index}]: calls {open_calls} have no tool message")
            open_calls = []
        if role == "assistant":
            for tool_call in message.get("tool_calls") or []:
                open_calls.append(tool_call["id"])
                arguments = tool_call["function"]["arguments"]
                assert isinstance(arguments, str)
    if open_calls:
        problems.append(f"end: calls {open_calls} have no tool message")
    return problems
