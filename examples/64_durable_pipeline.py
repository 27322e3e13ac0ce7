"""A durable research pipeline: it fails part-way, and the same run id finishes it.

Three agents with tools work in a ``sequential_pipeline`` (a searcher with ``search_notes``,
a reader with ``read_note``, a writer with ``publish``), then three reviewers read the report
at once in a ``fanout_pipeline``. The program runs inside ``async with durable_run(run_id,
store) as run:``; the date in the question is a recorded step (``run.step``), so the program
asks the same question when it is run again another day.

The first attempt fails after the second agent: the writer's model API is down (a flag makes
its first call raise). The program is run again with the same run id, building its agents
afresh as a new process would: the searcher's and reader's recorded calls (their model
answers and tool results) are replayed, not made again, and the writer and the reviewers run
live. The example prints which steps each attempt ran live and which were replayed
(``run.replayed``, ``run.recorded`` and the store's ``load_steps``), and how many times each
tool ran: once, over both attempts.

The models are ``FunctionChatModel`` stand-ins that follow the task step by step; the notes
and their search are ``_research_server.py``'s (the MCP server of ``51_research_assistant.py``),
called here as plain tool functions.

Run: ``python examples/64_durable_pipeline.py`` (asyncio) or
``python examples/64_durable_pipeline.py trio``.

What to look for: attempt 1 records the searcher's and the reader's steps and stops with
``ConnectionError``; attempt 2 replays exactly those steps and records the writer's and the
reviewers' (the reviewers' keys are numbered per agent, ``Accuracy#1/chat#1``, although they
run at once); every tool ran once.
"""

from __future__ import annotations

import re
import secrets
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from _research_server import read_note as read_note_text
from _research_server import search_notes as search_notes_text

from agentscope_rt.agent import ReActAgent
from agentscope_rt.durable import DurableRun, SQLiteRunStore, StepRecord, durable_run
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import FunctionChatModel, reply, tool_call
from agentscope_rt.pipeline import fanout_pipeline, sequential_pipeline
from agentscope_rt.tool import Toolkit, ToolResponse

RUN_ID = "research-cancellation"
QUESTION = "How do trio and asyncio cancel tasks?"
tool_runs: Counter[str] = Counter()


# --- the tools (each run counted: a replayed call must not run them again) ---------------------


def text_result(text: str) -> ToolResponse:
    return ToolResponse(content=[TextBlock(text=text)])


def search_notes(query: str) -> ToolResponse:
    """Search the research notes; one line per match: [note id] title: first sentence.

    Args:
        query: keywords to look for
    """
    tool_runs["search_notes"] += 1
    return text_result(search_notes_text(query))


def read_note(note_id: str) -> ToolResponse:
    """The full text of one note.

    Args:
        note_id: the id search_notes showed in brackets
    """
    tool_runs["read_note"] += 1
    return text_result(read_note_text(note_id))


def make_publish(folder: Path) -> Callable[[str, str], ToolResponse]:
    def publish(title: str, body: str) -> ToolResponse:
        """Publish the report (a file that readers see at once).

        Args:
            title: the report's title
            body: the report's text
        """
        tool_runs["publish"] += 1
        path = folder / f"report-{tool_runs['publish']}.md"
        path.write_text(f"# {title}\n\n{body}\n", encoding="utf-8")
        return text_result(f"published as {path.name}")

    return publish


# --- the stand-in models: each reads its prompt and takes the task's next step -----------------


def call(name: str, **arguments: Any) -> Any:
    # A random id, as an API gives: ids must not repeat within an agent's memory, and a
    # counter would start again in a program run again.
    return reply(tool_call(name, arguments, id=f"call_{secrets.token_hex(6)}"))


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "\n".join(str(block.get("text", "")) for block in content)
    return str(content)


def task(messages: list[dict[str, Any]]) -> str:
    """What the agent was asked: its input, after the system prompt."""
    return text_of(messages[1])


def results(messages: list[dict[str, Any]]) -> list[str]:
    """The results of the tool calls the agent made so far."""
    return [text_of(m) for m in messages if m["role"] == "tool"]


def searcher(messages: list[dict[str, Any]], tools: Any) -> Any:
    if not results(messages):
        return call("search_notes", query=task(messages))
    return "Notes to read: " + ", ".join(re.findall(r"^\[([\w-]+)\]", results(messages)[0], re.M))


def reader(messages: list[dict[str, Any]], tools: Any) -> Any:
    read = results(messages)
    wanted = task(messages).removeprefix("Notes to read: ").split(", ")
    if len(read) < len(wanted):
        return call("read_note", note_id=wanted[len(read)])
    return "\n".join(
        f"{note.splitlines()[0].split(']')[0]}] {note.splitlines()[1]}" for note in read
    )


def make_writer(api_down: list[bool]) -> Callable[..., Any]:
    def writer(messages: list[dict[str, Any]], tools: Any) -> Any:
        if api_down and api_down.pop():
            raise ConnectionError("the writer's model API is down")
        if not results(messages):
            title = "Cancellation in trio and asyncio"
            return call("publish", title=title, body=task(messages))
        return f"Report {results(messages)[0].split()[-1]}:\n{task(messages)}"

    return writer


def make_reviewer(aspect: str) -> Callable[..., Any]:
    def review(messages: list[dict[str, Any]], tools: Any) -> Any:
        sources = sorted(set(re.findall(r"\[([\w-]+)\]", task(messages))))
        return f"{aspect} checked; {len(sources)} sources cited ({', '.join(sources)})."

    return review


def agent(name: str, brain: Callable[..., Any], *tools: Callable[..., ToolResponse]) -> ReActAgent:
    toolkit = Toolkit()
    for tool in tools:
        toolkit.register_tool_function(tool)
    built = ReActAgent(
        name=name,
        sys_prompt=f"You are the {name.lower()} of a research team.",
        model=FunctionChatModel(brain, model_name=f"stand-in-{name.lower()}"),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
    )
    return built


# --- the program -------------------------------------------------------------------------------


async def research(run: DurableRun, folder: Path, api_down: bool) -> list[Msg]:
    """The whole pipeline; the reviews. Agents are built here, as every run of the program
    builds them: a durable run gives them back their states by replaying their calls. The
    date is a recorded step: run again on another day, the program asks the same question."""
    today = await run.step("today", lambda: datetime.now(UTC).date().isoformat())
    team = [
        agent("Searcher", searcher, search_notes),
        agent("Reader", reader, read_note),
        agent("Writer", make_writer([api_down]), make_publish(folder)),
    ]
    question = Msg("user", f"{QUESTION} (asked on {today})", "user")
    report = await sequential_pipeline(team, question)
    reviewers = [agent(name, make_reviewer(name)) for name in ("Accuracy", "Sources", "Clarity")]
    return await fanout_pipeline(reviewers, report)


def by_call(records: list[StepRecord]) -> str:
    """The records grouped by the agent call they belong to: ``Reader#1 (model calls: 4, tool
    calls: 3)``; the call's own record holds its reply, and a program step (``today#1``) has
    no steps inside."""
    inside: dict[str, Counter[str]] = {}
    for record in records:
        steps = inside.setdefault(record.key.split("/")[0], Counter())
        if record.kind not in ("call", "step"):
            steps["model" if record.kind == "chat" else record.kind] += 1
    return ", ".join(
        f"{key} ({', '.join(f'{what} calls: {n}' for what, n in steps.items())})" if steps else key
        for key, steps in inside.items()
    )


async def attempt(number: int, store: SQLiteRunStore, folder: Path, api_down: bool) -> None:
    """Run the program once under RUN_ID and show what it replayed and what it ran live."""
    before = await store.load_steps("", RUN_ID)
    reviews: list[Msg] = []
    try:
        async with durable_run(RUN_ID, store) as run:
            reviews = await research(run, folder, api_down)
    except ConnectionError as exc:
        print(f"[attempt {number}] failed: {exc!r}")
    known = {record.key for record in before}
    live = [r for r in await store.load_steps("", RUN_ID) if r.key not in known]
    print(
        f"[attempt {number}] resumed: {run.resumed}; {run.replayed} steps replayed "
        f"(run.replayed), {run.recorded} steps run live and recorded (run.recorded)"
    )
    print(f"  replayed: {by_call(before) or 'nothing'}")
    print(f"  run live: {by_call(live)}")
    for review in reviews:
        print(f"  {review.name}: {review.get_text_content()}")


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteRunStore(Path(folder) / "runs.db")
        try:
            await attempt(1, store, Path(folder), api_down=True)
            await attempt(2, store, Path(folder), api_down=False)
            info = await store.get_run("", RUN_ID)
            assert info is not None
            print(f"run {RUN_ID!r}: {info.status}, {info.steps} steps recorded")
        finally:
            await store.aclose()
    print(f"tool runs over both attempts: {dict(tool_runs)}")


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
