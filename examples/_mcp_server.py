"""A small MCP server used by ``31_mcp_stdio.py``, written with the ``mcp`` SDK's server API.

It speaks MCP over stdin/stdout; the example starts it as a subprocess. Run it alone with
``python examples/_mcp_server.py`` (it then waits for an MCP client on stdin).
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ContentBlock, ImageContent, TextContent

server = MCPServer("notes", log_level="ERROR")

# Kept for the lifetime of the process: a stateful client sees its own earlier notes.
_notes: list[str] = []

# A 1x1 PNG, so the example can show an image result without any file.
_PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAC"
    "hwGA60e6kgAAAABJRU5ErkJggg=="
)


@server.tool()
def add_note(text: str) -> str:
    """Store a note and say how many notes there are.

    :param text: the note
    """
    if not text.strip():
        raise ToolError("a note needs some text")
    _notes.append(text)
    return f"stored note #{len(_notes)}"


@server.tool()
def list_notes() -> str:
    """List every stored note, one per line."""
    return "\n".join(f"{i}. {n}" for i, n in enumerate(_notes, 1)) or "(no notes)"


@server.tool()
def server_pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def badge() -> list[ContentBlock]:
    """A caption and a tiny image."""
    return [TextContent(text="a badge"), ImageContent(data=_PIXEL, mime_type="image/png")]


if __name__ == "__main__":
    server.run("stdio")
