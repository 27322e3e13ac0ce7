"""Agent hooks as interceptors of the agent routes: registered exactly while a hook exists, and
a reply that does the same with or without hooks and tracing in the way."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentscope_rt import _intercept
from agentscope_rt.agent import ReActAgent
from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.tool import Toolkit, ToolResponse
from agentscope_rt.tracing import disable_tracing, enable_tracing

from .._noop_hooks import register_noop_hooks, remove_noop_hooks
from ..react._support import call, history, make_agent, response, text
from ._support import EchoAgent

# These check which interceptors are registered: they start from none.
pytestmark = pytest.mark.bare_routes


def hook_kinds() -> set[str]:
    """The route kinds agent hooks intercept now."""
    return {
        kind
        for kind, items in _intercept.installed().items()
        if any("agent hooks" in repr(item) for item in items)
    }


def user(text_: str = "hi") -> Msg:
    return Msg("user", text_, "user")


async def test_the_hooks_of_a_kind_are_intercepted_exactly_while_one_exists() -> None:
    agent = EchoAgent()
    assert hook_kinds() == set()
    agent.register_instance_hook("pre_reply", "a", lambda self, kw: None)
    agent.register_instance_hook("post_reply", "b", lambda self, kw, out: None)
    agent.register_instance_hook("pre_observe", "c", lambda self, kw: None)
    assert hook_kinds() == {"reply", "observe"}
    agent.register_instance_hook("pre_reply", "a", lambda self, kw: None)  # replaced, not added
    agent.remove_instance_hook("pre_reply", "a")
    assert hook_kinds() == {"reply", "observe"}  # post_reply is left
    agent.clear_instance_hooks("post_reply")
    assert hook_kinds() == {"observe"}
    EchoAgent.register_class_hook("pre_observe", "d", lambda self, kw: None)
    agent.clear_instance_hooks()
    assert hook_kinds() == {"observe"}  # the class hook is left
    EchoAgent.remove_class_hook("pre_observe", "d")
    assert hook_kinds() == set()
    assert (await agent(user())).get_text_content() == "hi"


def test_hooks_go_with_the_agent_or_class_that_held_them() -> None:
    agent = EchoAgent()
    agent.register_instance_hook("pre_print", "p", lambda self, kw: None)

    class Local(EchoAgent):
        pass

    Local.register_class_hook("post_observe", "o", lambda self, kw, out: None)
    assert hook_kinds() == {"print", "observe"}
    del agent, Local
    gc.collect()
    assert hook_kinds() == set()


def _toolkit() -> Toolkit:
    def add(a: int, b: int) -> ToolResponse:
        """Add two numbers.

        Args:
            a: the first.
            b: the second.
        """
        return ToolResponse(content=[text(str(a + b))])

    toolkit = Toolkit()
    toolkit.register_tool_function(add)
    return toolkit


async def _transcript() -> tuple[str, list[str]]:
    model = ScriptedChatModel([response(call("add", "c1", a=2, b=3)), response(text("It is 5."))])
    agent = make_agent(model, _toolkit())
    reply = await agent(user("2 + 3?"))
    return reply.get_text_content() or "", [repr(m.content) for m in await history(agent.memory)]


def _install_hooks_and_tracing(exporter: InMemorySpanExporter) -> list[Any]:
    registered = register_noop_hooks()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    enable_tracing(tracer_provider=provider)
    return registered


async def test_a_reply_is_the_same_with_and_without_hooks_and_tracing_in_the_way() -> None:
    assert _intercept.installed() == {}
    plain = await _transcript()
    exporter = InMemorySpanExporter()
    registered = _install_hooks_and_tracing(exporter)
    try:
        assert set(_intercept.installed()) >= {
            "call",
            "reply",
            "print",
            "reasoning",
            "acting",
            "chat",
            "format",
            "tool",
        }
        intercepted = await _transcript()
    finally:
        disable_tracing()
        remove_noop_hooks(registered)
    assert intercepted == plain
    assert plain[0] == "It is 5."
    names = sorted(span.name for span in exporter.get_finished_spans())
    assert names == [
        "chat scripted",
        "chat scripted",
        "execute_tool add",
        "format openai",
        "format openai",
        "invoke_agent Friday",
    ]


@pytest.mark.parametrize("kind", ["reply", "reasoning", "acting"])
def test_react_routes_are_in_place_before_any_hook(kind: str) -> None:
    method = {"reply": "reply", "reasoning": "_reasoning", "acting": "_acting"}[kind]
    route = _intercept.route_of(ReActAgent.__dict__[method])
    assert route is not None and route[0] == kind
