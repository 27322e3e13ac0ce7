"""Agents: stateful actors whose replies run in cancel scopes they own.

:class:`AgentBase` gives every agent hooks, interruption (cancelling the reply's scope),
serialised calls, incremental printing and broadcasting to subscribers;
:class:`ReActAgentBase` adds the reasoning/acting steps and their hooks; :class:`UserAgent`
brings a human into the conversation.

AgentScope's ``agentscope.agent.A2AAgent`` and ``agentscope.agent.StudioUserInput`` answer here
too (:class:`agentscope_rt.a2a.A2AAgent`, :class:`agentscope_rt.studio.StudioUserInput`): each is
imported, with its package and that package's extra, when first read. They are in ``dir()``
but not in ``__all__``, so ``from agentscope_rt.agent import *`` needs no extra.
"""

from typing import TYPE_CHECKING, Any

from .._moved import moved_attribute
from ..realtime import RealtimeAgent  # AgentScope exports it here
from ._agent_base import AgentBase, PrintedChunk, Speech
from ._checks import check_msg_input
from ._compression import CompressionConfig, SummarySchema
from ._console import DISABLE_CONSOLE_ENV
from ._durable import CUT_OFF_TEXT
from ._generate_reason import GenerateReason
from ._react_agent import ReActAgent
from ._react_agent_base import ReActAgentBase
from ._subscription import HubLink, LockWaitWatcher, set_lock_wait_watcher
from ._user_agent import UserAgent
from ._user_input import TerminalUserInput, UserInputBase, UserInputData

__all__ = [
    "CUT_OFF_TEXT",
    "DISABLE_CONSOLE_ENV",
    "AgentBase",
    "CompressionConfig",
    "GenerateReason",
    "HubLink",
    "LockWaitWatcher",
    "PrintedChunk",
    "ReActAgent",
    "ReActAgentBase",
    "RealtimeAgent",
    "Speech",
    "SummarySchema",
    "TerminalUserInput",
    "UserAgent",
    "UserInputBase",
    "UserInputData",
    "check_msg_input",
    "set_lock_wait_watcher",
]

# AgentScope's names for classes of the packages above (agentscope_rt._moved says why).
_MOVED = {"A2AAgent": "agentscope_rt.a2a", "StudioUserInput": "agentscope_rt.studio"}

if not TYPE_CHECKING:
    # Hidden from type checkers: to them a module __getattr__ makes every misspelt name of this
    # package an Any; they find these classes, typed, at their own paths.
    def __getattr__(name: str) -> Any:
        return moved_attribute(__name__, name, _MOVED)


def __dir__() -> list[str]:
    return sorted({*globals(), *_MOVED})
