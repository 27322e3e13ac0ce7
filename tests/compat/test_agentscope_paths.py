"""A program written for AgentScope ports by renaming ``agentscope`` to ``agentscope_rt`` in its
imports: the names AgentScope exports from a lower package than ours import from its path too,
are the very objects of ours, and cost nothing (no extra, no package above) until read."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

# (AgentScope's module, name, where the object lives here)
_MOVED = [
    ("agentscope.agent", "A2AAgent", "agentscope_rt.a2a"),
    ("agentscope.agent", "StudioUserInput", "agentscope_rt.studio"),
    ("agentscope.formatter", "A2AChatFormatter", "agentscope_rt.a2a"),
    ("agentscope.hooks", "as_studio_forward_message_pre_print_hook", "agentscope_rt.studio"),
]


def _ported(module: str) -> str:
    return module.replace("agentscope", "agentscope_rt", 1)


@pytest.mark.parametrize(("module", "name", "home"), _MOVED, ids=[m[1] for m in _MOVED])
def test_agentscopes_import_path_gives_our_object(module: str, name: str, home: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {_ported(module)} import {name}", namespace)
    assert namespace[name] is getattr(importlib.import_module(home), name)
    assert name in dir(importlib.import_module(_ported(module)))


def test_importing_the_packages_loads_no_extra_and_nothing_above() -> None:
    code = (
        "import sys, agentscope_rt, agentscope_rt.agent, agentscope_rt.formatter, "
        "agentscope_rt.hooks\n"
        "print(sorted(m for m in ('a2a', 'starlette', 'wsproto', 'hypercorn', "
        "'agentscope_rt.a2a', 'agentscope_rt.studio') if m in sys.modules))\n"
        "from agentscope_rt.agent import *\n"
        "from agentscope_rt.formatter import *\n"
        "print(sorted(m for m in ('agentscope_rt.a2a', 'agentscope_rt.studio') if m in "
        "sys.modules))\n"
        "from agentscope_rt.agent import A2AAgent\n"
        "print('agentscope_rt.a2a' in sys.modules, 'agentscope_rt.studio' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["[]", "[]", "True False"]


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import agentscope_rt.agent
    import agentscope_rt.hooks

    with pytest.raises(AttributeError, match=r"agentscope_rt\.agent' has no attribute 'A2AAgnt'"):
        agentscope_rt.agent.A2AAgnt  # noqa: B018
    with pytest.raises(ImportError):
        from agentscope_rt.hooks import no_such_hook  # noqa: F401


def test_without_the_extra_the_ported_import_names_it() -> None:
    code = (
        "import sys\n"
        "sys.modules['a2a'] = None\n"
        "try:\n"
        "    from agentscope_rt.agent import A2AAgent\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "'a2a' extra" in out and 'pip install -e ".[a2a]"' in out
