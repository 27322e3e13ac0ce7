"""How classes defined while tracing is on get their spans.

Tracing costs nothing while it is off because nothing is in the way: the routes it observes
(an agent's ``__call__``, a chat or embedding model's ``__call__``, a formatter's
``format``, ``Toolkit.call_tool_function``) are wrapped only while tracing is enabled
(:func:`agentscope_rt.tracing.enable_tracing`), and put back when it is disabled. The base
classes of those routes call :func:`class_defined` from ``__init_subclass__`` so that a class
defined while tracing is on is wrapped too; while it is off that is one attribute test per
class definition, never per call. This module knows nothing of OpenTelemetry.

Agent hooks are woven on demand the same way (``agentscope_rt.agent``): both walk a class's
whole family with :func:`family`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

__all__ = ["class_defined", "family", "set_class_hook"]

_class_hook: Callable[[type], None] | None = None


def class_defined(cls: type) -> None:
    """Called by the traced base classes for each subclass they get."""
    hook = _class_hook
    if hook is not None:
        hook(cls)


def set_class_hook(hook: Callable[[type], None] | None) -> None:
    """Have *hook* called with every class defined from now on (``None``: stop)."""
    global _class_hook
    _class_hook = hook


def family(base: type) -> Iterator[type]:
    """*base* and every class derived from it (directly or not), each once."""
    seen: set[type] = set()
    pending = [base]
    while pending:
        cls = pending.pop()
        if cls in seen:
            continue
        seen.add(cls)
        yield cls
        pending.extend(cls.__subclasses__())
