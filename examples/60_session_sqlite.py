"""A chat saved in one process and continued in another, with SQLiteSession.

The first process talks to the agent and saves the agent (its memory, toolkit state, name and
system prompt) into ``sessions.db`` under a user and a session id; the second process is a new
interpreter that builds the same agent, loads the session, and goes on where the first left
off. The model is a small offline stand-in that answers from what the conversation holds, so
the continuation shows that the memory really came back.

Run: ``python examples/60_session_sqlite.py`` (asyncio) or
``python examples/60_session_sqlite.py trio``.

What to look for: two processes. In the second, ``Friday:`` answers "Your name is Alice." and
the memory holds four messages: the first process's turn came back from ``sessions.db``.
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
from agentscope_rt.message import Msg
from agentscope_rt.model import FunctionChatModel
from agentscope_rt.session import SQLiteSession


def remembering_model(messages: list[dict[str, Any]], tools: Any) -> str:
    """Answers from the conversation: it knows the user's name once it has been told."""
    said = " ".join(str(m.get("content")) for m in messages if m["role"] == "user")
    if "What is my name" in str(messages[-1]["content"]):
        name = said.split("My name is ", 1)[1].split(".")[0] if "My name is " in said else None
        return f"Your name is {name}." if name else "I don't know your name yet."
    return "Nice to meet you! I will remember that."


def build_agent() -> ReActAgent:
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are a helpful assistant named Friday.",
        model=FunctionChatModel(remembering_model),
        formatter=OpenAIChatFormatter(),
    )
    return agent


async def turn(db: str, text: str) -> None:
    """One process's part: load the session, say *text*, save the session."""
    session = SQLiteSession(db)
    agent = build_agent()
    await session.load_session_state("chat-1", user_id="alice", friday=agent)
    print(f"user: {text}")
    await agent(Msg("user", text, "user"))
    await session.save_session_state("chat-1", user_id="alice", friday=agent)
    print(f"  (memory now holds {await agent.memory.size()} messages)")


def main() -> None:
    backend = "trio" if "trio" in sys.argv[1:] else "asyncio"
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "sessions.db")
        for number, text in enumerate(["My name is Alice.", "What is my name?"], start=1):
            print(f"process {number}:")
            # A fresh interpreter each time: nothing survives but the database file.
            subprocess.run([sys.executable, __file__, "--turn", db, text, backend], check=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--turn"]:
        anyio.run(turn, sys.argv[2], sys.argv[3], backend=sys.argv[4])
    else:
        main()
