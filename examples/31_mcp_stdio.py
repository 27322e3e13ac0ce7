"""MCP over stdio: start a local MCP server as a subprocess, list its tools, call them
directly and through a Toolkit, and show that closing the client ends the server process.

Offline. Run: ``python examples/31_mcp_stdio.py`` (asyncio) or
``python examples/31_mcp_stdio.py trio``.

What to look for: the server's tools with the schemas it declared, their results called
directly and through a ``Toolkit`` (same text both ways), and the server process gone once the
client is closed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio

from agentscope_rt.mcp import StdIOStatefulClient
from agentscope_rt.message import ImageBlock, ToolUseBlock
from agentscope_rt.tool import Toolkit, ToolResponse

SERVER = Path(__file__).with_name("_mcp_server.py")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def call(toolkit: Toolkit, name: str, **arguments: object) -> ToolResponse:
    block = ToolUseBlock(id=f"call_{name}", name=name, input=dict(arguments))
    chunks = [chunk async for chunk in toolkit.call_tool_function(block)]
    return chunks[-1]


async def main() -> None:
    client = StdIOStatefulClient("notes", sys.executable, [str(SERVER)])
    async with client:
        tools = await client.list_tools()
        print("server tools:", ", ".join(t.name for t in tools))

        # A tool called directly, as an async function returning a ToolResponse.
        add_note = await client.get_callable_function("add_note")
        print("schema:", add_note.json_schema["function"]["parameters"]["properties"])
        print("direct call:", (await add_note(text="buy milk")).get_text())  # type: ignore[union-attr]

        # The same server's tools in a Toolkit, with function-level control.
        toolkit = Toolkit()
        await toolkit.register_mcp_client(client, disable_funcs=["server_pid"])
        print("toolkit offers:", sorted(s["function"]["name"] for s in toolkit.get_json_schemas()))
        print("toolkit call:", (await call(toolkit, "add_note", text="call mum")).get_text())
        print("notes so far:\n" + (await call(toolkit, "list_notes")).get_text())
        print("tool error:", (await call(toolkit, "add_note", text="  ")).get_text())
        badge = await call(toolkit, "badge")
        image = next(b for b in badge.content if isinstance(b, ImageBlock))
        print("image result:", image.source.media_type)  # type: ignore[union-attr]

        pid = int((await client.call_tool("server_pid")).content[0].text)  # type: ignore[union-attr]
        print(f"server process {pid} alive while connected: {alive(pid)}")
    print(f"server process {pid} alive after close: {alive(pid)}")


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
