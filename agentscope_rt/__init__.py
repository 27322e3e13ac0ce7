"""agentscope-rt: AgentScope's multi-agent framework on structured concurrency.

The package is layered; each layer depends only on those below it:

* foundation — :mod:`.message` (attrs Msg and blocks), :mod:`.module` (StateModule),
  ``_serde`` (the shared cattrs converter, kept in :mod:`.message`), ``_json`` (the JSON-data
  checks), :mod:`.exception`, :mod:`.types`;
* core — :mod:`.agent`, :mod:`.model`, :mod:`.formatter`, :mod:`.tool`, :mod:`.memory`,
  :mod:`.token`;
* framework — :mod:`.pipeline` (MsgHub and pipelines), :mod:`.mcp`, :mod:`.plan`, :mod:`.rag`,
  :mod:`.a2a` (needs the ``a2a`` extra), :mod:`.evaluate`, :mod:`.distributed` (needs the
  ``ray`` extra).

Public names live in each sub-package's ``__init__``; modules named ``_x.py`` are private.
Everything runs on anyio, so applications may use trio or asyncio.

As in AgentScope, ``import agentscope_rt`` makes every sub-package reachable as an attribute
(``agentscope_rt.agent.ReActAgent``). Here they are imported on first access rather than all at
once, so a program pays only for the sub-packages it uses.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ._version import __version__

SUBPACKAGES = frozenset(
    {
        "a2a",
        "agent",
        "distributed",
        "embedding",
        "evaluate",
        "exception",
        "formatter",
        "mcp",
        "memory",
        "message",
        "model",
        "module",
        "pipeline",
        "plan",
        "rag",
        "session",
        "token",
        "tool",
        "types",
    }
)
"""The public sub-packages, each imported when first read as an attribute of the package."""

__all__ = ["__version__", *sorted(SUBPACKAGES)]


def __getattr__(name: str) -> ModuleType:
    # Called only for names not already set: once imported, a sub-package is an ordinary
    # attribute of this module (the import system sets it), so later reads cost nothing.
    if name in SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *SUBPACKAGES})
