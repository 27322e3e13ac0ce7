"""Toolkit tour: schemas from docstrings, streaming, failures as readable results, a timeout,
an interrupt, tool groups, and a confined file tool. Runs offline on asyncio or trio.

The toolkit is used directly here, as an agent's reasoning loop would call it.

Run: ``python examples/30_toolkit.py`` (asyncio) or ``python examples/30_toolkit.py trio``.

What to look for: the JSON schema built from ``get_weather``'s docstring; each call's result,
where failures (a wrong argument type, an unknown tool, a tool of an inactive group, a command
that overran its timeout, a path outside the workspace) are plain sentences the model can read,
not exceptions; the streamed count cut short by the interrupt, marked ``[interrupted]``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import AsyncGenerator
from typing import Literal

import anyio

from agentscope_rt.message import TextBlock, ToolUseBlock
from agentscope_rt.tool import TextFileTools, Toolkit, ToolResponse, execute_shell_command


def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> ToolResponse:
    """Get the current weather of a city.

    Args:
        city: The city name.
        unit: The temperature unit.
    """
    return ToolResponse(content=[TextBlock(text=f"Sunny in {city}, 21 degrees {unit}.")])


async def count_to(n: int) -> AsyncGenerator[ToolResponse, None]:
    """Count slowly, streaming each step.

    Args:
        n: Where to stop.
    """
    blocks: list[TextBlock] = []
    for i in range(1, n + 1):
        await anyio.sleep(0.05)
        blocks.append(TextBlock(text=f"{i} "))
        yield ToolResponse(content=list(blocks), stream=True, is_last=i == n)


async def show(toolkit: Toolkit, name: str, **arguments: object) -> None:
    tool_call = ToolUseBlock(id=f"call_{name}", name=name, input=dict(arguments))
    async for chunk in toolkit.call_tool_function(tool_call):
        flag = " [interrupted]" if chunk.is_interrupted else ""
        print(f"  {name}: {chunk.get_text()!r}{flag}")


async def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        toolkit = Toolkit(timeout=2)
        toolkit.register_tool_function(get_weather)
        toolkit.register_tool_function(count_to)
        toolkit.register_tool_function(execute_shell_command, timeout=0.5)
        toolkit.create_tool_group("files", "Read and write files in the workspace")
        for tool in TextFileTools(workdir).tools():
            toolkit.register_tool_function(tool, group_name="files")
        toolkit.register_tool_function(toolkit.reset_equipped_tools)

        print("Schema shown to the model for get_weather:")
        print(json.dumps(toolkit.get_json_schemas()[0], indent=2))

        print("\nCalls (every failure is a result the model can read):")
        await show(toolkit, "get_weather", city="Paris")
        await show(toolkit, "count_to", n=3)
        await show(toolkit, "get_weather", city=42)
        await show(toolkit, "get_wether", city="Paris")
        await show(toolkit, "write_text_file", file_path="notes.txt", content="hi")
        await show(toolkit, "execute_shell_command", command="echo start; sleep 5")

        print("\nActivating the 'files' group through the meta tool:")
        await show(toolkit, "reset_equipped_tools", files=True)
        await show(toolkit, "write_text_file", file_path="notes.txt", content="hello\n")
        await show(toolkit, "view_text_file", file_path="../../etc/passwd")

        print("\nInterrupting a streaming call after 0.12 s:")
        with anyio.move_on_after(0.12):
            await show(toolkit, "count_to", n=10)
        print(f"\nState: {toolkit.state_dict()}")


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
