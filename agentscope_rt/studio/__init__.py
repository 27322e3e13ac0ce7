"""A live studio page served by the runtime, and AgentScope Studio compatibility.

* :func:`serve` serves a page (Starlette on hypercorn, in the application's own event loop,
  asyncio or trio) that shows agents and their state, every message and printed chunk as it
  streams, hub membership, tool calls, token usage and span trees, and lets a person answer a
  :class:`~agentscope_rt.agent.UserAgent` (``studio.user_input``) and interrupt an agent.
* :func:`connect_studio` talks to a running AgentScope Studio as AgentScope 1.x does
  (``registerRun``, ``pushMessage``, ``requestUserInput`` and the Socket.IO ``/python``
  namespace), from a background thread: a Studio that is down or slow costs the agents a
  logged warning, nothing more.

Needs the ``studio`` extra (``pip install -e ".[studio]"`` in a clone of the repository).
"""

# First: a missing extra is named here, before any module fails to import its library.
from . import _requires  # noqa: F401
from ._page_input import PageUserInput
from ._remote import (
    StudioLink,
    StudioUserInput,
    as_studio_forward_message_pre_print_hook,
    connect_studio,
    disconnect_studio,
)
from ._server import MAX_BODY_BYTES, Studio, serve
from ._spans import StudioSpanProcessor

__all__ = [
    "MAX_BODY_BYTES",
    "PageUserInput",
    "Studio",
    "StudioLink",
    "StudioSpanProcessor",
    "StudioUserInput",
    "as_studio_forward_message_pre_print_hook",
    "connect_studio",
    "disconnect_studio",
    "serve",
]
