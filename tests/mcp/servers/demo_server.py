"""A small MCP server for the MCP client tests, written with the SDK's server API.

Run it as ``python demo_server.py stdio`` (the client spawns it), or as
``python demo_server.py streamable-http PORT`` / ``python demo_server.py sse PORT`` (the test
fixture starts it on 127.0.0.1 and waits for the port).
"""

from __future__ import annotations

import base64
import os
import sys

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

# A 1x1 transparent PNG, so the image tool returns real image bytes.
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
# Eight bytes of silence in a WAV-looking payload; only the bytes and MIME type matter here.
AUDIO_BYTES = b"RIFF\x00\x00\x00\x00WAVE"

server = MCPServer("demo", instructions="Test server for agentscope_rt.mcp", log_level="ERROR")

# Per-process state: a stateful client sees it grow across calls.
_counter = {"value": 0}


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers.

    :param a: the first addend
    :param b: the second addend
    """
    return a + b


@server.tool()
def echo(text: str, repeat: int = 1) -> str:
    """Return the text, repeated."""
    return " ".join([text] * repeat)


@server.tool()
def increment() -> int:
    """Increment this server process's counter and return it."""
    _counter["value"] += 1
    return _counter["value"]


@server.tool()
def pid() -> int:
    """Return the server's process id."""
    return os.getpid()


@server.tool()
def session_marker(ctx: Context) -> str:
    """Return an identifier of the MCP session that carries this call."""
    # Streamable HTTP names its sessions in a header, SSE in the message URL's query; stdio
    # has a single session per process.
    headers = ctx.headers or {}
    if "mcp-session-id" in headers:
        return headers["mcp-session-id"]
    query_params = getattr(ctx.request_context.request, "query_params", None) or {}
    if "session_id" in query_params:
        return str(query_params["session_id"])
    return f"stdio-{os.getpid()}"


@server.tool()
def read_header(name: str, ctx: Context) -> str:
    """Return the value of an HTTP request header of this call ("" if absent)."""
    headers = ctx.headers or {}
    return str(headers.get(name.lower(), ""))


@server.tool()
def image() -> list[types.ContentBlock]:
    """Return a caption and a PNG image."""
    return [
        types.TextContent(text="a 1x1 pixel"),
        types.ImageContent(data=base64.b64encode(PNG_1X1).decode(), mime_type="image/png"),
    ]


@server.tool()
def audio() -> types.AudioContent:
    """Return a short WAV clip."""
    return types.AudioContent(data=base64.b64encode(AUDIO_BYTES).decode(), mime_type="audio/wav")


@server.tool()
def resources() -> list[types.ContentBlock]:
    """Return an embedded text resource, an embedded blob and a resource link."""
    return [
        types.EmbeddedResource(
            resource=types.TextResourceContents(
                uri="file:///notes.txt", mime_type="text/plain", text="remember the milk"
            )
        ),
        types.EmbeddedResource(
            resource=types.BlobResourceContents(
                uri="file:///pixel.png",
                mime_type="image/png",
                blob=base64.b64encode(PNG_1X1).decode(),
            )
        ),
        types.ResourceLink(
            uri="https://example.org/report.pdf",
            name="report",
            description="the quarterly report",
            mime_type="application/pdf",
        ),
    ]


@server.tool()
def fail(reason: str) -> str:
    """Always fail with the given reason."""
    raise ToolError(f"refused: {reason}")


@server.tool()
def crash() -> str:
    """Kill this server process in the middle of the call."""
    sys.stdout.flush()
    os._exit(3)


# How many sleep calls were cancelled (a client timing out tells the server to stop).
_cancelled = {"sleeps": 0}


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then say how long."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        _cancelled["sleeps"] += 1
        raise
    return f"slept {seconds}"


# meet calls in flight now, and the most in flight at once since none was.
_meeting = {"now": 0, "peak": 0}
# How long a meet call waits for the others before it gives up (a hang detector).
MEET_TIMEOUT_S = 10.0


@server.tool()
async def meet(count: int) -> int:
    """Wait until *count* meet calls are in flight at once (at most MEET_TIMEOUT_S), then
    return the most that were: *count* for calls that overlap, less for calls made in turn."""
    _meeting["now"] += 1
    _meeting["peak"] = max(_meeting["peak"], _meeting["now"])
    try:
        with anyio.move_on_after(MEET_TIMEOUT_S):
            while _meeting["peak"] < count:  # noqa: ASYNC110 - other requests change the count
                await anyio.sleep(0.005)
        return _meeting["peak"]
    finally:
        _meeting["now"] -= 1
        if _meeting["now"] == 0:
            _meeting["peak"] = 0


@server.tool()
def cancelled_sleeps() -> int:
    """How many sleep calls this server process saw cancelled."""
    return _cancelled["sleeps"]


@server.tool()
def open_sessions() -> int:
    """How many streamable-HTTP sessions the server holds, this call's own included."""
    return len(server.session_manager._server_instances)


def main() -> None:
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        server.run("stdio")
    elif transport == "streamable-http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif transport == "sse":
        server.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        raise SystemExit(f"unknown transport {transport!r}; use stdio, streamable-http or sse")


if __name__ == "__main__":
    main()
