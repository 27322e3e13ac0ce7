"""An agent whose memory is a SQLite file: a conversation started in one run, continued in another.

Each run is a fresh interpreter that builds the agent with ``AsyncSQLAlchemyMemory`` on the same
database file, user and session; nothing is saved or loaded by hand, because every message the
agent adds to its memory is a row in the file (AgentScope's ``message`` table) the moment it is
added. The first run goes on asyncio, the second on trio: the memory runs SQLAlchemy's
synchronous engine in worker threads, so it works on both. The model is a small offline
stand-in that answers from what the conversation holds, so the second run shows that the
memory really came back.

Run: ``python examples/61_persistent_memory.py`` (needs the ``sql`` extra: SQLAlchemy). It
picks the backends itself: the first run on asyncio, the second on trio.

What to look for: run 2 starts with two messages already in the memory and ``Friday:`` answers
"Your name is Alice.": the conversation came back from the file, across the two backends.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.memory import AsyncSQLAlchemyMemory
from agentscope_rt.message import Msg
from agentscope_rt.model import FunctionChatModel


def remembering_model(messages: list[dict[str, Any]], tools: Any) -> str:
    """Answers from the conversation: it knows the user's name once it has been told."""
    said = " ".join(str(m.get("content")) for m in messages if m["role"] == "user")
    if "What is my name" in str(messages[-1]["content"]):
        name = said.split("My name is ", 1)[1].split(".")[0] if "My name is " in said else None
        return f"Your name is {name}." if name else "I don't know your name yet."
    return "Nice to meet you! I will remember that."


async def run(db: str, text: str) -> None:
    """One run: an agent on the memory file, one message from the user."""
    async with AsyncSQLAlchemyMemory(
        f"sqlite:///{db}", session_id="chat-1", user_id="alice"
    ) as memory:
        print(f"  memory holds {await memory.size()} messages at the start")
        agent = ReActAgent(
            name="Friday",
            sys_prompt="You are a helpful assistant named Friday.",
            model=FunctionChatModel(remembering_model),
            formatter=OpenAIChatFormatter(),
            memory=memory,
        )
        print(f"user: {text}")
        await agent(Msg("user", text, "user"))
        print(f"  memory holds {await memory.size()} messages at the end")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "memory.db")
        runs = [("asyncio", "My name is Alice."), ("trio", "What is my name?")]
        for number, (backend, text) in enumerate(runs, start=1):
            print(f"run {number} ({backend}):")
            # A fresh interpreter each time: nothing survives but the database file.
            subprocess.run([sys.executable, __file__, "--run", db, text, backend], check=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run"]:
        anyio.run(run, sys.argv[2], sys.argv[3], backend=sys.argv[4])
    else:
        main()
