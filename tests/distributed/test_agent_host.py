"""Agents on Ray agent hosts used through proxies: replies, observation, hubs and pipelines
with local agents, hooks, interrupts, state, remote errors, dead hosts, bad input. Kept few
and small (each host is a process); they share the session's local Ray cluster."""

from __future__ import annotations

import importlib
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.agent import GenerateReason
from agentscope_rt.distributed import AgentHost, AgentHostDiedError, RemoteAgent
from agentscope_rt.exception import StateError
from agentscope_rt.message import Msg
from agentscope_rt.pipeline import MsgHub, fanout_pipeline, sequential_pipeline

from ._agents import Echo, UnpicklableFactory, make_echo, make_nothing


async def test_proxies_reply_observe_and_mix_with_local_agents_in_hubs_and_pipelines(
    ray_cluster: Any,
) -> None:
    with anyio.fail_after(120):
        async with AgentHost("h-mix") as host:
            remote = await host.create_agents(make_echo, [{"name": "r0"}, {"name": "r1"}])
            assert [type(a) for a in remote] == [RemoteAgent, RemoteAgent]
            assert [a.name for a in remote] == ["r0", "r1"] and await host.count() == 2
            local = Echo("local")
            seen: list[str] = []

            def pre(agent: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
                kwargs["msg"] = Msg("user", "hooked", "user")
                return kwargs

            def post(agent: Any, kwargs: dict[str, Any], output: Msg) -> None:
                seen.append(output.get_text_content() or "")

            remote[0].register_instance_hook("pre_reply", "pre", pre)
            remote[0].register_instance_hook("post_reply", "post", post)

            reply = await remote[0](Msg("user", "hi", "user"))
            assert reply.get_text_content() == "r0: hooked (heard 0)"
            assert seen == ["r0: hooked (heard 0)"] and isinstance(reply, Msg)
            remote[0].clear_instance_hooks()

            async with MsgHub(
                [remote[0], local, remote[1]], announcement=Msg("host", "go", "user")
            ):
                await sequential_pipeline([remote[0], local, remote[1]])
            # Each heard the announcement and the others' replies (not its own).
            assert remote[1].state_dict()["heard"] == [
                "go",
                "r0: None (heard 1)",
                "local: r0: None (heard 1) (heard 2)",
            ]
            assert local.heard == [
                "go",
                "r0: None (heard 1)",
                "r1: local: r0: None (heard 1) (heard 2) (heard 3)",
            ]

            replies = await fanout_pipeline([remote[0], local, remote[1]], Msg("user", "x", "user"))
            assert [r.get_text_content() for r in replies] == [
                "r0: x (heard 3)",
                "local: x (heard 3)",
                "r1: x (heard 3)",
            ]


async def test_interrupting_a_proxy_interrupts_the_remote_reply(ray_cluster: Any) -> None:
    with anyio.fail_after(120):
        async with AgentHost("h-int") as host:
            agent = await host.create_agent(make_echo, name="sleeper", slow=True)
            started = anyio.Event()
            answers: list[Msg] = []

            def pre(_agent: Any, kwargs: dict[str, Any]) -> None:
                started.set()

            agent.register_instance_hook("pre_reply", "started", pre)

            async def call() -> None:
                answers.append(await agent(Msg("user", "take your time", "user")))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await started.wait()
                await anyio.sleep(0.5)  # let the call reach the host (either way is handled)
                agent.interrupt()
            assert answers[0].get_text_content() == "sleeper was interrupted"
            assert agent.generate_reason is GenerateReason.INTERRUPTED

            # An outer cancellation interrupts the remote reply too and propagates.
            with anyio.move_on_after(0.5) as scope:
                await agent(Msg("user", "again", "user"))
            assert scope.cancelled_caught
            # The remote agent is free again (its reply ended): a plain call answers.
            agent.clear_instance_hooks()
            state = agent.state_dict()
            assert state["name"] == "sleeper"


async def test_state_crosses_as_the_agents_own_layout_and_bad_state_is_refused(
    ray_cluster: Any,
) -> None:
    with anyio.fail_after(120):
        async with AgentHost("h-state") as host:
            agent = await host.create_agent(make_echo, name="keeper")
            await agent.observe([Msg("a", "one", "user"), Msg("b", "two", "user")])
            local = Echo("keeper")
            await local.observe([Msg("a", "one", "user"), Msg("b", "two", "user")])
            assert agent.state_dict() == local.state_dict()

            agent.load_state_dict({"name": "keeper", "heard": ["x: y"]})
            assert (await agent(Msg("user", "q", "user"))).get_text_content() == (
                "keeper: q (heard 1)"
            )
            with pytest.raises(StateError):
                agent.load_state_dict({"name": "keeper", "heard": 3})
            with pytest.raises(StateError):
                agent.load_state_dict({"name": object()})  # type: ignore[dict-item]
            assert agent.state_dict()["heard"] == ["x: y"]  # nothing lost
        # A closed host's agents are gone too.
        with pytest.raises(AgentHostDiedError, match=r"closed.*'keeper'"):
            await agent(Msg("user", "q", "user"))


async def test_remote_errors_keep_their_type_and_bad_input_is_refused(ray_cluster: Any) -> None:
    with anyio.fail_after(120):
        async with AgentHost("h-err") as host:
            agent = await host.create_agent(make_echo, name="e")
            with pytest.raises(ValueError, match="e was asked to fail"):
                await agent(Msg("user", "x", "user"), fail=True)
            with pytest.raises(TypeError, match="JSON"):
                await agent(Msg("user", "x", "user"), model=object())
            reply = await agent(Msg("user", "x", "user"), style="short")
            assert reply.metadata == {"kwargs": {"style": "short"}}
            with pytest.raises(TypeError, match="must return an AgentBase"):
                await host.create_agent(make_nothing, name="n")
            with pytest.raises(TypeError, match="cannot be sent"):
                await host.create_agent(UnpicklableFactory(), name="u")
            assert await host.count() == 1


async def test_a_dead_host_is_an_error_naming_the_agent_also_inside_a_hub(
    ray_cluster: Any,
) -> None:
    with anyio.fail_after(120):
        async with AgentHost("h-dead") as host:
            agent = await host.create_agent(make_echo, name="doomed")
            local = Echo("speaker")
            await anyio.to_thread.run_sync(ray_cluster.kill, host.actor)
            with pytest.raises(AgentHostDiedError, match=r"h-dead.*'doomed'"):
                await agent(Msg("user", "x", "user"))
            with pytest.raises(AgentHostDiedError, match="doomed"):
                agent.state_dict()
            # A hub with a dead member ends as with any observer that raises: the body is
            # cancelled and the hub exits with the error in an ExceptionGroup.
            caught: list[BaseException] = []
            try:
                async with MsgHub([local, agent]):
                    await local()
            except* AgentHostDiedError as group:
                caught += group.exceptions
            assert len(caught) == 1 and "'doomed'" in str(caught[0])
            assert "dead" in repr(host)


_DRIVER_ONLY_MODULE = """
from agentscope_rt.agent import AgentBase
from agentscope_rt.message import Msg


class Parrot(AgentBase):
    def __init__(self, name):
        super().__init__()
        self.name = name

    async def reply(self, msg=None, **kwargs):
        return Msg(self.name, f"{self.name} says {msg.get_text_content()}", "assistant")

    async def observe(self, msg):
        pass


def make_parrot(name):
    return Parrot(name)
"""


async def test_a_factory_in_a_module_only_this_process_can_import_reaches_the_host(
    tmp_path: Path, ray_cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A folder on this process's path only: the host imports the module only if it is sent.
    name = f"driver_only_{uuid.uuid4().hex[:12]}"
    (tmp_path / f"{name}.py").write_text(_DRIVER_ONLY_MODULE, "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(name)
    monkeypatch.delitem(sys.modules, name)  # put back as it was when the test ends
    monkeypatch.setitem(sys.modules, name, module)
    with anyio.fail_after(120):
        async with AgentHost("h-module") as host:
            # With this process's PYTHONPATH naming the folder, the host is taken to have it
            # (as a cluster this process starts has) and nothing is sent; this cluster was
            # started without it: a TypeError naming the module, not Ray's own error.
            with monkeypatch.context() as patch:
                patch.setenv("PYTHONPATH", str(tmp_path))
                with pytest.raises(TypeError, match=f"cannot load.*module named '{name}'"):
                    await host.create_agent(module.make_parrot, name="polly")
            agent = await host.create_agent(module.make_parrot, name="polly")
            reply = await agent(Msg("user", "hello", "user"))
    assert reply.get_text_content() == "polly says hello"
