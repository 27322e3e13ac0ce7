"""Saves ever-growing states of one memory until killed; prints each save it finished.

Usage: python _crash_child.py KIND LOCATION BACKEND, where KIND is json, sqlite or redis and
LOCATION a folder, a database file or a Redis port. Save k holds k * STEP messages whose text
is "k:i", so a state read back tells which save it came from and whether it is whole.
"""

from __future__ import annotations

import sys

import anyio

from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg
from agentscope_rt.session import JSONSession, RedisSession, SessionBase, SQLiteSession

STEP = 250
FILLER = "x" * 600


def open_session(kind: str, location: str) -> SessionBase:
    if kind == "json":
        return JSONSession(location)
    if kind == "sqlite":
        return SQLiteSession(location)
    return RedisSession(host="127.0.0.1", port=int(location))


async def main(kind: str, location: str) -> None:
    session = open_session(kind, location)
    k = 0
    print("ready", flush=True)
    while True:
        k += 1
        memory = InMemoryMemory()
        await memory.add([Msg("user", f"{k}:{i}:{FILLER}", "user") for i in range(k * STEP)])
        await session.save_session_state("crash", user_id="u", memory=memory)
        print(k, flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], backend=sys.argv[3])
