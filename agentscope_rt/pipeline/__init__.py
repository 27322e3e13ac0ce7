"""Multi-agent collaboration: message hubs and pipelines.

:class:`MsgHub` lets a group of agents hear each other's replies, through bounded inboxes and
delivery tasks in a task group the hub owns. :func:`sequential_pipeline` chains agents,
:func:`fanout_pipeline` runs them side by side in a task group, and
:func:`stream_printing_messages` turns what agents print into an async iterator.
"""

from ..realtime import ChatRoom  # AgentScope exports it here
from ._class import FanoutPipeline, SequentialPipeline
from ._functional import fanout_pipeline, sequential_pipeline, stream_printing_messages
from ._msghub import (
    DEFAULT_INBOX_SIZE,
    SLOW_OBSERVE_SECONDS,
    HubObserver,
    MsgHub,
    add_hub_observer,
    remove_hub_observer,
)

__all__ = [
    "DEFAULT_INBOX_SIZE",
    "SLOW_OBSERVE_SECONDS",
    "ChatRoom",
    "FanoutPipeline",
    "HubObserver",
    "MsgHub",
    "SequentialPipeline",
    "add_hub_observer",
    "fanout_pipeline",
    "remove_hub_observer",
    "sequential_pipeline",
    "stream_printing_messages",
]
