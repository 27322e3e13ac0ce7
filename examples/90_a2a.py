"""A2A both ways: two processes, one serving a ReAct agent with A2AServer, one calling it with
A2AAgent (protocol 1.0, then 0.3 as an AgentScope 1.x client would), and an interrupted call
that cancels the remote task.

Offline (the served agent's model is a FunctionChatModel double that calls an ``add`` tool).
It starts the server process itself and stops it at the end.

Run: ``python examples/90_a2a.py`` (asyncio) or
``python examples/90_a2a.py trio`` (``trio`` runs both
processes on trio).

What to look for: the card's two protocol versions; for each call the served agent's console
lines, relayed with a ``[server]`` prefix (its ``add`` call, the result, the answer), and the
calling ``A2AAgent``'s own ``Adder:`` lines; the sums 5 and 42; the interrupted call's tool
result saying it was interrupted, on the server too, and its answer marked
``_is_interrupted``.
"""

from __future__ import annotations

import os
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
    server = A2AServer(agent, description="adds two numbers")
    async with anyio.create_task_group() as group:
        url = await group.start(server.serve)
        print(url, flush=True)  # the caller reads the server's URL from this line


# -- the calling side ---------------------------------------------------------------------------


async def relay(process: anyio.abc.Process, url: list[str], ready: anyio.Event) -> None:
    """Read the server's output: its first line is its URL, the rest (what the served agent
    prints on its console) is shown here, indented."""
    assert process.stdout is not None
    buffer = ""
    async for chunk in TextReceiveStream(process.stdout):
        buffer += chunk
        *lines, buffer = buffer.split("\n")
        for line in lines:
            if not ready.is_set():
                url.append(line.strip())
                ready.set()
            else:
                print(f"    [server] {line}")
    ready.set()  # the server ended (maybe before printing its URL)


async def main(backend: str) -> None:
    command = [sys.executable, __file__, "--serve", backend]
    # Unbuffered, so that the served agent's console lines arrive as it prints them.
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    async with await anyio.open_process(command, stdout=subprocess.PIPE, env=env) as process:
        url: list[str] = []
        ready = anyio.Event()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(relay, process, url, ready)
                with anyio.fail_after(60):
                    await ready.wait()
                    if not url:
                        raise RuntimeError("the server process exited before printing its URL")
                    await call(url[0])
                process.terminate()
        finally:
            if process.returncode is None:
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
