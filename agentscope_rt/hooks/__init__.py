"""AgentScope's ``agentscope.hooks``: the hook that forwards what agents print to AgentScope
Studio.

:func:`as_studio_forward_message_pre_print_hook` is
:func:`agentscope_rt.studio.as_studio_forward_message_pre_print_hook`, imported with the
studio package (and its ``studio`` extra) when first read, so importing this package needs no
extra.
"""

from typing import Any

from .._moved import moved_attribute

__all__ = ["as_studio_forward_message_pre_print_hook"]

_MOVED = {"as_studio_forward_message_pre_print_hook": "agentscope_rt.studio"}


def __getattr__(name: str) -> Any:
    return moved_attribute(__name__, name, _MOVED)


def __dir__() -> list[str]:
    return sorted({*globals(), *_MOVED})
