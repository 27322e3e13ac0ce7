"""A small offline MCP server used by ``51_research_assistant.py``: search and read research notes.

It speaks MCP over stdin/stdout (the example starts it as a subprocess) and offers two tools
over a handful of notes held in this file: ``search_notes`` (keyword search, best matches
first) and ``read_note`` (one note's full text). Run it alone with
``python examples/_research_server.py`` (it then waits for an MCP client on stdin).
"""

from __future__ import annotations

import re

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("research-notes", log_level="ERROR")

NOTES: dict[str, tuple[str, str]] = {
    "trio-cancel": (
        "Cancellation in trio",
        "Trio cancels through cancel scopes: cancelling a scope makes every checkpoint inside "
        "it raise Cancelled, and a nursery does not exit until all of its child tasks have "
        "finished. A timeout is a cancel scope with a deadline (trio.move_on_after, "
        "trio.fail_after).",
    ),
    "asyncio-cancel": (
        "Cancellation in asyncio",
        "asyncio cancels one task at a time with Task.cancel(), which raises CancelledError at "
        "the task's next await. Since Python 3.11 asyncio.TaskGroup and asyncio.timeout give "
        "structured cancellation, but a plain create_task still starts a task that nothing "
        "waits for.",
    ),
    "anyio-levels": (
        "anyio's cancel scopes",
        "anyio brings trio's level cancellation to asyncio: inside a cancelled CancelScope every "
        "await keeps raising until the scope is left, on both backends, so a cleanup handler "
        "must shield itself (CancelScope(shield=True)) to await anything.",
    ),
    "threads": (
        "Blocking work and cancellation",
        "A thread cannot be cancelled: anyio.to_thread.run_sync waits for the thread unless "
        "abandon_on_cancel=True, which returns at once and lets the thread finish alone.",
    ),
    "http-streams": (
        "Server-sent events",
        "Server-sent events are a text/event-stream response: each event is 'event:' and "
        "'data:' lines ended by a blank line; browsers read them with EventSource.",
    ),
}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


@server.tool()
def search_notes(query: str, limit: int = 3) -> str:
    """Search the research notes; one line per match: ``[note id] title: first sentence``.

    :param query: keywords to look for
    :param limit: the most matches to return
    """
    wanted = _words(query)
    if not wanted:
        raise ToolError("the query needs at least one word of three letters or more")
    scored = []
    for note_id, (title, text) in NOTES.items():
        score = len(wanted & _words(f"{title} {text}"))
        if score:
            scored.append((-score, note_id))
    lines = []
    for _, note_id in sorted(scored)[: max(1, limit)]:
        title, text = NOTES[note_id]
        lines.append(f"[{note_id}] {title}: {text.split('. ')[0]}.")
    return "\n".join(lines) or "no matching notes"


@server.tool()
def read_note(note_id: str) -> str:
    """The full text of one note, as ``[note id] title`` then the text.

    :param note_id: the id search_notes showed in brackets
    """
    if note_id not in NOTES:
        raise ToolError(f"no note {note_id!r}; ids: {', '.join(NOTES)}")
    title, text = NOTES[note_id]
    return f"[{note_id}] {title}\n{text}"


if __name__ == "__main__":
    server.run("stdio")
