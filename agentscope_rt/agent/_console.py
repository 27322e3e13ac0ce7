"""Incremental console printing of (possibly streamed) messages.

A streamed message arrives as cumulative chunks that share one ``msg.id``. The console shows
each character once: per message id we remember only how many characters of its rendering
have been written, and write the new suffix of each chunk. The last chunk (``last=True``)
writes the non-text blocks (tool calls and results, as JSON), closes the message with a
newline and forgets it, so the state lives only while a message is streaming.
"""

from __future__ import annotations

import json
import os
import sys

from ..message import Msg, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from ..message.serde import unstructure

__all__ = [
    "AGENTSCOPE_DISABLE_CONSOLE_ENV",
    "DISABLE_CONSOLE_ENV",
    "ConsolePrinter",
    "console_disabled_globally",
    "render_text",
]

DISABLE_CONSOLE_ENV = "AGENTSCOPE_RT_DISABLE_CONSOLE_OUTPUT"
"""Set this environment variable to ``true`` to silence every agent's console output; set to
anything else (``false``) it keeps the console on, whatever
:data:`AGENTSCOPE_DISABLE_CONSOLE_ENV` says."""

AGENTSCOPE_DISABLE_CONSOLE_ENV = "AGENTSCOPE_DISABLE_CONSOLE_OUTPUT"
"""AgentScope's variable, honoured too so that AgentScope deployments stay quiet: ``true``
silences every agent's console output unless :data:`DISABLE_CONSOLE_ENV` is set."""


def console_disabled_globally() -> bool:
    """Whether the environment silences every agent's console output.

    This package's own :data:`DISABLE_CONSOLE_ENV` decides when it is set (non-empty): the
    console is off exactly when it is ``true`` (case-insensitive). Only when it is unset does
    AgentScope's :data:`AGENTSCOPE_DISABLE_CONSOLE_ENV` count, with the same rule. Read on
    every call, so changing the environment at run time takes effect at the next print.
    """
    environ = os.environ
    value = environ.get(DISABLE_CONSOLE_ENV, "").strip()
    if not value:
        value = environ.get(AGENTSCOPE_DISABLE_CONSOLE_ENV, "").strip()
    return value.lower() == "true"


def render_text(msg: Msg) -> str:
    """The text and thinking of *msg* as printed: the speaker's name once, thinking marked
    ``(thinking)``, one line break between blocks. Empty when there is no text or thinking."""
    content = msg.content
    if content.__class__ is str:
        return f"{msg.name}: {content}"
    parts: list[str] = []
    for block in content:
        if block.__class__ is TextBlock:
            parts.append(block.text)
        elif block.__class__ is ThinkingBlock:
            parts.append(f"(thinking) {block.thinking}")
    if not parts:
        return ""
    return f"{msg.name}: " + "\n".join(parts)


class ConsolePrinter:
    """Per-agent console state: whether the agent prints, and for each message being streamed,
    the length already written and whether the output so far ends with a newline.

    (Kept here rather than on the agent: an agent's instance dict stays within the number of
    attributes for which CPython shares one key table among all instances of a class.)
    """

    __slots__ = ("_open", "enabled")

    def __init__(self) -> None:
        self.enabled = True
        # None until a message streams: most agents (and every silent one) never need it.
        self._open: dict[str, tuple[int, bool]] | None = None

    @property
    def open_messages(self) -> int:
        """How many streamed messages have printed chunks but not their last one yet."""
        return len(self._open) if self._open else 0

    def close_all(self, enabled: bool) -> None:
        """Forget every message still streaming (its reply ended without a last chunk, e.g.
        on interrupt), ending the console line when *enabled* and the output is mid-line."""
        if not self._open:
            return
        if enabled and any(not ends_newline for _, ends_newline in self._open.values()):
            sys.stdout.write("\n")
            sys.stdout.flush()
        self._open.clear()

    def write(self, msg: Msg, last: bool) -> None:
        """Write what is new in *msg* to ``sys.stdout`` (see the module docstring)."""
        out = sys.stdout
        streaming = self._open
        if streaming is None:
            streaming = self._open = {}
        written, ends_newline = streaming.get(msg.id, (0, True))
        rendered = render_text(msg)
        if len(rendered) > written:
            chunk = rendered[written:]
            out.write(chunk)
            written = len(rendered)
            ends_newline = chunk.endswith("\n")
        if not last:
            streaming[msg.id] = (written, ends_newline)
            out.flush()
            return
        streaming.pop(msg.id, None)
        if msg.content.__class__ is not str:
            for block in msg.content:
                if block.__class__ is ToolUseBlock or block.__class__ is ToolResultBlock:
                    text = json.dumps(unstructure(block), indent=4, ensure_ascii=False)
                    if written:
                        out.write(("" if ends_newline else "\n") + text)
                    else:
                        out.write(f"{msg.name}: {text}")
                    written += len(text) + 1
                    ends_newline = False
        if written and not ends_newline:
            out.write("\n")
        out.flush()
