"""An assistant that remembers a user's preferences from one session to the next.

Two sessions, one after the other, each with a brand-new agent and an empty short-term memory.
What carries over is the long-term memory: a ``VectorLongTermMemory`` whose facts live in a
Qdrant folder. In the first session the user states preferences; at the end of each reply the
agent records the user's words there (``static_control``). In the second session the agent
retrieves the facts most similar to the new question before answering, and the model sees them
in a ``<long_term_memory>`` message. The first session runs on asyncio, the second on trio.

Everything is offline: the facts are embedded by the bundled all-MiniLM-L6-v2 model
(``LocalTextEmbedding``), and the chat model is a small scripted stand-in that answers from what
it was shown, so the output is the same on every run.

Run: ``python examples/72_long_term_memory.py`` (needs the ``embedding`` and ``qdrant``
extras). It picks the backends itself: session 1 on asyncio, session 2 on trio.

What to look for: in session 2 the agent's empty short-term memory notwithstanding, ``Friday:``
answers the recipe question with "I am vegetarian." and the flight question with "I prefer
window seats on flights.": each reply shows the facts recalled for that question, retrieved by
meaning from the first session's words.
"""

from __future__ import annotations

import tempfile
from typing import Any

import anyio

from agentscope_rt.agent import ReActAgent
from agentscope_rt.embedding import LocalTextEmbedding
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.memory import VectorLongTermMemory
from agentscope_rt.message import Msg
from agentscope_rt.model import FunctionChatModel
from agentscope_rt.rag import QdrantStore

RECALL_START = "which maybe useful:\n"


def text_of(message: dict[str, Any]) -> str:
    """The text of an OpenAI-format message (a string, or a list of parts)."""
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def recalled_facts(messages: list[dict[str, Any]]) -> list[str]:
    """The facts the agent put in front of the model for this reply (the latest recall: the
    earlier ones stay in the conversation, as in AgentScope)."""
    for message in reversed(messages):
        content = text_of(message)
        if content.startswith("<long_term_memory>"):
            body = content.split(RECALL_START, 1)[1].removesuffix("</long_term_memory>")
            return body.splitlines()
    return []


def assistant(messages: list[dict[str, Any]], tools: Any) -> str:
    """A stand-in model: acknowledges statements and answers questions from recalled facts."""
    said = [text_of(m) for m in messages if m["role"] == "user"]
    question = [text for text in said if not text.startswith("<")][-1]
    if not question.endswith("?"):
        return "Noted, I will remember that."
    facts = recalled_facts(messages)
    if not facts:
        return "I don't know anything about you yet."
    return "Here is what I remember about you: " + " ".join(facts)


async def session(folder: str, name: str, user_says: list[str]) -> None:
    """One session: a new agent on the long-term memory kept in *folder*."""
    embedding = LocalTextEmbedding()
    # The store is the only state that outlives the session (one open store per folder).
    async with QdrantStore(folder, "preferences", embedding.dimensions) as store:
        memory = VectorLongTermMemory(embedding, store, user_id="alice")
        agent = ReActAgent(
            name="Friday",
            sys_prompt="You are a helpful assistant who remembers the user's preferences.",
            model=FunctionChatModel(assistant),
            formatter=OpenAIChatFormatter(),
            long_term_memory=memory,
            long_term_memory_mode="static_control",
        )
        print(f"{name} (a new agent; its short-term memory is empty)")
        for text in user_says:
            print(f"alice: {text}")
            await agent(Msg("user", text, "user"))
        print(f"  memory settings saved with the agent: {memory.state_dict()}")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        anyio.run(
            session,
            folder,
            "Session 1, on asyncio",
            ["I am vegetarian.", "I prefer window seats on flights."],
        )
        anyio.run(
            session,
            folder,
            "Session 2, on trio",
            [
                "Can you suggest a dinner recipe without meat?",
                "Could you book me a flight to Rome?",
            ],
            backend="trio",
        )


if __name__ == "__main__":
    main()
