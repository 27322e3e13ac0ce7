"""agentscope-rt: AgentScope's multi-agent framework on structured concurrency.

The package is layered; each layer depends only on those below it:

* foundation — :mod:`.message` (attrs Msg and blocks), :mod:`.module` (StateModule),
  ``_serde`` (the shared cattrs converter), :mod:`.exception`;
* core — :mod:`.agent`, :mod:`.model`, :mod:`.formatter`, :mod:`.tool`, :mod:`.memory`,
  :mod:`.token`;
* framework — :mod:`.pipeline` (MsgHub and pipelines), :mod:`.mcp`.

Public names live in each sub-package's ``__init__``; modules named ``_x.py`` are private.
Everything runs on anyio, so applications may use trio or asyncio.
"""

from ._version import __version__

__all__ = ["__version__"]
