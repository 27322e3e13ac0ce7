"""Port of AgentScope's streaming example (``examples/functionality/stream_response``).

The agent's console output is switched off and its printed messages are taken as a stream with
``stream_printing_messages``: each printed chunk arrives once, cumulative, chunks of one message
share its id, and the last chunk of each message says so.
"""

from __future__ import annotations

import itertools

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import DashScopeChatFormatter
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg
from agentscope_rt.model import reply, tool_call
from agentscope_rt.pipeline import stream_printing_messages
from agentscope_rt.tool import Toolkit, execute_python_code

from ._support import cloud_model

QUICK_SORT = (
    "def qs(a):\n"
    "    return a if len(a) < 2 else qs([x for x in a[1:] if x < a[0]]) + [a[0]] "
    "+ qs([x for x in a[1:] if x >= a[0]])\n"
    "print(qs([3, 1, 2]))"
)
FINAL = "Sorted: [1, 2, 3]. Quick sort picks a pivot and recurses on both sides."


async def main() -> tuple[list[tuple[Msg, bool]], Msg]:
    """The example's main(): every (msg, last) it would print, and the reply."""
    toolkit = Toolkit()
    toolkit.register_tool_function(execute_python_code)

    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are a helpful assistant named Friday.",
        model=cloud_model(
            reply("I will run it.", tool_call("execute_python_code", {"code": QUICK_SORT})),
            FINAL,
        ),
        formatter=DashScopeChatFormatter(),
        toolkit=toolkit,
        memory=InMemoryMemory(),
    )

    user_msg = Msg("user", "Help me to run the quick sort algorithm in Python", "user")

    # We disable the terminal printing to avoid messy outputs
    agent.set_console_output_enabled(False)

    printed = []
    reply_task = agent(user_msg)
    async for msg, last in stream_printing_messages(agents=[agent], coroutine_task=reply_task):
        printed.append((msg, last))
    memory = await agent.memory.get_memory()
    return printed, memory[-1]


async def test_the_streaming_example_yields_each_printed_chunk_once() -> None:
    printed, final = await main()

    by_id: dict[str, list[tuple[str, bool]]] = {}
    for msg, last in printed:
        by_id.setdefault(msg.id, []).append((str(msg.get_text_content()), last))
    for chunks in by_id.values():
        # Cumulative text, and `last` only on the final chunk of each message.
        assert [last for _, last in chunks] == [False] * (len(chunks) - 1) + [True]
        texts = [t for t, _ in chunks]
        assert all(b.startswith(a) for a, b in itertools.pairwise(texts))
    # The final answer is printed as one message whose last chunk is the whole text, once.
    finals = [msg for msg, last in printed if last and msg.get_text_content() == FINAL]
    assert len(finals) == 1
    assert finals[0].id == final.id
    # The tool's result is printed too, and the run produced the sorted list.
    assert any("[1, 2, 3]" in str(msg.content) for msg, _ in printed if msg.role == "system")
