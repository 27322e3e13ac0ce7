"""Shared helpers for the MCP tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from agentscope_rt.mcp import StdIOStatefulClient

SERVER_SCRIPT = Path(__file__).parent / "servers" / "demo_server.py"


def stdio_client(name: str = "demo", **kwargs: object) -> StdIOStatefulClient:
    """A client for the demo server over stdio (not yet connected)."""
    return StdIOStatefulClient(name, sys.executable, [str(SERVER_SCRIPT), "stdio"], **kwargs)  # type: ignore[arg-type]


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists (a reaped child no longer does)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
