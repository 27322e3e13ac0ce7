"""Agents: stateful actors whose replies run in cancel scopes they own.

:class:`AgentBase` gives every agent hooks, interruption (cancelling the reply's scope),
serialised calls, incremental printing and broadcasting to subscribers;
:class:`ReActAgentBase` adds the reasoning/acting steps and their hooks; :class:`UserAgent`
brings a human into the conversation.
"""

from ..realtime import RealtimeAgent  # AgentScope exports it here
from ._agent_base import AgentBase, PrintedChunk, Speech
from ._checks import check_msg_input
from ._compression import CompressionConfig, SummarySchema
from ._console import DISABLE_CONSOLE_ENV
from ._generate_reason import GenerateReason
from ._react_agent import ReActAgent
from ._react_agent_base import ReActAgentBase
from ._subscription import HubLink, LockWaitWatcher, set_lock_wait_watcher
from ._user_agent import UserAgent
from ._user_input import TerminalUserInput, UserInputBase, UserInputData

__all__ = [
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
