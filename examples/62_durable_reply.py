"""A durable reply: the process running a five-step task is killed, and a new one finishes it.

The agent checkpoints to a SQLite session (``agent.checkpoint_to(...)``). The first process is
killed with SIGKILL in the middle of the task; the second builds the same agent, calls it with
the same task, and the reply resumes: the steps already done are not done again, a step that
was running when the kill came is reported as cut off (and done again), and the reply ends as
an uninterrupted one would. The model is an offline stand-in that works through the steps.

Run: ``python examples/62_durable_reply.py`` (asyncio) or
``python examples/62_durable_reply.py trio``.

What to look for: process 1 prints its agent's tool calls and results until it is killed while
migrating database 3. Process 2 does not migrate databases 1 and 2 again: it starts at 3. In
the finished reply's tool results, the call that was running at the kill is reported as cut off
by a restart, followed by its redone result.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import FunctionChatModel, reply, tool_call
from agentscope_rt.session import SQLiteSession
from agentscope_rt.tool import Toolkit, ToolResponse

STEPS = 5
TASK = "Migrate the five databases, one at a time."
OUTCOME = "outcome: "


def next_step(messages: list[dict[str, Any]], tools: Any) -> Any:
    """Call `migrate` for the first database not migrated yet; answer when all are."""
    done = {
        int(str(m["content"]).split()[1])
        for m in messages
        if m["role"] == "tool" and "migrated" in str(m["content"])
    }
    calls = sum(len(m.get("tool_calls") or []) for m in messages)
    todo = [n for n in range(1, STEPS + 1) if n not in done]
    if not todo:
        return f"All {STEPS} databases are migrated."
    return reply(tool_call("migrate", {"db": todo[0]}, id=f"call-{calls}"))


async def worker(db: str) -> None:
    async def migrate(db: int) -> ToolResponse:
        """Migrate one database.

        Args:
            db: The database's number.
        """
        print(f"  migrating database {db} ...", flush=True)
        await anyio.sleep(0.3)
        return ToolResponse(content=[TextBlock(type="text", text=f"database {db} migrated")])

    toolkit = Toolkit()
    toolkit.register_tool_function(migrate)
    agent = ReActAgent(
        name="Migrator",
        sys_prompt="You migrate databases.",
        model=FunctionChatModel(next_step),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
        max_iters=20,
    )
    agent.checkpoint_to(SQLiteSession(db), "migration")
    answer = await agent(Msg("user", TASK, "user"))
    results = [
        b["output"] if isinstance(b["output"], str) else b["output"][0]["text"]
        for m in await agent.memory.get_memory()
        for b in m.get_content_blocks("tool_result")
    ]
    # One line the parent process reads the outcome from.
    outcome = {"answer": answer.get_text_content(), "results": results}
    print(OUTCOME + json.dumps(outcome), flush=True)


def main() -> None:
    backend = "trio" if "trio" in sys.argv[1:] else "asyncio"
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "agent.db")
        command = [sys.executable, __file__, "--worker", db, backend]
        print("process 1 (killed while it migrates database 3):")
        first = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert first.stdout is not None
        for line in first.stdout:
            print(line, end="")
            if "database 3" in line:
                time.sleep(0.1)
                first.send_signal(signal.SIGKILL)
                break
        first.wait()
        print("  -- killed --")
        print("process 2 (same agent, same session, same task):")
        second = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
        lines = second.stdout.splitlines()
        print("\n".join(line for line in lines if not line.startswith(OUTCOME)))
        outcome = json.loads(next(x for x in lines if x.startswith(OUTCOME))[len(OUTCOME) :])
        print("\nthe tool results in the finished reply, in order:")
        for result in outcome["results"]:
            print(f"  {result[:90]}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        anyio.run(worker, sys.argv[2], backend=sys.argv[3])
    else:
        main()
