"""A2A both ways: two processes, one serving a ReAct agent with A2AServer, one calling it with
A2AAgent (protocol 1.0, then 0.3 as an AgentScope 1.x client would), and an interrupted call
that cancels the remote task.

Offline (the served agent's model is a FunctionChatModel double that calls an ``add`` tool);
run with ``python examples/90_a2a.py`` (add ``trio`` to run both processes on trio). It starts
the server process itself and stops it at the end.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import anyio
from anyio.streams.text import TextReceiveStream

from agentscope_rt.a2a import A2AAgent, A2AServer, WellKnownAgentCardResolver, card_to_dict
from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import FunctionChatModel, tool_call
from agentscope_rt.tool import Toolkit, ToolResponse

# -- the served side (a separate process) --------------------------------------------------------


async def add(a: int, b: int) -> ToolResponse:
    """Add two numbers; a negative one makes it very slow (to show cancellation).

    Args:
        a: the first number.
        b: the second number.
    """
    if a < 0 or b < 0:
        await anyio.sleep(3600)
    return ToolResponse(content=[TextBlock(text=str(a + b))])


def think(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Any:
    """The served agent's "model": call ``add`` on the two numbers asked for, then answer."""
    last = messages[-1]
    if last["role"] == "tool":
        return f"The sum is {last['content']}."
    numbers = [int(n) for n in re.findall(r"-?\d+", str(last["content"]))][-2:]
    if len(numbers) < 2:
        return "Give me two numbers to add."
    return [tool_call("add", {"a": numbers[0], "b": numbers[1]})]


async def serve() -> None:
    toolkit = Toolkit()
    toolkit.register_tool_function(add)
    agent = ReActAgent(
        name="Adder",
        sys_prompt="You add numbers with the add tool.",
        model=FunctionChatModel(think),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
    )
    agent.set_console_output_enabled(False)
    server = A2AServer(agent, description="adds two numbers")
    async with anyio.create_task_group() as group:
        url = await group.start(server.serve)
        print(url, flush=True)  # the caller reads the server's URL from this line


# -- the calling side ---------------------------------------------------------------------------


async def first_line(process: anyio.abc.Process) -> str:
    assert process.stdout is not None
    text = ""
    async for chunk in TextReceiveStream(process.stdout):
        text += chunk
        if "\n" in text:
            return text.split("\n", 1)[0].strip()
    raise RuntimeError("the server process exited before printing its URL")


async def main(backend: str) -> None:
    command = [sys.executable, __file__, "--serve", backend]
    async with await anyio.open_process(command, stdout=subprocess.PIPE) as process:
        try:
            with anyio.fail_after(60):
                url = await first_line(process)
                await call(url)
        finally:
            process.terminate()


async def call(url: str) -> None:
    card = await WellKnownAgentCardResolver(url).get_agent_card()
    versions = [i.protocol_version for i in card.supported_interfaces]
    print(f"resolved {card.name!r} at {url}: protocol versions {versions}")

    adder = A2AAgent(card)
    reply = await adder(Msg("user", "What is 2 + 3?", "user"))
    print("protocol 1.0 reply:", reply.get_text_content())

    # An AgentScope 1.x program holds protocol 0.3 cards: the same server answers in 0.3.
    legacy_card = card_to_dict(card)
    del legacy_card["supportedInterfaces"]
    legacy = A2AAgent(legacy_card)
    reply = await legacy(Msg("user", "And 40 + 2?", "user"))
    print("protocol 0.3 reply:", reply.get_text_content())

    # Interrupting a call cancels the remote task (the served agent's reply is interrupted).
    async with anyio.create_task_group() as group:

        async def slow() -> None:
            answer = await adder(Msg("user", "What is -1 + -1?", "user"))
            print("interrupted call answers:", answer.get_text_content(), answer.metadata)

        group.start_soon(slow)
        await anyio.sleep(1)
        adder.interrupt()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        anyio.run(serve, backend=sys.argv[2])
    else:
        chosen = sys.argv[1] if len(sys.argv) > 1 else "asyncio"
        anyio.run(main, chosen, backend=chosen)
