"""Shared helpers for the ReAct agent tests: scripted responses and the memory invariant."""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import Any

import anyio

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg, TextBlock, ToolUseBlock
from agentscope_rt.model import ChatModelBase, ChatResponse, ChatUsage
from agentscope_rt.tool import Toolkit


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


def make_agent(model: Any, toolkit: Toolkit | None = None, **kwargs: Any) -> ReActAgent:
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


class ModelCall:
    """What the agent sent in one model call."""

    def __init__(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
        structured_model: Any,
    ) -> None:
        self.messages = messages
        self.tools = tools
        self.tool_choice = tool_choice
        self.structured_model = structured_model

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools or []]

    def text(self) -> str:
        """Every piece of text in the prompt, joined (for "was X sent?" assertions)."""
        parts: list[str] = []
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return "\n".join(parts)


class Recorder:
    """Keeps the ModelCall of every call a model double receives."""

    def __init__(self) -> None:
        self.calls: list[ModelCall] = []

    def record(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
        structured_model: Any,
    ) -> None:
        self.calls.append(ModelCall(messages, tools, tool_choice, structured_model))


Step = ChatResponse | Callable[[ModelCall], ChatResponse | Awaitable[ChatResponse]]


class ScriptModel(ChatModelBase):
    """Replays *steps* in order: a ChatResponse, or a function of the ModelCall returning one
    (sync or async). With *stream*, each response arrives as cumulative chunks, *chunk_delay*
    seconds apart. Every call is kept in ``calls``."""

    def __init__(self, steps: Sequence[Step], stream: bool = False, chunk_delay: float = 0.0):
        super().__init__("script", stream)
        self.steps = list(steps)
        self.chunk_delay = chunk_delay
        self.recorder = Recorder()

    @property
    def calls(self) -> list[ModelCall]:
        return self.recorder.calls

    async def __call__(  # type: ignore[override]
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | None = None,
        structured_model: Any = None,
        **kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        self.recorder.record(messages, tools, tool_choice, structured_model)
        index = len(self.calls) - 1
        if index >= len(self.steps):
            raise AssertionError(
                f"the model was called {index + 1} times; script has {len(self.steps)}"
            )
        step = self.steps[index]
        if isinstance(step, ChatResponse):
            result = step
        else:
            produced = step(self.calls[-1])
            result = await produced if inspect.isawaitable(produced) else produced
        result = ChatResponse(
            content=[b.copy() for b in result.content],
            usage=result.usage,
            metadata=result.metadata,
        )
        if not self.stream:
            return result
        return self._chunks(result)

    async def _chunks(self, final: ChatResponse) -> AsyncGenerator[ChatResponse, None]:
        content: list[Any] = []
        for block in final.content:
            if isinstance(block, TextBlock) and len(block.text) > 1:
                half = len(block.text) // 2
                yield ChatResponse(
                    content=[*content, TextBlock(text=block.text[:half])],
                    id=final.id,
                    stream=True,
                    is_last=False,
                )
                await anyio.sleep(self.chunk_delay)
            content.append(block)
            yield ChatResponse(content=list(content), id=final.id, stream=True, is_last=False)
            await anyio.sleep(self.chunk_delay)
        yield ChatResponse(
            content=list(content),
            id=final.id,
            stream=True,
            is_last=True,
            usage=final.usage,
            metadata=final.metadata,
        )
