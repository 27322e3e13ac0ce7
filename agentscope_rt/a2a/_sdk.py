"""The check that a2a-sdk 1.x is installed, done once when :mod:`agentscope_rt.a2a` is imported,
so that a missing ``a2a`` extra is one clear error rather than a failure deep in a call."""

from __future__ import annotations

from .._extras import install_command, missing_extra

__all__ = ["INSTALL_HINT"]

INSTALL_HINT = (
    "agentscope_rt.a2a needs a2a-sdk 1.x, Starlette and hypercorn: install the 'a2a' extra "
    f"with {install_command('a2a')}"
)

try:
    import a2a.types as _types
    import hypercorn as _hypercorn  # noqa: F401
    import starlette as _starlette  # noqa: F401
except ImportError as exc:
    raise missing_extra(
        "agentscope_rt.a2a (a2a-sdk 1.x, Starlette and hypercorn)", "a2a", exc.name
    ) from exc

if not hasattr(_types, "StreamResponse"):
    # a2a-sdk 0.3 (AgentScope's pin) has pydantic types of protocol 0.3 under the same names.
    raise ImportError(f"{INSTALL_HINT}; the installed a2a-sdk is older than 1.0")
