"""A MsgHub inside an existing asyncio application: an async request handler runs a panel.

The application is plain asyncio — ``asyncio.run``, ``asyncio.start_server`` on 127.0.0.1,
``asyncio.gather`` for its own clients. agentscope-rt needs no adapter: the handler just opens
``async with MsgHub(...)`` of ReAct agents (anyio detects the running asyncio loop). Their
models are ``FunctionChatModel`` doubles written with asyncio code (``asyncio.sleep``) that
answer from what the agent has heard in the hub. The example also shows that asyncio's own
cancellation (``asyncio.wait_for`` timing out a slow request) tears the hub down completely: no
task of it is left behind.

Run: ``python examples/22_hub_in_asyncio_app.py`` (asyncio only: the point is an asyncio
application; ``23_hub_in_trio_nursery.py`` is its trio counterpart).

What to look for: the panelists of the two quick requests print their replies on the server's
console as they speak (the two panels interleave: they run at the same time), each citing the
colleagues it heard before it spoke. The clients then print one line per request; the slow
request says its panel was cancelled, and its panelists printed nothing. The last line shows
the same number of asyncio tasks before and after.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIMultiAgentFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import FunctionChatModel
from agentscope_rt.pipeline import MsgHub

NAMES = ("ana", "ben", "cho")


def panelist(name: str, think_seconds: float) -> ReActAgent:
    """A ReAct agent that answers the topic, citing the colleagues it has heard so far."""

    async def think(messages: list[dict[str, Any]], tools: Any) -> str:
        await asyncio.sleep(think_seconds)  # asyncio code inside a model works too
        transcript = " ".join(str(m.get("content", "")) for m in messages)
        heard = sorted(other for other in NAMES if other != name and f"{other}:" in transcript)
        topic = transcript.split("Topic: ", 1)[-1].split(".", 1)[0]
        return f"on {topic}: after hearing {', '.join(heard) or 'nobody'}, I agree."

    return ReActAgent(
        name=name,
        sys_prompt=f"You are {name}, a panelist.",
        model=FunctionChatModel(think),
        formatter=OpenAIMultiAgentFormatter(),
    )


async def run_panel(topic: str, think_seconds: float) -> int:
    """One panel on *topic*; the number of replies it gave."""
    panel = [panelist(name, think_seconds) for name in NAMES]
    async with MsgHub(panel, announcement=Msg("host", f"Topic: {topic}.", "system")):
        for agent in panel:
            await agent()
    return len(panel)


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The application's request handler: one line in (topic, think time), a transcript out."""
    topic, _, seconds = (await reader.readline()).decode().strip().partition("|")
    try:
        replies = await asyncio.wait_for(run_panel(topic, float(seconds or 0)), timeout=0.5)
        line = f"panel on {topic!r}: {replies} replies"
    except TimeoutError:
        line = f"panel on {topic!r}: took too long and was cancelled"
    writer.write((line + "\n").encode())
    await writer.drain()
    writer.close()
    await writer.wait_closed()


async def ask(port: int, topic: str, think_seconds: float = 0.0) -> str:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{topic}|{think_seconds}\n".encode())
    await writer.drain()
    answer = (await reader.read()).decode()
    writer.close()
    await writer.wait_closed()
    return answer


async def main() -> None:
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        before = len(asyncio.all_tasks())
        answers = await asyncio.gather(
            ask(port, "remote work"),
            ask(port, "four-day weeks"),
            ask(port, "a very slow topic", think_seconds=5.0),
        )
        print("-- the clients' answers")
        for answer in answers:
            print(answer, end="")
        await asyncio.sleep(0.01)  # let the connection handlers finish closing
        after = len(asyncio.all_tasks())
    print(f"asyncio tasks before the requests: {before}, after: {after}")
    assert after == before, "a cancelled hub left a task behind"


if __name__ == "__main__":
    asyncio.run(main())
