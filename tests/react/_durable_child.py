"""A five-step task run by a durable ReAct agent; run by test_react_durable.py and
test_react_durable_kill_points.py.

Usage: ``python _durable_child.py DB BACKEND LOG [MEMORY [KILL_AT [parallel]]]``. The agent
checkpoints to the SQLite session in DB; each call of the ``step`` tool appends its step number
to LOG before returning, so the test can tell which calls ran. The model is a function of the
memory: it calls ``step`` for the next step not yet done (a cut-off step is done again, under a
new call id) and answers when all five are done. At the end the child prints one JSON line: the
answer and the memory, summarised.

MEMORY is ``in_memory`` (the default) or ``sqlite`` (an ``AsyncSQLAlchemyMemory`` in the file
DB + ``.memory``). KILL_AT makes the child SIGKILL itself at one exact point: ``input`` (the
input was recorded in memory, before the reply's first step was checkpointed), ``result-N``
(step N's result was recorded in memory, before its checkpoint) or ``final`` (the reply's last
checkpoint was saved, before the answer is printed). With ``parallel``, the model asks for
every step still to do at once and the agent runs the calls concurrently.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
from typing import Any

import anyio

from agentscope_rt.agent import ReActAgent
from agentscope_rt.agent._durable import CUT_OFF_TEXT, PROGRESS_KEY
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.memory import AsyncSQLAlchemyMemory, InMemoryMemory, MemoryBase
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import FunctionChatModel, reply, tool_call
from agentscope_rt.session import SQLiteSession
from agentscope_rt.tool import Toolkit, ToolResponse

STEPS = 5
TASK = "Run the five steps, then report."


def _progress(messages: list[dict[str, Any]]) -> tuple[list[int], dict[int, int]]:
    """The steps done (a cut-off step is not) and how often each was called."""
    done: list[int] = []
    attempts: dict[int, int] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            n = json.loads(call["function"]["arguments"])["n"]
            attempts[n] = attempts.get(n, 0) + 1
        if message["role"] == "tool" and "cut off by a restart" not in str(message["content"]):
            done.append(int(str(message["content"]).split()[1]))
    return done, attempts


def _plan(messages: list[dict[str, Any]], at_once: bool) -> Any:
    done, attempts = _progress(messages)
    todo = [n for n in range(1, STEPS + 1) if n not in done]
    if not todo:
        return f"All {STEPS} steps are done: " + ", ".join(str(n) for n in sorted(done)) + "."
    if not at_once:
        todo = todo[:1]
    return reply(
        f"Step{'s' if len(todo) > 1 else ''} {', '.join(map(str, todo))} next.",
        *[tool_call("step", {"n": n}, id=f"step-{n}-{attempts.get(n, 0)}") for n in todo],
    )


def plan_next(messages: list[dict[str, Any]], tools: Any) -> Any:
    return _plan(messages, at_once=False)


def plan_all(messages: list[dict[str, Any]], tools: Any) -> Any:
    return _plan(messages, at_once=True)


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _killing_add(memory_class: type[MemoryBase], kill_at: str) -> type[MemoryBase]:
    """*memory_class* whose ``add`` kills the process once the message named by *kill_at*
    is recorded (``input``: the task; ``result-N``: step N's tool result)."""

    def fatal(msg: Msg) -> bool:
        if kill_at == "input":
            return msg.role == "user" and msg.get_text_content() == TASK
        done = f"step {kill_at.removeprefix('result-')} done"
        return any(
            block["output"] != CUT_OFF_TEXT and block["output"][0]["text"] == done
            for block in msg.get_content_blocks("tool_result")
        )

    class Killing(memory_class):  # type: ignore[valid-type,misc]
        async def add(self, memories: Any, *args: Any, **kwargs: Any) -> None:
            await super().add(memories, *args, **kwargs)
            batch = memories if isinstance(memories, list) else [memories]
            if any(m is not None and fatal(m) for m in batch):
                _die()

    return Killing


def _killing_session(db: str) -> SQLiteSession:
    """A session that kills the process once it saved a checkpoint of a finished reply."""

    class Killing(SQLiteSession):
        async def save_session_state(self, *args: Any, **modules: Any) -> None:
            await super().save_session_state(*args, **modules)
            progress = modules.get(PROGRESS_KEY)
            if progress is not None and not progress.in_progress:
                _die()

    return Killing(db)


def _memory(db: str, kind: str, kill_at: str) -> MemoryBase:
    memory_class: type[MemoryBase] = (
        InMemoryMemory if kind == "in_memory" else AsyncSQLAlchemyMemory
    )
    if kill_at not in ("", "final"):
        memory_class = _killing_add(memory_class, kill_at)
    if kind == "in_memory":
        return memory_class()
    return memory_class(f"sqlite:///{db}.memory", "task-1", "worker")  # type: ignore[call-arg]


async def main(
    db: str, log: str, kind: str = "in_memory", kill_at: str = "", mode: str = ""
) -> None:
    async def step(n: int) -> ToolResponse:
        """Do one step of the task.

        Args:
            n: The step's number.
        """
        # Parallel steps finish in reverse order, to tell call order from finishing order.
        await anyio.sleep(0.01 * (STEPS - n) if mode == "parallel" else random.uniform(0.01, 0.06))
        with open(log, "a") as file:  # noqa: ASYNC230 - a short append in a test helper
            file.write(f"{n}\n")
        return ToolResponse(content=[TextBlock(type="text", text=f"step {n} done")])

    toolkit = Toolkit()
    toolkit.register_tool_function(step)
    agent = ReActAgent(
        name="Worker",
        sys_prompt="You work through tasks step by step.",
        model=FunctionChatModel(plan_all if mode == "parallel" else plan_next),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
        memory=_memory(db, kind, kill_at),
        max_iters=20,
        parallel_tool_calls=mode == "parallel",
    )
    agent.set_console_output_enabled(False)
    agent.checkpoint_to(_killing_session(db) if kill_at == "final" else SQLiteSession(db), "task-1")
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
    anyio.run(main, sys.argv[1], sys.argv[3], *sys.argv[4:], backend=sys.argv[2])
