"""A research assistant: a ReActAgent with MCP tools and a PlanNotebook plan it works through.

The pieces are AgentScope's:

* a local MCP server over stdio (``examples/_research_server.py``, started as a subprocess by
  ``StdIOStatefulClient``) offering ``search_notes`` and ``read_note`` over a few offline notes;
  ``Toolkit.register_mcp_client`` makes them the agent's tools;
* a ``PlanNotebook``: its plan tools are registered with the agent and, before every reasoning
  step, the agent shows the model a hint chosen from the plan's state; a plan change hook prints
  the plan each time it changes;
* the agent creates a three-subtask plan (search, read, write), works through it with the MCP
  tools, finishes the plan, and answers with citations: every sentence of the answer is taken
  from a note the tools returned, followed by that note's id in brackets.

Who decides: a 135M-parameter local model cannot drive a plan of several tools (offered many
tools it picks the wrong one or none), so the agent's model is a ``FunctionChatModel`` from
``agentscope_rt.model``: a small research policy that reads what the tools returned in the
conversation and decides the next call. Everything around it (formatter, plan hints, the MCP
round trips, the ReAct loop) is what a real model would go through; swap in
``OpenAIChatModel(...)`` to let a real model plan.

Run with ``python examples/51_research_assistant.py`` (asyncio) or
``python examples/51_research_assistant.py trio``.

What to look for:

* ``[plan]`` blocks as the plan is created, each subtask starts and finishes;
* ``Researcher:`` tool calls (``search_notes``, ``read_note``) and the notes the MCP server
  returned, printed by the agent as it goes;
* ``Plan finished: done`` and the final answer whose sentences end with ``[note-id]`` citations,
  then ``every citation names a note the tools returned: True``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import anyio

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.mcp import StdIOStatefulClient
from agentscope_rt.message import Msg
from agentscope_rt.model import FunctionChatModel, reply, tool_call
from agentscope_rt.plan import Plan, PlanNotebook
from agentscope_rt.tool import Toolkit

SERVER = Path(__file__).with_name("_research_server.py")
QUESTION = "How does cancellation differ between trio and asyncio?"


def _tool_results(messages: list[dict[str, Any]], name: str) -> list[str]:
    """The texts the tool *name* returned so far, in order."""
    found = []
    for message in messages:
        if message.get("role") == "tool" and message.get("name") == name:
            content = message.get("content")
            if isinstance(content, list):
                content = "\n".join(str(p.get("text", "")) for p in content)
            found.append(str(content))
    return found


def _question(messages: list[dict[str, Any]]) -> str:
    first = next(m for m in messages if m.get("role") == "user")
    content = first["content"]
    return content if isinstance(content, str) else str(content[0]["text"])


def cited_answer(notes: list[str]) -> str:
    """One sentence per note read, each followed by the id of the note it comes from."""
    sentences = []
    for note in notes:
        header, _, text = note.partition("\n")
        note_id = re.match(r"\[([\w-]+)\]", header)[1]  # type: ignore[index]
        sentences.append(f"{text.split('. ')[0].rstrip('.')} [{note_id}].")
    return " ".join(sentences)


def research_policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Any:
    """The next step, from what the conversation holds: plan, search, read, write, answer."""
    finished = len(_tool_results(messages, "finish_subtask"))
    searches = _tool_results(messages, "search_notes")
    notes = _tool_results(messages, "read_note")
    if not _tool_results(messages, "create_plan"):
        return reply(
            "This needs a search, some reading and a write-up: I will plan first.",
            tool_call(
                "create_plan",
                {
                    "name": "Answer with sources",
                    "description": f"Answer the question '{_question(messages)}' from the notes.",
                    "expected_outcome": "A short answer citing the notes it comes from.",
                    "subtasks": [
                        {
                            "name": "Search the notes",
                            "description": "Search the notes for the question's keywords.",
                            "expected_outcome": "The ids of the relevant notes.",
                        },
                        {
                            "name": "Read the notes",
                            "description": "Read every note the search found.",
                            "expected_outcome": "The notes' texts.",
                        },
                        {
                            "name": "Write the answer",
                            "description": "One sentence per note, each citing its note id.",
                            "expected_outcome": "The answer with [note-id] citations.",
                        },
                    ],
                },
            ),
        )
    if not searches:
        keywords = " ".join(re.findall(r"[a-z]{4,}", _question(messages).lower()))
        return reply(
            tool_call("update_subtask_state", {"subtask_idx": 0, "state": "in_progress"}),
            tool_call("search_notes", {"query": keywords, "limit": 3}),
        )
    if not notes:
        ids = re.findall(r"^\[([\w-]+)\]", searches[-1], flags=re.MULTILINE)
        return reply(
            tool_call("finish_subtask", {"subtask_idx": 0, "subtask_outcome": ", ".join(ids)}),
            *(tool_call("read_note", {"note_id": note_id}) for note_id in ids),
        )
    if finished == 1:
        outcome = "\n\n".join(notes)
        return reply(tool_call("finish_subtask", {"subtask_idx": 1, "subtask_outcome": outcome}))
    answer = cited_answer(notes)
    if finished == 2:
        return reply(
            tool_call("finish_subtask", {"subtask_idx": 2, "subtask_outcome": answer}),
            tool_call("finish_plan", {"state": "done", "outcome": answer}),
        )
    return reply(answer)


def print_plan(notebook: PlanNotebook, plan: Plan | None) -> None:
    """The plan change hook: show the plan as it is now."""
    if plan is None:
        print("  [plan] finished and moved to the history")
        return
    print(f"  [plan] {plan.name} ({plan.state})")
    for subtask in plan.subtasks:
        print(f"         {subtask.to_markdown()}")


async def main() -> None:
    notebook = PlanNotebook()
    notebook.register_plan_change_hook("print", print_plan)
    client = StdIOStatefulClient("research-notes", sys.executable, [str(SERVER)])
    async with client:
        toolkit = Toolkit()
        await toolkit.register_mcp_client(client)
        print(
            "MCP tools:",
            ", ".join(sorted(s["function"]["name"] for s in toolkit.get_json_schemas())),
        )
        agent = ReActAgent(
            name="Researcher",
            sys_prompt="You are a careful research assistant. Plan, search, read, then answer "
            "citing the notes you used as [note-id].",
            model=FunctionChatModel(research_policy, model_name="research-policy"),
            formatter=OpenAIChatFormatter(),
            toolkit=toolkit,
            plan_notebook=notebook,
            max_iters=10,
        )
        answer = await agent(Msg("user", QUESTION, "user"))

    history = await notebook.storage.get_plans()
    print(f"\nPlan finished: {history[-1].state}" if history else "\nPlan not finished")
    text = answer.get_text_content() or ""
    print(f"Answer: {text}")
    returned = set()
    for msg in await agent.memory.get_memory():
        for block in msg.get_content_blocks("tool_result"):
            if block.name == "read_note":
                output = block.output
                texts = [output] if isinstance(output, str) else [b.text for b in output]  # type: ignore[union-attr]
                returned.update(re.findall(r"^\[([\w-]+)\]", "\n".join(texts), flags=re.M))
    cited = set(re.findall(r"\[([\w-]+)\]", text))
    print(f"cited: {sorted(cited)}")
    print(f"every citation names a note the tools returned: {bool(cited) and cited <= returned}")


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
