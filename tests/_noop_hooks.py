"""A do-nothing agent hook of every kind, as an application with hooks has them registered."""

from __future__ import annotations

from typing import Any

NAME = "test_suite_does_nothing"


def register_noop_hooks() -> list[tuple[Any, str]]:
    """Register a class hook of every kind (pre and post) that changes nothing; return the
    ``(class, hook_type)`` pairs registered, for :func:`remove_noop_hooks`."""
    from agentscope_rt.agent import AgentBase, ReActAgentBase

    registered: list[tuple[Any, str]] = []
    for cls, kinds in (
        (AgentBase, ("reply", "print", "observe")),
        (ReActAgentBase, ("reasoning", "acting")),
    ):
        for kind in kinds:
            cls.register_class_hook(f"pre_{kind}", NAME, lambda agent, kwargs: None)
            cls.register_class_hook(f"post_{kind}", NAME, lambda agent, kwargs, output: None)
            registered += [(cls, f"pre_{kind}"), (cls, f"post_{kind}")]
    return registered


def remove_noop_hooks(registered: list[tuple[Any, str]]) -> None:
    """Remove what :func:`register_noop_hooks` registered (those a test cleared are gone)."""
    from agentscope_rt.agent._hooks import own_class_hooks

    for cls, hook_type in registered:
        if NAME in own_class_hooks(cls, hook_type):
            cls.remove_class_hook(hook_type, NAME)
