"""Agents on Ray: an agent host is one Ray actor holding many agents, and a local proxy per
remote agent is itself an agent (the ``ray`` extra: ``pip install -e ".[ray]"`` in a clone).

See ``docs/distributed.md`` for when to use it, what crosses the wire and what happens when a
host dies.
"""

from ._host import AgentFactory, AgentHost
from ._proxy import AgentHostDiedError, RemoteAgent

__all__ = ["AgentFactory", "AgentHost", "AgentHostDiedError", "RemoteAgent"]
