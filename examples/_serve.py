"""Serving a small local stand-in server (a Starlette app) in the example's own event loop.

The examples that replay a provider (a realtime API, a Nacos registry) run its server beside
the agents with hypercorn, which runs under trio and asyncio alike (uvicorn is asyncio only).
"""

from __future__ import annotations

import socket
from typing import Any

import anyio
import sniffio
from hypercorn.config import Config


async def serve_local(app: Any, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
    """Serve *app* on a free port of 127.0.0.1 until cancelled; starts with ``host:port``
    (``address = await task_group.start(serve_local, app)``)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.accesslog = None
    config.loglevel = "WARNING"
    if sniffio.current_async_library() == "trio":
        from hypercorn.trio import serve as hypercorn_serve
    else:
        from hypercorn.asyncio import serve as hypercorn_serve  # type: ignore[assignment]
    stopped = anyio.Event()
    async with anyio.create_task_group() as group:

        async def run() -> None:
            # hypercorn stops through its shutdown trigger (a cancellation reaching its
            # asyncio workers breaks their shutdown).
            with anyio.CancelScope(shield=True):
                await hypercorn_serve(app, config, shutdown_trigger=stopped.wait)  # type: ignore[arg-type]

        group.start_soon(run)
        task_status.started(f"127.0.0.1:{port}")
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
