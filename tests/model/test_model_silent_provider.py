"""A provider that accepts the request and never answers, on every provider's client.

A hung provider must not hang the agent: an interrupt ends the reply at once with the
interrupt reply (memory consistent), an enclosing timeout propagates as a timeout, and the
agent then works normally against a server that answers.
"""

from __future__ import annotations

import anyio
import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.message import Msg

from ._providers import NO_RETRY, PROVIDERS, Provider
from ._wire_servers import Reply, WireServer

BOUND_S = 20  # only turns a hang into a failure


SILENT = Reply(delay=3600.0)
"""An answer that never comes: the server reads the request and waits until it stops."""


@pytest.fixture
def silent(wire: WireServer) -> WireServer:
    """The scripted server, silent for each of the few calls a test makes."""
    return wire.add(*[SILENT] * 4)


def _agent(provider: Provider, url: str) -> ReActAgent:
    agent = ReActAgent(
        name="Friday",
        sys_prompt="",
        model=provider.model(url, NO_RETRY),
        formatter=provider.formatter(),
    )
    agent.set_console_output_enabled(False)
    return agent


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("name", PROVIDERS)
async def test_an_interrupt_ends_a_reply_waiting_on_a_silent_provider(
    name: str, stream: bool, silent: WireServer
) -> None:
    agent = _agent(Provider(name, stream), silent.url)

    async def interrupt_once_sent() -> None:
        await anyio.to_thread.run_sync(silent.requested.wait)
        await anyio.sleep(0.05)
        agent.interrupt()

    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(interrupt_once_sent)
            reply = await agent(Msg("user", "hello?", "user"))
    assert reply.metadata == {"_is_interrupted": True}
    assert [m.role for m in await agent.memory.get_memory()] == ["user", "assistant"]
    await agent.model.aclose()


@pytest.mark.parametrize("name", PROVIDERS)
async def test_an_outer_timeout_on_a_silent_provider_stays_a_timeout(
    name: str, silent: WireServer
) -> None:
    agent = _agent(Provider(name, False), silent.url)
    with pytest.raises(TimeoutError), anyio.fail_after(0.5):
        await agent(Msg("user", "hello?", "user"))
    # Nothing half-finished was recorded, and the agent takes the next call.
    assert [m.role for m in await agent.memory.get_memory()] == ["user"]
    with pytest.raises(TimeoutError), anyio.fail_after(0.5):
        await agent(Msg("user", "still there?", "user"))
    await agent.model.aclose()
