"""Serving an ASGI app with hypercorn in the running event loop, trio or asyncio.

What the A2A server (:mod:`agentscope_rt.a2a`) and the studio (:mod:`agentscope_rt.studio`)
share. hypercorn comes with their extras and is imported only when a server starts. The server
must be stopped through its ``shutdown_trigger``: a cancellation reaching hypercorn's asyncio
workers breaks their shutdown.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from typing import Any

import sniffio

__all__ = ["hypercorn_config", "hypercorn_serve", "listening_socket"]


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to *host*:*port* (port 0: a free one) and listening.

    :raises OSError: when the address cannot be bound (the socket is closed then).
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return sock


def hypercorn_config(sock: socket.socket, logger_name: str, graceful_timeout: float) -> Any:
    """hypercorn's configuration serving on *sock* (which it takes over): no access log,
    errors to the logger *logger_name*."""
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.accesslog = None
    config.errorlog = logging.getLogger(logger_name)
    config.graceful_timeout = graceful_timeout
    return config


def hypercorn_serve() -> Callable[..., Any]:
    """hypercorn's ``serve`` for the running event loop (trio's or asyncio's)."""
    if sniffio.current_async_library() == "trio":
        from hypercorn.trio import serve as trio_serve

        return trio_serve
    from hypercorn.asyncio import serve as asyncio_serve

    return asyncio_serve
