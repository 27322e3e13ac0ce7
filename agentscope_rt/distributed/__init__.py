"""Agents on Ray: an agent host is one Ray actor holding many agents, and a local proxy per
remote agent is itself an agent, and a group handle reaches many agents of a host in one call
(the ``ray`` extra: ``pip install -e ".[ray]"`` in a clone).

See ``docs/distributed.md`` for when to use it, what crosses the wire and what happens when a
host dies.
"""

from ._group import GROUP_CONCURRENCY, RemoteGroup, broadcast_groups, fanout_groups
from ._host import AgentFactory, AgentHost, GroupFactory
from ._proxy import AgentHostDiedError, RemoteAgent

__all__ = [
    "GROUP_CONCURRENCY",
    "AgentFactory",
    "AgentHost",
    "AgentHostDiedError",
    "GroupFactory",
    "RemoteAgent",
    "RemoteGroup",
    "broadcast_groups",
    "fanout_groups",
]
