"""A misbehaving MCP server over stdio, speaking raw JSON-RPC (one JSON object per line).

Run as ``python misbehaving_server.py [STARTUP]``. It answers the handshake and ``tools/list``
properly (unless *STARTUP* says otherwise) and misbehaves on ``tools/call`` according to the
tool called:

* ``ok(text)``: a correct result echoing *text*;
* ``pid()``: a correct result holding this process's id;
* ``malformed``: a truncated JSON-RPC line, never completed;
* ``wrong_shape``: a response whose ``result`` has ``content`` as a string, not a list;
* ``result_not_object``: a response whose ``result`` is a number;
* ``error``: a JSON-RPC error response (code -32000);
* ``huge``: a correct result holding :data:`HUGE_CHARS` characters of text;
* ``hang``: never answers (keeps reading, so a cancellation notification is received);
* ``wrong_id``: answers with an id nobody asked for;
* ``crash``: exits with status 3 mid-call, without answering;
* ``garbage``: writes lines that are not JSON (and a NUL byte, and invalid UTF-8) to stdout,
  then answers correctly;
* ``stubborn``: ignores SIGTERM and stdin closing, and blocks forever (only SIGKILL ends it).

When the environment names a file in ``BAD_MCP_PID_FILE``, the server writes its process id
there first, so a test can check the process is gone (reaped) afterwards.

*STARTUP*: ``normal`` (default), ``crash`` (exits before the handshake), ``silent`` (never
answers the handshake), ``garbage`` (answers the handshake with text that is not JSON-RPC),
``bad_init`` (answers the handshake with a result of the wrong shape).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

HUGE_CHARS = 4 * 1024 * 1024

TOOL_NAMES = [
    "ok",
    "pid",
    "malformed",
    "wrong_shape",
    "result_not_object",
    "error",
    "huge",
    "hang",
    "wrong_id",
    "crash",
    "garbage",
    "stubborn",
]

_out = sys.stdout.buffer


def send_raw(data: bytes) -> None:
    _out.write(data)
    _out.flush()


def send(message: dict[str, Any]) -> None:
    send_raw(json.dumps(message).encode() + b"\n")


def result(request_id: Any, value: Any) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": value})


def text_result(request_id: Any, text: str) -> None:
    result(request_id, {"content": [{"type": "text", "text": text}], "isError": False})


def tool_schema(name: str) -> dict[str, Any]:
    properties = {"text": {"type": "string"}} if name == "ok" else {}
    return {
        "name": name,
        "description": f"The {name} behaviour.",
        "inputSchema": {"type": "object", "properties": properties},
    }


def call_tool(request_id: Any, name: str, arguments: dict[str, Any]) -> None:
    if name == "ok":
        text_result(request_id, str(arguments.get("text", "")))
    elif name == "pid":
        text_result(request_id, str(os.getpid()))
    elif name == "malformed":
        send_raw(b'{"jsonrpc": "2.0", "id": ' + json.dumps(request_id).encode() + b', "resu\n')
    elif name == "wrong_shape":
        result(request_id, {"content": "not a list", "isError": "sometimes"})
    elif name == "result_not_object":
        result(request_id, 42)
    elif name == "error":
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": "bad"}})
    elif name == "huge":
        text_result(request_id, "x" * HUGE_CHARS)
    elif name == "hang":
        return
    elif name == "wrong_id":
        text_result(987654321, "for someone else")
    elif name == "crash":
        os._exit(3)
    elif name == "garbage":
        send_raw(b"this is not json\n\x00\xff\xfe{{{\n[1, 2\n")
        text_result(request_id, "after garbage")
    elif name == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(3600)
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": name}})


def main() -> None:
    startup = sys.argv[1] if len(sys.argv) > 1 else "normal"
    pid_file = os.environ.get("BAD_MCP_PID_FILE")
    if pid_file:
        with open(pid_file, "w") as file:
            file.write(str(os.getpid()))
    if startup == "crash":
        os._exit(1)
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            if startup == "silent":
                continue
            if startup == "garbage":
                send_raw(b"<html>not an MCP server</html>\n")
                continue
            if startup == "bad_init":
                result(request_id, {"protocolVersion": 7, "capabilities": "none"})
                continue
            result(
                request_id,
                {
                    "protocolVersion": params.get("protocolVersion"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "bad", "version": "0"},
                },
            )
        elif method == "tools/list":
            result(request_id, {"tools": [tool_schema(name) for name in TOOL_NAMES]})
        elif method == "tools/call":
            call_tool(request_id, params.get("name", ""), params.get("arguments") or {})
        elif method == "ping":
            result(request_id, {})
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": method}})


if __name__ == "__main__":
    main()
