"""Hooks of ``reply`` / ``_reasoning`` / ``_acting`` are woven into agent classes on demand.

Weaving is process-wide and one-way, so each check runs in a fresh interpreter (the test
process has long since registered hooks of every kind).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import sys
    import anyio
    from agentscope_rt.agent import AgentBase, ReActAgent
    from agentscope_rt.agent._hooks import wrapped_function
    from agentscope_rt.message import Msg

    class Echo(AgentBase):
        async def reply(self, msg):
            return Msg("echo", msg.get_text_content(), "assistant")

        async def observe(self, msg):
            return None

    # Nothing registered yet: the classes keep their own methods (no wrapper to run) ...
    assert wrapped_function(Echo.__dict__["reply"]) is None
    assert wrapped_function(ReActAgent.__dict__["_reasoning"]) is None
    # ... but the methods that check their input are always wrapped.
    assert wrapped_function(Echo.__dict__["observe"]) is not None

    calls = []

    async def main():
        a = Echo()
        a.set_console_output_enabled(False)
        assert (await a(Msg("u", "one", "user"))).get_text_content() == "one"
        a.register_instance_hook("pre_reply", "seen", lambda self, kw: calls.append("inst"))
        # Every agent class defining reply is woven now, ReActAgent's acting and reasoning not.
        assert wrapped_function(Echo.__dict__["reply"]) is not None
        assert wrapped_function(ReActAgent.__dict__["reply"]) is not None
        assert wrapped_function(ReActAgent.__dict__["_reasoning"]) is None
        await a(Msg("u", "two", "user"))
        assert calls == ["inst"], calls

        class Later(Echo):  # defined after weaving: wrapped when created
            async def reply(self, msg):
                return await super().reply(msg)

        assert wrapped_function(Later.__dict__["reply"]) is not None
        Later.register_class_hook("pre_reply", "cls", lambda self, kw: calls.append("cls"))
        b = Later()
        b.set_console_output_enabled(False)
        assert (await b(Msg("u", "three", "user"))).get_text_content() == "three"
        assert calls == ["inst", "cls"], calls  # once per call, though super().reply ran
        ReActAgent.register_class_hook("post_acting", "x", lambda self, kw, out: None)
        assert wrapped_function(ReActAgent.__dict__["_acting"]) is not None
        assert wrapped_function(ReActAgent.__dict__["_reasoning"]) is None

    anyio.run(main, backend=sys.argv[1])
    print("ok")
    """
)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_hooks_are_woven_on_first_registration(backend: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, backend], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
