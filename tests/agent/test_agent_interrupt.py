"""Interrupting a reply cancels exactly the reply's scope; outer cancellation propagates."""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import pytest

from agentscope_rt._backend import reply_scope
from agentscope_rt.agent import GenerateReason
from agentscope_rt.message import Msg

from .._timing import finishes_within
from ._support import EchoAgent, FakeHubLink

LONG = 30.0


def user(text: str = "hi") -> Msg:
    return Msg("user", text, "user")


async def interrupt_later(agent: EchoAgent, delay: float = 0.05) -> None:
    await anyio.sleep(delay)
    agent.interrupt()


async def test_interrupt_long_reply_returns_handle_interrupt_msg_quickly() -> None:
    agent = EchoAgent(delay=LONG)
    async with anyio.create_task_group() as tg:
        tg.start_soon(interrupt_later, agent)
        async with finishes_within(what="the interrupted 30 s reply"):
            reply = await agent(user())
    assert reply.get_text_content() == "interrupted"
    assert agent.generate_reason == "interrupted"
    assert agent.generate_reason is GenerateReason.INTERRUPTED
    assert reply.metadata == {}  # the reason is the agent's, not in the reply
    assert reply.invocation_id == agent._reply_id
    assert agent.interrupt_calls == 1
    assert not agent.is_replying

    agent.delay = 0
    again = await agent(user("again"))
    assert again.get_text_content() == "again"
    assert agent.generate_reason is None  # reset by the new call
    assert again.metadata == {}
    assert agent.interrupt_calls == 1


async def test_outer_timeout_propagates_and_skips_handle_interrupt() -> None:
    agent = EchoAgent(delay=LONG)
    with pytest.raises(TimeoutError):
        with anyio.fail_after(0.05):
            await agent(user())
    assert agent.interrupt_calls == 0
    assert not agent.is_replying
    agent.delay = 0
    assert (await agent(user("ok"))).get_text_content() == "ok"


async def test_outer_cancel_landing_with_interrupt_wins() -> None:
    agent = EchoAgent(delay=LONG)
    results: list[Msg] = []

    async def call() -> None:
        results.append(await agent(user()))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await anyio.sleep(0.05)
        agent.interrupt()
        tg.cancel_scope.cancel()
    assert results == []
    assert agent.interrupt_calls == 0


async def test_interrupt_from_another_task_only_hits_current_call() -> None:
    agent = EchoAgent(delay=0.2)
    replies: dict[str, Msg] = {}

    async def call(text: str) -> None:
        replies[text] = await agent(user(text))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "first")
        await anyio.sleep(0.01)
        tg.start_soon(call, "second")
        await anyio.sleep(0.05)
        agent.interrupt()
    assert replies["first"].get_text_content() == "interrupted"
    assert replies["second"].get_text_content() == "second"
    assert agent.interrupt_calls == 1


async def test_interrupt_from_pre_reply_hook() -> None:
    agent = EchoAgent(delay=LONG)
    post_calls: list[Any] = []

    def pre(self: EchoAgent, kwargs: dict[str, Any]) -> None:
        self.interrupt()

    agent.register_instance_hook("pre_reply", "stop", pre)
    agent.register_instance_hook("post_reply", "seen", lambda s, k, o: post_calls.append(o))
    reply = await agent(user())
    assert reply.get_text_content() == "interrupted"
    assert agent.generate_reason == "interrupted"
    assert post_calls == []


async def test_interrupt_from_inside_reply_like_a_tool() -> None:
    class SelfStopping(EchoAgent):
        async def reply(self, msg: Msg | None = None, suffix: str = "") -> Msg:
            self.interrupt()  # as a tool of this reply would
            await anyio.sleep(LONG)
            raise AssertionError("not reached")

    agent = SelfStopping()
    reply = await agent(user())
    assert reply.get_text_content() == "interrupted"


async def reply_interrupted_from_worker_thread(agent: EchoAgent) -> Msg:
    """Call *agent* while an anyio worker thread interrupts it."""

    async def from_worker() -> None:
        await anyio.sleep(0.05)
        await anyio.to_thread.run_sync(agent.interrupt)

    async with anyio.create_task_group() as tg:
        tg.start_soon(from_worker)
        return await agent(user())


async def test_interrupt_from_anyio_worker_thread() -> None:
    agent = EchoAgent(delay=LONG)
    reply = await reply_interrupted_from_worker_thread(agent)
    assert reply.get_text_content() == "interrupted"
    assert agent.generate_reason == "interrupted"


async def test_interrupt_from_foreign_thread() -> None:
    agent = EchoAgent(delay=LONG)
    started = threading.Event()

    def foreign() -> None:
        started.wait(5)
        time.sleep(0.05)
        agent.interrupt()

    thread = threading.Thread(target=foreign)
    thread.start()
    try:
        started.set()
        reply = await agent(user())
    finally:
        await anyio.to_thread.run_sync(thread.join)
    assert reply.get_text_content() == "interrupted"
    assert agent.generate_reason == "interrupted"


async def test_interrupt_when_idle_is_a_noop_and_awaitable() -> None:
    agent = EchoAgent()
    await agent.interrupt()
    agent.interrupt()
    reply = await agent(user("fine"))
    assert reply.get_text_content() == "fine"
    assert agent.interrupt_calls == 0


async def test_interrupt_reply_is_broadcast_and_gets_invocation_id() -> None:
    agent = EchoAgent(delay=LONG)
    listener = EchoAgent("listener")
    link = FakeHubLink([agent, listener])
    agent._attach_hub("hub", link)
    async with anyio.create_task_group() as tg:
        tg.start_soon(interrupt_later, agent)
        reply = await agent(user())
    assert [m.get_text_content() for m in listener.observed] == ["interrupted"]  # type: ignore[union-attr]
    assert reply.invocation_id is not None


async def test_handle_interrupt_must_return_msg() -> None:
    class Bad(EchoAgent):
        async def handle_interrupt(self, *args: Any, **kwargs: Any) -> Msg:
            return "nope"  # type: ignore[return-value]

    agent = Bad(delay=LONG)
    agent.register_instance_hook("pre_reply", "stop", lambda self, kwargs: self.interrupt())
    with pytest.raises(TypeError, match="handle_interrupt must return a Msg"):
        await agent(user())


async def test_default_handle_interrupt() -> None:
    class Plain(EchoAgent):
        handle_interrupt = EchoAgent.__mro__[1].handle_interrupt  # type: ignore[assignment]

    agent = Plain(delay=LONG)
    async with anyio.create_task_group() as tg:
        tg.start_soon(interrupt_later, agent)
        reply = await agent(user())
    assert reply.name == "echo"
    assert reply.metadata == {"_is_interrupted": True}  # AgentScope's, nothing added
    assert agent.generate_reason == "interrupted"


async def test_each_call_gets_a_fresh_scope_of_the_running_loop(anyio_backend: str) -> None:
    scope, loop = reply_scope()
    again, same_loop = reply_scope()
    assert scope is not again
    assert loop is same_loop and loop is not None
    if anyio_backend == "trio":
        import trio

        # anyio's trio scopes are trio scopes: the agent uses trio's own, one object fewer.
        assert isinstance(scope, trio.CancelScope)
    else:
        assert isinstance(scope, anyio.CancelScope)
    with anyio.CancelScope() as outer:
        with scope:
            outer.cancel()
            await anyio.sleep(LONG)
    assert outer.cancelled_caught and not scope.cancelled_caught


async def test_reply_scope_follows_sniffio_when_its_context_variable_names_the_library(
    anyio_backend: str,
) -> None:
    # A library that runs one loop inside another (trio-asyncio) names the current one in
    # sniffio's context variable; the scope must be of that library, as sniffio would say.
    import sniffio

    token = sniffio.current_async_library_cvar.set(anyio_backend)
    try:
        scope, loop = reply_scope()
    finally:
        sniffio.current_async_library_cvar.reset(token)
    assert loop is not None
    assert type(scope) is type(reply_scope()[0])


def test_reply_scope_outside_an_event_loop_is_sniffios_error() -> None:
    import sniffio

    with pytest.raises(sniffio.AsyncLibraryNotFoundError):
        reply_scope()


def test_interrupt_from_thread_reaches_the_loop_of_the_current_call() -> None:
    # One agent used under one event loop, then another: the loop token the agent keeps must
    # follow, or a thread's interrupt would go to a loop that no longer runs.
    agent = EchoAgent(delay=LONG)

    async def interrupted_from_thread() -> str:
        await reply_interrupted_from_worker_thread(agent)
        return str(agent.generate_reason)

    for backend in ("asyncio", "trio", "asyncio"):
        assert anyio.run(interrupted_from_thread, backend=backend) == "interrupted"


# -- interrupt(msg), as AgentScope's -------------------------------------------------------


class Recorder(EchoAgent):
    """An AgentScope-style agent: ``handle_interrupt(self, *args, **kwargs)``."""

    def __init__(self) -> None:
        super().__init__(delay=LONG)
        self.interrupt_args: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.interrupt_msgs: list[Msg | list[Msg] | None] = []

    async def handle_interrupt(self, *args: Any, **kwargs: Any) -> Msg:
        self.interrupt_args.append((args, kwargs))
        self.interrupt_msgs.append(self.interrupt_msg)
        return Msg(self.name, "stopped", "assistant")


async def test_interrupt_msg_is_kept_and_handle_interrupt_gets_the_calls_arguments() -> None:
    agent = Recorder()
    question = user("question")
    why = Msg("user", "stop, please", "user")

    async def stop() -> None:
        await anyio.sleep(0.05)
        await agent.interrupt(why)  # AgentScope's spelling: awaited, with a message

    async with anyio.create_task_group() as tg:
        tg.start_soon(stop)
        reply = await agent(question, suffix="!")
    assert reply.get_text_content() == "stopped"
    # As in AgentScope, handle_interrupt receives the interrupted call's own arguments ...
    assert agent.interrupt_args == [((question,), {"suffix": "!"})]
    # ... and the interrupt's message is readable, there and after the call.
    assert agent.interrupt_msgs == [why]
    assert agent.interrupt_msg is why
    assert agent.generate_reason == "interrupted"

    # It belongs to that call: the next call starts without one.
    agent.delay = 0
    assert (await agent(user("next"))).get_text_content() == "next"
    assert agent.interrupt_msg is None


async def test_interrupt_msg_from_another_thread_and_as_a_list() -> None:
    agent = Recorder()
    why = [Msg("user", "one", "user"), Msg("user", "two", "user")]

    def from_worker() -> None:
        time.sleep(0.05)
        agent.interrupt(why)

    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.to_thread.run_sync, from_worker)
        await agent(user())
    assert agent.interrupt_msgs == [why]


async def test_interrupt_without_msg_and_when_idle_keeps_none() -> None:
    agent = Recorder()
    agent.interrupt(Msg("user", "nobody is replying", "user"))  # idle: a no-op, nothing kept
    assert agent.interrupt_msg is None
    async with anyio.create_task_group() as tg:
        tg.start_soon(interrupt_later, agent)
        await agent(user())
    assert agent.interrupt_msgs == [None]


async def test_interrupt_with_a_bad_msg_is_refused_and_interrupts_nothing() -> None:
    agent = Recorder()
    agent.delay = 0.2
    refused: list[str] = []

    async def bad_stop() -> None:
        await anyio.sleep(0.05)
        try:
            agent.interrupt("stop")  # type: ignore[arg-type]
        except TypeError as exc:
            refused.append(str(exc))

    async with anyio.create_task_group() as tg:
        tg.start_soon(bad_stop)
        reply = await agent(user("whole"))
    assert refused and "Recorder.interrupt: msg must be a Msg" in refused[0]
    assert reply.get_text_content() == "whole"  # the reply ran to its end
    assert agent.interrupt_args == []
