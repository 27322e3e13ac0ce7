"""A2A (Agent2Agent protocol) both ways: call remote agents, and serve agents.

* :class:`A2AAgent` — a remote A2A agent used like any other agent (AgentScope's ``A2AAgent``),
  over a2a-sdk 1.x's client, talking protocol 1.0 or 0.3 as the agent's card says;
  :class:`A2AChatFormatter` converts messages; :class:`FileAgentCardResolver` and
  :class:`WellKnownAgentCardResolver` find cards, and :class:`NacosAgentCardResolver` asks a
  Nacos 3 registry for them (over its HTTP API).
* :class:`A2AServer` — serves any agent to A2A clients (agent card, JSON-RPC, SSE streaming,
  protocol 1.0 and 0.3), on Starlette and hypercorn, under trio or asyncio;
  :class:`A2AUserInput` turns a :class:`~agentscope_rt.agent.UserAgent`'s need for input into
  the task's ``input-required`` state; :class:`A2AAuth` says which credentials it accepts.

Needs the ``a2a`` extra (a2a-sdk 1.x, Starlette, hypercorn).
"""

from . import _sdk  # noqa: F401  (the clear error when the extra is missing comes first)
from ._agent import A2AAgent, Consumer
from ._auth import A2AAuth
from ._card import (
    AgentCardResolverBase,
    FileAgentCardResolver,
    WellKnownAgentCardResolver,
    build_agent_card,
    card_to_dict,
    to_agent_card,
)
from ._formatter import A2AChatFormatter
from ._nacos import NacosAgentCardResolver, NacosClientConfig
from ._server import A2AServer, A2AUserInput

__all__ = [
    "A2AAgent",
    "A2AAuth",
    "A2AChatFormatter",
    "A2AServer",
    "A2AUserInput",
    "AgentCardResolverBase",
    "Consumer",
    "FileAgentCardResolver",
    "NacosAgentCardResolver",
    "NacosClientConfig",
    "WellKnownAgentCardResolver",
    "build_agent_card",
    "card_to_dict",
    "to_agent_card",
]
