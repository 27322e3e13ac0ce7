"""Names that AgentScope exports from a lower package but that live, here, in a package above
it (``agentscope.agent.A2AAgent`` is :class:`agentscope_rt.a2a.A2AAgent`).

A ported program changes only its imports, so the lower package answers to the name too. It
cannot import the higher package when it is itself imported: the layers would point up, and
the higher package's optional dependencies (a2a-sdk, Starlette, wsproto) would be needed by
everyone. So the lower package's module ``__getattr__`` imports the home package on first
access to the name, by its module name (an import that runs only then, never at import time).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["moved_attribute"]


def moved_attribute(module: str, name: str, homes: Mapping[str, str]) -> Any:
    """The object *name* of *module*, imported from its home package on first access and kept
    as an ordinary attribute of *module*, so later reads do not come here again.

    :param module: the module asked (its ``__name__``).
    :param name: the attribute asked for.
    :param homes: for each moved name, the module it is imported from.
    :raises AttributeError: when *name* is not one of *homes*, as for any missing attribute.
    :raises ImportError: when the home package's extra is not installed (the error names it).
    """
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    setattr(sys.modules[module], name, value)
    return value
