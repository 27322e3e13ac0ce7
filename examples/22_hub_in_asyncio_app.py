"""A MsgHub inside an existing asyncio application: an async request handler runs a panel.

The application is plain asyncio — ``asyncio.run``, ``asyncio.start_server`` on 127.0.0.1,
``asyncio.gather`` for its own clients. agentscope-rt needs no adapter: the handler just opens
``async with MsgHub(...)`` (anyio detects the running asyncio loop). The example also shows
that asyncio's own cancellation (``asyncio.wait_for`` timing out a slow request) tears the
hub down completely: no task of it is left behind.

Run with ``python examples/22_hub_in_asyncio_app.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agentscope_rt.agent import AgentBase
from agentscope_rt.message import Msg
from agentscope_rt.pipeline import MsgHub


class Panelist(AgentBase):
    """Answers the topic, citing how many colleagues it has heard so far."""

    def __init__(self, name: str, think_seconds: float = 0.0) -> None:
        super().__init__()
        self.name = name
        self.think_seconds = think_seconds
        self.heard: list[Msg] = []
        self.set_console_output_enabled(False)

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        await asyncio.sleep(self.think_seconds)  # asyncio code inside an agent works too
        topic = next((m.content for m in self.heard if m.name == "host"), "?")
        others = sorted({m.name for m in self.heard if m.name != "host"})
        return Msg(self.name, f"on {topic!r}, after hearing {others or 'nobody'}", "assistant")

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        if isinstance(msg, Msg):
            self.heard.append(msg)


async def run_panel(topic: str, think_seconds: float) -> list[str]:
    panel = [Panelist(name, think_seconds) for name in ("ana", "ben", "cho")]
    transcript: list[str] = []
    async with MsgHub(panel, announcement=Msg("host", topic, "system")):
        for agent in panel:
            reply = await agent()
            transcript.append(f"{reply.name}: {reply.content}")
    return transcript


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The application's request handler: one line in (topic, think time), a transcript out."""
    topic, _, seconds = (await reader.readline()).decode().strip().partition("|")
    try:
        lines = await asyncio.wait_for(run_panel(topic, float(seconds or 0)), timeout=0.5)
    except TimeoutError:
        lines = ["(the panel took too long and was cancelled)"]
    writer.write(("\n".join(lines) + "\n\n").encode())
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
        for answer in answers:
            print(answer, end="")
        await asyncio.sleep(0.01)  # let the connection handlers finish closing
        after = len(asyncio.all_tasks())
    print(f"asyncio tasks before the requests: {before}, after: {after}")
    assert after == before, "a cancelled hub left a task behind"


if __name__ == "__main__":
    asyncio.run(main())
