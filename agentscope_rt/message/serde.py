"""The shared (un)structuring of agentscope-rt: the cattrs converter every package uses.

:data:`converter` turns messages, blocks and the other attrs classes into JSON-ready data and
back (AgentScope 1.0's shapes); register hooks on it for your own state types. The functions
here are that converter's entry points for messages and blocks, plus the JSON-data checks
(:func:`check_json`, the depth limits) that saving applies. The converter and the hand-written
message codec live with the classes they handle (``_convert``, ``_codec``); the checks in
``agentscope_rt._json``. This module holds no logic of its own.
"""

from __future__ import annotations

from .._json import MAX_JSON_DEPTH, MAX_TOOL_INPUT_DEPTH, check_json, tool_input_problem
from ._convert import (
    checked_msg_json,
    converter,
    fast_structure_msg,
    structure,
    structure_block,
    structure_msg,
    unstructure,
    unstructure_block,
    unstructure_msg,
)

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_TOOL_INPUT_DEPTH",
    "check_json",
    "checked_msg_json",
    "converter",
    "fast_structure_msg",
    "structure",
    "structure_block",
    "structure_msg",
    "tool_input_problem",
    "unstructure",
    "unstructure_block",
    "unstructure_msg",
]
