"""A chat loop between you and a ReActAgent: AgentScope's quick start, on asyncio or trio.

The shape is AgentScope's own::

    msg = None
    while True:
        msg = await user(msg)
        if msg.get_text_content() == "exit":
            break
        msg = await friday(msg)

``UserAgent`` reads your lines from the terminal (in a worker thread, so the event loop keeps
running); ``ReActAgent`` answers with a local model (SmolLM2-135M-Instruct in-process through
llama.cpp, no key and no network; ``OPENAI_API_KEY`` switches to OpenAI) and streams its reply
to the console as it is generated. Both agents print their own messages: the script prints
nothing of the conversation itself. Type ``exit`` to leave.

With ``AGENTSCOPE_RT_EXAMPLES=1`` the user's lines come from a scripted input source, plugged in
with the public ``UserAgent.override_instance_input_method``: two questions, then ``exit``.
A 135M-parameter model answers briefly and sometimes oddly; the loop is the point here.

Run with ``python examples/02_user_chat_loop.py`` (asyncio) or
``python examples/02_user_chat_loop.py trio``.

What to look for:

* ``User: ...`` lines printed by the UserAgent (typed by you, or ``[scripted]`` ones);
* ``Friday: ...`` replies printed by the ReActAgent as it streams;
* the agent remembers the conversation: its memory grows by two messages a turn, shown at the
  end as ``Friday's memory holds N messages``.
"""

from __future__ import annotations

import os
import pathlib
import sys
from typing import Any

import anyio

import agentscope_rt.formatter
from agentscope_rt.agent import ReActAgent, UserAgent, UserInputData
from agentscope_rt.message import TextBlock

# The examples share a helper module next to them; make it importable however we are run.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _models import pick_chat_model

SCRIPTED_LINES = [
    "Hello! Who are you?",
    "What colour is a ripe banana?",
    "exit",
]


class ScriptedLines:
    """An input method that answers with the next scripted line (stands in for the keyboard)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = iter(lines)

    async def __call__(self, agent_id: str, agent_name: str, **kwargs: Any) -> UserInputData:
        line = next(self.lines, "exit")
        print(f"[scripted] {agent_name} types: {line}")
        return UserInputData(blocks_input=[TextBlock(text=line)])


async def main() -> None:
    model, formatter_name = pick_chat_model(
        stream=True, generate_kwargs={"temperature": 0.0, "seed": 7, "max_tokens": 32}
    )
    friday = ReActAgent(
        name="Friday",
        sys_prompt="You are Friday, a friendly assistant. Answer in one short sentence.",
        model=model,
        formatter=getattr(agentscope_rt.formatter, formatter_name)(),
        max_iters=2,
    )
    user = UserAgent("User")
    if os.environ.get("AGENTSCOPE_RT_EXAMPLES"):
        user.override_instance_input_method(ScriptedLines(SCRIPTED_LINES))

    msg = None
    turns = 0
    while True:
        msg = await user(msg)
        if msg.get_text_content() == "exit":
            break
        msg = await friday(msg)
        turns += 1

    print(
        f"\n{turns} turns; Friday's memory holds {len(await friday.memory.get_memory())} messages"
    )


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
