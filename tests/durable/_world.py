"""A small multi-agent world for the durable-run tests: ReAct agents whose model answers are a
pure function of the prompt, a tool with a counted side effect, and a transcript that leaves
out what changes between executions by design (ids, timestamps)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock, ToolUseBlock
from agentscope_rt.model import ChatResponse, FunctionChatModel
from agentscope_rt.tool import Toolkit, ToolResponse


class World:
    """Agents, what their models were asked and what their tool did."""

    def __init__(self, *, stream: bool = False, latency: Callable[[str], float] | None = None):
        self.paid: list[str] = []
        self.effects: list[str] = []
        self.stream = stream
        self.latency = latency
        self.tool_gate: anyio.Event | None = None
        self.tool_entered: anyio.Event | None = None

    def model(self, name: str) -> FunctionChatModel:
        async def answer(messages: list[dict[str, Any]], tools: Any) -> ChatResponse:
            self.paid.append(name)
            if self.latency is not None:
                await anyio.sleep(self.latency(name))
            size = len(messages)
            if messages[-1].get("role") != "tool":
                note = {"text": f"{name}{size}"}
                call = ToolUseBlock(id=f"{name}-{size}", name="note", input=note)
                return ChatResponse([TextBlock(f"{name} thinks"), call])
            return ChatResponse([TextBlock(f"{name} says {size}")])

        return FunctionChatModel(answer, stream=self.stream)

    def toolkit(self) -> Toolkit:
        async def note(text: str) -> ToolResponse:
            """Note something down.

            Args:
                text: what to note
            """
            if self.tool_entered is not None:
                self.tool_entered.set()
            if self.tool_gate is not None:
                await self.tool_gate.wait()
            self.effects.append(text)
            return ToolResponse(content=[TextBlock(f"noted {text}")])

        toolkit = Toolkit()
        toolkit.register_tool_function(note)
        return toolkit

    def agent(self, name: str, sys_prompt: str = "Play along.") -> ReActAgent:
        agent = ReActAgent(
            name=name,
            sys_prompt=sys_prompt,
            model=self.model(name),
            formatter=OpenAIChatFormatter(),
            toolkit=self.toolkit(),
        )
        agent.set_console_output_enabled(False)
        return agent


def plain(msg: Msg) -> dict[str, Any]:
    data = msg.to_dict()
    for volatile in ("id", "timestamp", "invocation_id"):
        data.pop(volatile, None)
    return data


async def transcript(*agents: ReActAgent) -> dict[str, list[dict[str, Any]]]:
    return {agent.name: [plain(m) for m in await agent.memory.get_memory()] for agent in agents}
