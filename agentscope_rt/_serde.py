"""The shared (un)structuring of agentscope-rt, for every package.

The cattrs converter and the message codec live with the classes they handle, in
:mod:`agentscope_rt.message` (its private ``_convert`` module); the JSON-data checks live in
:mod:`agentscope_rt._json`. This module is where the other packages (state modules, memories,
sessions, plans, documents, models, tools) find them; it holds no logic of its own.
"""

from __future__ import annotations

from ._json import MAX_JSON_DEPTH, MAX_TOOL_INPUT_DEPTH, check_json, tool_input_problem
from .message._convert import (
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
