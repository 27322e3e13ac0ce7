"""A five-step task run by a durable ReAct agent; run by test_react_durable.py.

Usage: ``python _durable_child.py DB BACKEND LOG``. The agent checkpoints to the SQLite session
in DB; each call of the ``step`` tool appends its call id to LOG before returning, so the test
can tell which calls ran. The model is a function of the memory: it calls ``step`` for the next
step not yet done (a cut-off step is done again, under a new call id) and answers when all five
are done. At the end the child prints one JSON line: the answer and the memory, summarised.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

import anyio

from agentscope_rt.agent import ReActAgent
from agentscope_rt.agent._durable import CUT_OFF_TEXT
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import FunctionChatModel, reply, tool_call
from agentscope_rt.session import SQLiteSession
from agentscope_rt.tool import Toolkit, ToolResponse

STEPS = 5
TASK = "Run the five steps, then report."


def plan_next(messages: list[dict[str, Any]], tools: Any) -> Any:
    done: list[int] = []
    attempts: dict[int, int] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            n = json.loads(call["function"]["arguments"])["n"]
            attempts[n] = attempts.get(n, 0) + 1
        if message["role"] == "tool" and "cut off by a restart" not in str(message["content"]):
            done.append(int(str(message["content"]).split()[1]))
    todo = [n for n in range(1, STEPS + 1) if n not in done]
    if not todo:
        return f"All {STEPS} steps are done: " + ", ".join(str(n) for n in sorted(done)) + "."
    n = todo[0]
    return reply(
        f"Step {n} next.", tool_call("step", {"n": n}, id=f"step-{n}-{attempts.get(n, 0)}")
    )


async def main(db: str, log: str) -> None:
    async def step(n: int) -> ToolResponse:
        """Do one step of the task.

        Args:
            n: The step's number.
        """
        await anyio.sleep(random.uniform(0.01, 0.06))
        with open(log, "a") as file:  # noqa: ASYNC230 - a short append in a test helper
            file.write(f"{n}\n")
        return ToolResponse(content=[TextBlock(type="text", text=f"step {n} done")])

    toolkit = Toolkit()
    toolkit.register_tool_function(step)
    agent = ReActAgent(
        name="Worker",
        sys_prompt="You work through tasks step by step.",
        model=FunctionChatModel(plan_next),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
        max_iters=20,
    )
    agent.set_console_output_enabled(False)
    agent.checkpoint_to(SQLiteSession(db), "task-1")
    print("ready", flush=True)
    answer = await agent(Msg("user", TASK, "user"))
    memory = []
    for m in await agent.memory.get_memory():
        for block in m.get_content_blocks():
            if block["type"] == "tool_use":
                memory.append(["call", block["id"], block["input"]["n"]])
            elif block["type"] == "tool_result":
                output = block["output"]
                text = output if isinstance(output, str) else output[0]["text"]
                memory.append(["result", block["id"], "cut off" if text == CUT_OFF_TEXT else text])
            elif block["type"] == "text":
                memory.append([m.role, block["text"]])
    print(json.dumps({"answer": answer.get_text_content(), "memory": memory}), flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[3], backend=sys.argv[2])
