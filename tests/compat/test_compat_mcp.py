"""Port of AgentScope's MCP example (``examples/agent_with_mcp``).

MCP tools reached over SSE and streamable HTTP with ``HttpStatelessClient`` and over stdio with
a stateful client, registered with ``await toolkit.register_mcp_client(...)``, called by a ReAct
agent with ``parallel_tool_calls=True`` and a structured ``NumberResult``.
"""

from __future__ import annotations

import json
import sys

from pydantic import BaseModel, Field

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import DashScopeChatFormatter
from agentscope_rt.mcp import HttpStatelessClient, StdIOStatefulClient
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg
from agentscope_rt.model import reply, tool_call
from agentscope_rt.tool import Toolkit

from ..mcp.conftest import SERVER_SCRIPT, HttpServer
from ._support import cloud_model


class NumberResult(BaseModel):
    """A simple number result model for structured output."""

    result: int = Field(description="The result of the calculation")


async def main(sse_url: str, http_url: str) -> tuple[int, str, ReActAgent]:
    """The example's main(): the number of tools, what it prints, and the agent."""
    add_tool_stateless_client = HttpStatelessClient(
        name="add_tool",
        transport="sse",
        url=sse_url,
    )
    echo_tool_stateless_client = HttpStatelessClient(
        name="echo_tool",
        transport="streamable_http",
        url=http_url,
    )
    stdio_client = StdIOStatefulClient(
        name="stdio_tools",
        command=sys.executable,
        args=[str(SERVER_SCRIPT), "stdio"],
    )

    toolkit = Toolkit()
    await toolkit.register_mcp_client(add_tool_stateless_client, enable_funcs=["add"])
    await toolkit.register_mcp_client(echo_tool_stateless_client, enable_funcs=["echo"])
    await stdio_client.connect()
    try:
        await toolkit.register_mcp_client(stdio_client, enable_funcs=["increment"])
        n_tools = len(toolkit.get_json_schemas())

        agent = ReActAgent(
            name="Jarvis",
            sys_prompt="You're a helpful assistant named Jarvis.",
            model=cloud_model(
                reply(
                    tool_call("add", {"a": 2345, "b": 3456}),
                    tool_call("echo", {"text": "5801", "repeat": 1}),
                    tool_call("increment", {}),
                ),
                reply("The sum is 5801.", tool_call("generate_response", {"result": 5801})),
                stream=False,
            ),
            memory=InMemoryMemory(),
            formatter=DashScopeChatFormatter(),
            toolkit=toolkit,
            parallel_tool_calls=True,
        )
        agent.set_console_output_enabled(False)
        res = await agent(
            Msg("user", "Calculate 2345 plus 3456, what is the final outcome?", "user"),
            structured_model=NumberResult,
        )
    finally:
        await stdio_client.close()
    return n_tools, f"Structured Output:\n```\n{json.dumps(res.metadata, indent=4)}\n```", agent


async def test_the_mcp_example_calls_tools_over_three_transports() -> None:
    sse, http = HttpServer("sse"), HttpServer("streamable-http")
    try:
        n_tools, printed, agent = await main(sse.url, http.url)
    finally:
        sse.stop()
        http.stop()

    assert n_tools == 3
    assert printed == 'Structured Output:\n```\n{\n    "result": 5801\n}\n```'
    results = {
        block["name"]: block["output"]
        for msg in await agent.memory.get_memory()
        for block in msg.get_content_blocks("tool_result")
    }
    assert set(results) == {"add", "echo", "increment", "generate_response"}
    assert results["add"] == [{"type": "text", "text": "5801"}]
    assert results["echo"] == [{"type": "text", "text": "5801"}]
    assert results["increment"] == [{"type": "text", "text": "1"}]
