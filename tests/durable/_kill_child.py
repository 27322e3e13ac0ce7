"""A durable multi-agent program killed and resumed by test_kill.py.

Usage: ``python _kill_child.py BACKEND STORE RUN_ID TRANSCRIPT EFFECTS``. STORE is
``sqlite:<file>``, ``sqlite-effects:<file>`` (``SQLiteRunStore(fsync="effects")``),
``postgres:<url>`` or ``redis:<url>`` (with a lease of :data:`REDIS_LEASE_S`). Three ReAct
agents (Alice, Bob, Carol) take part; a recorded random draw (``run.rng("order")``) decides
the order in which they speak. They talk in a MsgHub for :data:`ROUNDS` rounds of
``sequential_pipeline``, then answer one host message concurrently (``fanout_pipeline``,
outside the hub: inside it, the replies reaching each member after its own last reply land in
an order that varies from run to run, uninterrupted ones included, so no transcript could be
compared whole; a fanout inside a hub is resumed in test_run_concurrency.py). Every reply
calls the ``note`` tool once, which appends its entry (the tool call's id) as one fsync'd line
to EFFECTS: the side effect a restart must not repeat.

Each model answers from its prompt alone, and ignores the tool results in it: a tool call cut
off by a restart (CUT_OFF_TEXT instead of its result) changes nothing else, so a run killed
any number of times ends with the same replies as an uninterrupted one. Nothing is printed;
at the end the child writes TRANSCRIPT (JSON, written whole or not at all): the order drawn,
every agent's memory as ``[name, role, text]`` lists, the deliveries each agent observed, and
how long the program took after its imports (``seconds``, to aim the kills).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from typing import Any

import anyio
import anyio.to_thread

from agentscope_rt.agent import ReActAgent
from agentscope_rt.durable import (
    PostgresRunStore,
    RedisRunStore,
    RunStore,
    SQLiteRunStore,
    durable_run,
)
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import FunctionChatModel, reply, tool_call
from agentscope_rt.pipeline import MsgHub, fanout_pipeline, sequential_pipeline
from agentscope_rt.tool import Toolkit, ToolResponse

NAMES = ("Alice", "Bob", "Carol")
ROUNDS = 3
# A model answers after this long and a tool takes twice as long around its side effect, so
# a kill at a random instant lands in model calls and tool calls as well as in store writes.
MODEL_SECONDS = 0.004
TOOL_SECONDS = 0.004
# A killed program's Redis lease keeps its run until it expires: short, so that a restart
# waits little, and still far above the program's longest step.
REDIS_LEASE_S = 0.5


def open_store(spec: str) -> RunStore:
    """The run store *spec* names (see the module's docstring)."""
    kind, _, where = spec.partition(":")
    if kind == "sqlite":
        return SQLiteRunStore(where)
    if kind == "sqlite-effects":
        return SQLiteRunStore(where, fsync="effects")
    if kind == "postgres":
        return PostgresRunStore(where)
    if kind == "redis":
        return RedisRunStore(where, lease_seconds=REDIS_LEASE_S)
    raise ValueError(f"unknown store {spec!r}")


def _model(name: str) -> FunctionChatModel:
    async def answer(messages: list[dict[str, Any]], tools: Any) -> Any:
        await anyio.sleep(MODEL_SECONDS)
        if messages[-1]["role"] != "tool":
            entry = f"{name}-{len(messages)}"
            return reply(f"{name} takes a note.", tool_call("note", {"entry": entry}, id=entry))
        read = [m for m in messages if m["role"] != "tool"]
        digest = hashlib.blake2b(
            json.dumps(read, sort_keys=True, default=str).encode(), digest_size=6
        ).hexdigest()
        return f"{name} has read {len(read)} messages ({digest})."

    return FunctionChatModel(answer)


def _toolkit(effects: str) -> Toolkit:
    def append(line: str) -> None:
        fd = os.open(effects, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())  # one write: a kill leaves the line whole or absent
            os.fsync(fd)
        finally:
            os.close(fd)

    async def note(entry: str) -> ToolResponse:
        """Write an entry in the shared notebook.

        Args:
            entry: The entry.
        """
        await anyio.sleep(TOOL_SECONDS)
        await anyio.to_thread.run_sync(append, f"{entry}\n")
        await anyio.sleep(TOOL_SECONDS)
        return ToolResponse(content=[TextBlock(text=f"noted {entry}")])

    toolkit = Toolkit()
    toolkit.register_tool_function(note)
    return toolkit


class Member(ReActAgent):
    """A ReAct agent that keeps what it observes, for the transcript."""

    def __init__(self, name: str, effects: str) -> None:
        super().__init__(
            name=name,
            sys_prompt=f"You are {name}; note every turn.",
            model=_model(name),
            formatter=OpenAIChatFormatter(),
            toolkit=_toolkit(effects),
        )
        self.set_console_output_enabled(False)
        self.deliveries: list[list[Any]] = []

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        for one in msg if isinstance(msg, list) else [msg]:
            if one is not None:
                self.deliveries.append([one.name, one.get_text_content()])
        await super().observe(msg)


def render(msg: Msg) -> list[Any]:
    """*msg* as ``[name, role, text]``, its tool calls and results spelled out."""
    parts = []
    for block in msg.get_content_blocks():
        if block["type"] == "text":
            parts.append(block["text"])
        elif block["type"] == "tool_use":
            parts.append(f"call {block['id']} {json.dumps(block['input'], sort_keys=True)}")
        elif block["type"] == "tool_result":
            output = block["output"]
            text = output if isinstance(output, str) else output[0]["text"]
            parts.append(f"result {block['id']}: {text}")
    return [msg.name, msg.role, " | ".join(parts)]


async def main(spec: str, run_id: str, transcript: str, effects: str) -> None:
    began = time.perf_counter()
    agents = [Member(name, effects) for name in NAMES]
    by_name = {agent.name: agent for agent in agents}
    store = open_store(spec)
    try:
        async with durable_run(run_id, store) as run:
            rng = await run.rng("order")
            order = [by_name[name] for name in rng.sample(NAMES, len(NAMES))]
            async with MsgHub(agents, announcement=Msg("host", "Welcome.", "user")):
                for number in range(1, ROUNDS + 1):
                    opening = Msg("host", f"Round {number}: {order[0].name} opens.", "user")
                    await sequential_pipeline(order, opening)
            await fanout_pipeline(agents, Msg("host", "Each of you: sum up.", "user"))
    finally:
        await store.aclose()
    result = {
        "order": [agent.name for agent in order],
        "memories": {
            agent.name: [render(m) for m in await agent.memory.get_memory()] for agent in agents
        },
        "deliveries": {agent.name: agent.deliveries for agent in agents},
        "seconds": time.perf_counter() - began,
    }
    with open(transcript + ".tmp", "w") as file:  # noqa: ASYNC230 - once, at the end
        json.dump(result, file)
    os.replace(transcript + ".tmp", transcript)


def run_child(argv: list[str], errors: str) -> None:
    """Run the program as the command line does (*argv* without the script), with standard
    error in the file *errors*: the test starts it so in processes forked from a fork server
    that imported this module, so each start costs a fork rather than the imports."""
    fd = os.open(errors, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.dup2(fd, 2)
    os.close(fd)
    backend, spec, run_id, transcript, effects = argv
    anyio.run(main, spec, run_id, transcript, effects, backend=backend)


if __name__ == "__main__":
    run_child(sys.argv[1:6], "/dev/stderr")
